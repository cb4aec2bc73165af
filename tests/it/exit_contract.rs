//! docs/run.md's exit-code contract is `mur::exit::CONTRACT`, row by row and cell by
//! cell: the table is parsed and compared. Set MUR_UPDATE_DOCS=1 to rewrite its rows.

use std::path::PathBuf;

use mur::exit::{CONTRACT, Row};

const HEADING: &str = "## The exit-code contract";

fn cells(row: &Row) -> Vec<String> {
    vec![
        row.why.to_string(),
        row.code.text(),
        row.printed.to_string(),
        row.action.text().to_string(),
    ]
}

/// The body rows of the first table after `HEADING`, split into trimmed cells.
fn parse(text: &str) -> (Vec<Vec<String>>, std::ops::Range<usize>) {
    let start = text
        .find(HEADING)
        .expect("docs/run.md has the contract's heading");
    let mut offset = start;
    let mut rows = Vec::new();
    let mut span: Option<std::ops::Range<usize>> = None;
    let mut seen_header = 0;
    for line in text[start..].split_inclusive('\n') {
        let at = offset;
        offset += line.len();
        if !line.starts_with('|') {
            if span.is_some() || seen_header == 2 {
                break;
            }
            continue;
        }
        if seen_header < 2 {
            seen_header += 1; // the header and its |---| line
            continue;
        }
        let inner = line
            .trim_end()
            .trim_start_matches('|')
            .trim_end_matches('|');
        rows.push(inner.split(" | ").map(|c| c.trim().to_string()).collect());
        span = Some(span.map_or(at..offset, |s| s.start..offset));
    }
    let span = span.unwrap_or(offset..offset);
    (rows, span)
}

#[test]
fn docs_run_md_holds_the_exit_code_contract() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/run.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let want: Vec<Vec<String>> = CONTRACT.iter().map(cells).collect();
    let (got, span) = parse(&text);
    if std::env::var_os(mur::env::MUR_UPDATE_DOCS).is_some() && got != want {
        let rows: String = want
            .iter()
            .map(|r| format!("| {} |\n", r.join(" | ")))
            .collect();
        let mut new = text.clone();
        new.replace_range(span, &rows);
        std::fs::write(&path, new).unwrap();
        return;
    }
    assert_eq!(
        got, want,
        "docs/run.md's exit-code contract differs from src/exit.rs: run `MUR_UPDATE_DOCS=1 cargo test --test it exit_contract`"
    );
}
