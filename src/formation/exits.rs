//! A member that exits while its formation runs (docs/formation.md, "A member that
//! exits"): the launcher's stderr line, the formation's record of it
//! (`~/.murmur/formations/<frm_id>/exited.jsonl`, which `mur ps` reads), and the
//! `exited` channel line that makes every call to it fail at once. The formation goes
//! on: only the entry member's end, a signal or the deadline end it (the spec's "How a
//! formation ends").

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;

use serde::{Deserialize, Serialize};

use crate::ids::MemberName;

/// The record's file in the formation's directory: one JSON object per exited member.
pub const FILE_NAME: &str = "exited.jsonl";

/// One member's end while its formation ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitRecord {
    pub member: MemberName,
    pub session_id: String,
    pub capsule: String,
    pub version: String,
    pub pid: u32,
    /// When the launcher reaped it: RFC 3339 UTC, milliseconds.
    pub exited_at: String,
    /// As a shell reports it: the exit code, or 128 + the signal.
    pub status: i32,
    /// The signal that ended it (`SIGKILL`), if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

impl ExitRecord {
    /// `status 137 (SIGKILL)`, or `status 1` for an exit code.
    pub fn how(&self) -> String {
        match &self.signal {
            Some(signal) => format!("status {} ({signal})", self.status),
            None => format!("status {}", self.status),
        }
    }

    /// The launcher's stderr line, behind the member's prefix as its own lines are:
    /// `[helper] exited with status 137 (SIGKILL); the formation goes on without it`.
    pub fn line(&self) -> String {
        format!(
            "[{}] exited with {}; the formation goes on without it, and calls to it fail",
            self.member,
            self.how()
        )
    }

    /// The `exited` channel line for the members that may call it.
    pub fn channel_line(&self) -> crate::channel::Line {
        crate::channel::Line::Exited(crate::channel::Exited {
            member: self.member.clone(),
            at: self.exited_at.clone(),
            how: self.how(),
        })
    }
}

/// `(status, signal name)` as [`ExitRecord`] holds them; a status the kernel did not
/// give (none was read) is 1.
pub fn status_of(status: Option<ExitStatus>) -> (i32, Option<String>) {
    let Some(status) = status else {
        return (1, None);
    };
    if let Some(code) = status.code() {
        return (code, None);
    }
    match status.signal() {
        Some(sig) => (
            128 + sig,
            Some(
                nix::sys::signal::Signal::try_from(sig)
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_else(|_| format!("signal {sig}")),
            ),
        ),
        None => (1, None),
    }
}

/// Appends `record` to the formation directory's record, as one write (O_APPEND), so
/// a launcher killed meanwhile leaves whole lines.
pub fn append(formation_dir: &Path, record: &ExitRecord) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    line.push(b'\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(formation_dir.join(FILE_NAME))?
        .write_all(&line)
}

/// Every member a formation directory records as exited, in the order they exited;
/// lines that do not read are skipped, a missing file is none.
pub fn read(formation_dir: &Path) -> Vec<ExitRecord> {
    std::fs::read_to_string(formation_dir.join(FILE_NAME))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: Option<ExitStatus>) -> ExitRecord {
        let (status, signal) = status_of(status);
        ExitRecord {
            member: "helper".parse().unwrap(),
            session_id: "ses_1".into(),
            capsule: "local/helper".into(),
            version: "1.0.0".into(),
            pid: 42,
            exited_at: "2026-12-07T21:40:12.345Z".into(),
            status,
            signal,
        }
    }

    #[test]
    fn a_signal_is_128_plus_it_and_named_an_exit_code_is_itself() {
        let killed = record(Some(ExitStatus::from_raw(9)));
        assert_eq!(killed.status, 137);
        assert_eq!(
            killed.line(),
            "[helper] exited with status 137 (SIGKILL); the formation goes on without it, and calls to it fail"
        );
        let exited = record(Some(ExitStatus::from_raw(1 << 8)));
        assert_eq!((exited.status, exited.signal.as_deref()), (1, None));
        assert_eq!(exited.how(), "status 1");
        assert_eq!(record(None).how(), "status 1");
    }

    #[test]
    fn records_append_and_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).is_empty());
        let a = record(Some(ExitStatus::from_raw(9)));
        let mut b = record(Some(ExitStatus::from_raw(0)));
        b.member = "coder".parse().unwrap();
        append(dir.path(), &a).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE_NAME))
            .unwrap()
            .write_all(b"{torn\n")
            .unwrap();
        append(dir.path(), &b).unwrap();
        assert_eq!(read(dir.path()), vec![a, b]);
    }
}
