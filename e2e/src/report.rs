//! What a scenario measured, and the table `just e2e` ends with.

use std::fmt::Write;

/// What a passing scenario measured.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Seconds from the fault (or the formation's end) until no process was left.
    pub teardown: Option<f64>,
    /// One line of what it proved.
    pub note: String,
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Row {
    pub scenario: String,
    pub members: &'static str,
    pub result: Result<Measured, String>,
    /// Wall time the scenario took, container start to removal.
    pub took: f64,
}

impl Row {
    pub fn passed(&self) -> bool {
        self.result.is_ok()
    }
}

pub fn table(rows: &[Row], total: f64) -> String {
    let mut out = String::new();
    let width = rows
        .iter()
        .map(|r| r.scenario.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let _ = writeln!(
        out,
        "\n{:<width$}  {:<8}  {:<6}  {:>10}  {:>7}  note",
        "scenario", "members", "result", "teardown", "took"
    );
    for r in rows {
        let (result, teardown, note) = match &r.result {
            Ok(m) => (
                "pass",
                m.teardown.map_or("-".to_string(), |t| format!("{t:.2} s")),
                m.note.clone(),
            ),
            Err(e) => ("FAIL", "-".to_string(), e.replace('\n', " | ")),
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:<8}  {:<6}  {:>10}  {:>5.0} s  {}",
            r.scenario, r.members, result, teardown, r.took, note
        );
    }
    let failed = rows.iter().filter(|r| !r.passed()).count();
    let _ = writeln!(
        out,
        "\n{} scenarios, {} passed, {} failed; e2e suite took {:.0} s",
        rows.len(),
        rows.len() - failed,
        failed,
        total
    );
    out
}
