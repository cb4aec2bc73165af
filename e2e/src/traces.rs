//! Real members' traces: every `trace.jsonl` under `~/.murmur/records/` in a
//! scenario's container, read from outside, and the checks the spec's table of
//! endings asks of them.

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::container::Sandbox;

/// One session's trace.
#[derive(Debug, Clone)]
pub struct Trace {
    pub path: String,
    pub records: Vec<Value>,
}

impl Trace {
    pub fn first(&self, kind: &str) -> Option<&Value> {
        self.records.iter().find(|r| r["type"] == kind)
    }

    pub fn has(&self, kind: &str) -> bool {
        self.first(kind).is_some()
    }

    /// The member's roster name (`session_start.formation_member`); `None` for a
    /// session outside any formation.
    pub fn member(&self) -> Option<&str> {
        self.first("session_start")?["formation_member"].as_str()
    }

    pub fn capsule(&self) -> Option<&str> {
        self.first("session_start")?["capsule"]["name"].as_str()
    }

    pub fn pid(&self) -> Option<u32> {
        self.first("session_start")?["pid"]
            .as_u64()
            .map(|p| p as u32)
    }

    pub fn records_dir(&self) -> Option<&str> {
        self.first("session_start")?["records_dir"].as_str()
    }

    pub fn working(&self) -> bool {
        self.records
            .iter()
            .any(|r| r["type"] == "task_state" && r["to"] == "working")
    }

    /// Checks the session's ending against one row of the spec's table:
    /// `formation_ended` written (or not), then `session_end` with `status`, `code`
    /// and `error_code`.
    pub fn expect_end(
        &self,
        formation_ended: bool,
        status: &str,
        code: i64,
        error_code: Option<&str>,
    ) -> Result<()> {
        let who = self.member().unwrap_or("?");
        ensure!(
            self.has("formation_ended") == formation_ended,
            "{who}: formation_ended {} written: {}",
            if formation_ended { "not" } else { "was" },
            self.summary()
        );
        let end = self
            .records
            .last()
            .filter(|r| r["type"] == "session_end")
            .with_context(|| {
                format!(
                    "{who}: the trace does not end in session_end: {}",
                    self.summary()
                )
            })?;
        ensure!(
            end["exit_status"] == status && end["exit_code"] == code,
            "{who}: session_end {end}, not {status}/{code}"
        );
        ensure!(
            end["error_code"].as_str() == error_code,
            "{who}: session_end error_code {}, not {error_code:?}",
            end["error_code"]
        );
        Ok(())
    }

    /// A session killed outright writes no `session_end`.
    pub fn expect_killed(&self) -> Result<()> {
        ensure!(
            !self.has("session_end"),
            "{}: killed, yet it wrote session_end: {}",
            self.member().unwrap_or("?"),
            self.summary()
        );
        Ok(())
    }

    /// `session_end`'s time, in milliseconds of its day (same-day comparisons only).
    pub fn end_ms(&self) -> Option<(String, u64)> {
        let ts = self.first("session_end")?["ts"].as_str()?;
        parse_ts(ts)
    }

    pub fn summary(&self) -> String {
        self.records
            .iter()
            .map(|r| r["type"].as_str().unwrap_or("?").to_string())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `2026-12-02T14:40:55.030Z` → ("2026-12-02", milliseconds of that day).
pub fn parse_ts(ts: &str) -> Option<(String, u64)> {
    let (date, time) = ts.trim_end_matches('Z').split_once('T')?;
    let mut parts = time.split(':');
    let h: u64 = parts.next()?.parse().ok()?;
    let m: u64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some((
        date.to_string(),
        (h * 3600 + m * 60) * 1000 + (s * 1000.0).round() as u64,
    ))
}

pub async fn traces(sb: &Sandbox) -> Result<Vec<Trace>> {
    let out = sb
        .probe_sh("find /root/.murmur/records -name trace.jsonl 2>/dev/null | while read -r f; do echo \"@@ $f\"; cat \"$f\"; echo; done")
        .await?
        .ok()?;
    let mut traces: Vec<Trace> = Vec::new();
    for line in out.stdout.lines() {
        if let Some(path) = line.strip_prefix("@@ ") {
            traces.push(Trace {
                path: path.to_string(),
                records: Vec::new(),
            });
        } else if !line.trim().is_empty()
            && let Some(t) = traces.last_mut()
        {
            // A line still being written may be cut short: skip it.
            if let Ok(v) = serde_json::from_str(line) {
                t.records.push(v);
            }
        }
    }
    Ok(traces)
}

/// The trace of the formation member `name` (the newest, if there are several).
pub fn of<'a>(traces: &'a [Trace], name: &str) -> Result<&'a Trace> {
    match traces.iter().rev().find(|t| t.member() == Some(name)) {
        Some(t) => Ok(t),
        None => bail!(
            "no trace for member {name}; traces: {:?}",
            traces.iter().map(|t| &t.path).collect::<Vec<_>>()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_trace_times() {
        assert_eq!(
            parse_ts("2026-12-02T14:40:55.030Z"),
            Some((
                "2026-12-02".into(),
                ((14 * 3600 + 40 * 60 + 55) * 1000 + 30)
            ))
        );
        assert_eq!(parse_ts("nonsense"), None);
    }
}
