//! Columns for people (`mur ps`): each as wide as its widest cell, two spaces apart,
//! the whole line at most [`WIDTH`] characters. When the cells do not fit, the widest
//! column that may be cut loses a character at a time; a cut cell ends in `…`. Ids are
//! never cut (a cut id could not be pasted): their columns are marked `keep`.

/// The widest line a table prints: a 100-column terminal.
pub(crate) const WIDTH: usize = 100;

/// A column cut below this many characters says nothing.
const NARROWEST: usize = 6;

const GAP: &str = "  ";

/// A column's heading, and whether its cells may be cut to fit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Column {
    pub(crate) head: &'static str,
    pub(crate) keep: bool,
}

impl Column {
    /// A column whose cells may be cut.
    pub(crate) const fn cut(head: &'static str) -> Column {
        Column { head, keep: false }
    }
    /// A column whose cells are never cut (ids).
    pub(crate) const fn keep(head: &'static str) -> Column {
        Column { head, keep: true }
    }
}

/// The heading line and one line per row, each at most [`WIDTH`] characters unless
/// the kept columns alone are wider. No line ends in spaces.
pub(crate) fn lines(columns: &[Column], rows: &[Vec<String>]) -> Vec<String> {
    let len = |s: &str| s.chars().count();
    let mut widths: Vec<usize> = columns.iter().map(|c| len(c.head)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(len(cell));
        }
    }
    let total = |widths: &[usize]| widths.iter().sum::<usize>() + GAP.len() * (widths.len() - 1);
    while total(&widths) > WIDTH {
        let widest = (0..columns.len())
            .filter(|&i| !columns[i].keep && widths[i] > NARROWEST.max(len(columns[i].head)))
            .max_by_key(|&i| (widths[i], std::cmp::Reverse(i)));
        match widest {
            Some(i) => widths[i] -= 1,
            None => break,
        }
    }
    let head: Vec<String> = columns.iter().map(|c| c.head.to_string()).collect();
    std::iter::once(&head)
        .chain(rows)
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, &w)| format!("{:<w$}", fit(cell, w)))
                .collect();
            cells.join(GAP).trim_end().to_string()
        })
        .collect()
}

/// `cell` in at most `width` characters: cut, ending in `…`, when longer.
fn fit(cell: &str, width: usize) -> String {
    if cell.chars().count() <= width {
        return cell.to_string();
    }
    let mut cut: String = cell.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_their_widest_cell_and_lines_end_without_spaces() {
        let cols = [Column::keep("ID"), Column::cut("NAME"), Column::cut("X")];
        let rows = vec![
            vec!["a1".into(), "short".into(), "".into()],
            vec!["b22".into(), "longer one".into(), "x".into()],
        ];
        let out = lines(&cols, &rows);
        assert_eq!(out[0], "ID   NAME        X");
        assert_eq!(out[1], "a1   short");
        assert_eq!(out[2], "b22  longer one  x");
    }

    #[test]
    fn a_wide_table_is_cut_to_width_from_its_widest_cut_column_never_an_id() {
        let id = "ses_0199d5a0c1a07d2f".to_string();
        let long = "n".repeat(90);
        let cols = [
            Column::keep("SESSION"),
            Column::cut("CAPSULE"),
            Column::cut("MEMBER"),
        ];
        let rows = vec![vec![id.clone(), long.clone(), "helper".into()]];
        let out = lines(&cols, &rows);
        for line in &out {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
        assert!(out[1].starts_with(&format!("{id}  nnn")), "{}", out[1]);
        assert!(out[1].contains("…  helper"), "{}", out[1]);
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
    }
}
