//! Errors as data: every failure a user can cause is a `Diagnostic` carrying a
//! catalogue code, a message, where it happened (file, line, column) and a hint.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::catalogue::{self, Code};

/// Where in a file a fault sits. Lines and columns count from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl Location {
    pub fn new(file: impl Into<PathBuf>, line: usize, column: usize) -> Self {
        Location {
            file: file.into(),
            line,
            column,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// A refusal or warning that names its catalogue code. Boxed so `Result`s stay small;
/// read its fields through `Deref`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic(Box<Details>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Details {
    pub code: Code,
    pub message: String,
    /// The file the fault is in, when there is one; `location` then names the line too.
    pub file: Option<PathBuf>,
    pub location: Option<Location>,
    /// Overrides the catalogue's hint when the fault calls for a more precise one.
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Diagnostic(Box::new(Details {
            code,
            message: message.into(),
            file: None,
            location: None,
            hint: None,
        }))
    }

    pub fn at(mut self, location: Location) -> Self {
        self.0.file = Some(location.file.clone());
        self.0.location = Some(location);
        self
    }

    pub fn in_file(mut self, file: impl AsRef<Path>) -> Self {
        self.0.file = Some(file.as_ref().to_path_buf());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.0.hint = Some(hint.into());
        self
    }

    /// The hint to show: the diagnostic's own, else the catalogue's.
    pub fn hint_text(&self) -> &str {
        match &self.hint {
            Some(h) => h,
            None => catalogue::lookup(self.code.as_str())
                .map(|e| e.hint)
                .unwrap_or(""),
        }
    }

    pub fn is_warning(&self) -> bool {
        self.code.is_warning()
    }

    /// A machine-readable form, for `--json` outputs.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "code": self.code.as_str(),
            "message": self.message,
            "file": self.file.as_ref().map(|f| f.display().to_string()),
            "line": self.location.as_ref().map(|l| l.line),
            "column": self.location.as_ref().map(|l| l.column),
            "hint": self.hint_text(),
        })
    }
}

impl std::ops::Deref for Diagnostic {
    type Target = Details;
    fn deref(&self) -> &Details {
        &self.0
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_warning() {
            "warning"
        } else {
            "error"
        };
        write!(f, "{kind}[{}]: {}", self.code, self.message)?;
        match (&self.location, &self.file) {
            (Some(loc), _) => {
                write!(f, "\n  --> {loc}")?;
                if let Some(snippet) = snippet(loc) {
                    write!(f, "{snippet}")?;
                }
            }
            (None, Some(file)) => write!(f, "\n  --> {}", file.display())?,
            _ => {}
        }
        let hint = self.hint_text();
        if !hint.is_empty() {
            write!(f, "\n  = hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

/// The longest source line a diagnostic quotes; a longer one is cut.
const SNIPPET_MAX: usize = 160;

/// The line `loc` names, with a caret under its column, as rustc shows it:
///
/// ```text
///    |
///  7 |     to: [helpr]
///    |          ^
/// ```
///
/// `None` when the file cannot be read or has no such line. No colour is ever used,
/// so NO_COLOR has nothing to turn off.
fn snippet(loc: &Location) -> Option<String> {
    let text = std::fs::read_to_string(&loc.file).ok()?;
    let line = text.lines().nth(loc.line.checked_sub(1)?)?;
    let shown: String = line
        .chars()
        .take(SNIPPET_MAX)
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    let number = loc.line.to_string();
    let gutter = " ".repeat(number.len());
    let column = loc.column.saturating_sub(1).min(shown.chars().count());
    Some(format!(
        "\n {gutter} |\n {number} | {shown}\n {gutter} | {}^",
        " ".repeat(column)
    ))
}

/// The candidate closest to `wrong` when one is close enough to be its likely slip (a
/// letter dropped, added, changed or two swapped; another case): what every "did you
/// mean" hint offers. Close enough: at most one edit per three characters of `wrong`
/// (at least one), by Damerau-Levenshtein distance ignoring case. The nearest wins; of
/// equals, the first. `None` when none is that close, or `wrong` is itself a candidate.
pub(crate) fn closest<'a>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = wrong.to_lowercase();
    let bound = (wrong.chars().count() / 3).max(1);
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == wrong {
            return None;
        }
        let distance = strsim::damerau_levenshtein(&lower, &candidate.to_lowercase());
        if distance <= bound && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, c)| c)
}

pub type Result<T, E = Diagnostic> = std::result::Result<T, E>;

#[cfg(test)]
mod snippet_tests {
    use super::*;

    #[test]
    fn closest_offers_the_likely_slip_and_nothing_far() {
        let names = ["local/reviewer", "local/writer", "local/team-lead"];
        assert_eq!(closest("local/reviewr", names), Some("local/reviewer"));
        assert_eq!(closest("local/wrtier", names), Some("local/writer"));
        assert_eq!(closest("Local/Writer", names), Some("local/writer"));
        assert_eq!(closest("local/nothing", names), None);
        assert_eq!(closest("local/writer", names), None, "itself is no slip");
        assert_eq!(closest("ab", ["xy"]), None);
        assert_eq!(closest("ab", ["ac"]), Some("ac"));
        assert_eq!(
            closest("helpr", ["helper", "help"]),
            Some("helper"),
            "the first of equals"
        );
        assert_eq!(closest("x", std::iter::empty()), None);
    }

    #[test]
    fn the_source_line_is_quoted_with_a_caret_under_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("roster.yaml");
        std::fs::write(&file, "a: 1\nreachability:\n  - to: [helpr]\n").unwrap();
        let d = Diagnostic::new(catalogue::E_ROS_004, "no member `helpr`")
            .at(Location::new(&file, 3, 10));
        let text = d.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], "   |");
        assert_eq!(lines[3], " 3 |   - to: [helpr]");
        assert_eq!(lines[4], "   |          ^");
        // A line the file does not have: no snippet.
        let gone = Diagnostic::new(catalogue::E_ROS_004, "x").at(Location::new(&file, 9, 1));
        assert_eq!(gone.to_string().lines().count(), 3, "{gone}");
    }
}
