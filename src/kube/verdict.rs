//! The termination message: a Kubernetes container's last word, read by the kubelet
//! from `/dev/termination-log` (at most 4 KB). The launcher writes its verdict there:
//! the formation id, each member's outcome, what its exit code means.
//!
//! The file is the kubelet's, outside every capsule's reach in a pod; it is still opened
//! with O_NOFOLLOW and never created, and written only when it is a regular file, so
//! a symlink or a FIFO planted there changes nothing and blocks nothing.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use crate::exit;

/// Where the kubelet reads the message (the Job's `terminationMessagePath`).
pub const TERMINATION_LOG: &str = "/dev/termination-log";
/// Kubernetes' bound on one container's message.
pub const LIMIT: usize = 4096;

/// One member's end, as the launcher saw it.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub member: String,
    pub entry: bool,
    /// `None`: the launcher never saw it end (it never started, or was not waited for).
    pub status: Option<std::process::ExitStatus>,
}

/// What `code` means under the contract (docs/run.md); `signalled`: the launcher ended
/// the formation on a signal, which tells the two rows of 0 apart.
pub fn meaning(code: i32, signalled: bool) -> String {
    let rows: Vec<&str> = exit::CONTRACT
        .iter()
        .filter(|r| r.code == exit::Code::Is(code))
        .map(|r| r.why)
        .collect();
    if code == exit::SUCCESS && rows.len() == 2 {
        return rows[usize::from(signalled)].to_string();
    }
    if !rows.is_empty() {
        return rows.join("; or: ");
    }
    match code
        .checked_sub(128)
        .and_then(|n| nix::sys::signal::Signal::try_from(n).ok())
    {
        Some(sig) => format!("ended by {sig} (128 + {})", sig as i32),
        None => "no meaning in the contract".to_string(),
    }
}

fn status_text(status: Option<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        None => "not started or not seen to end".into(),
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(sig)) => match nix::sys::signal::Signal::try_from(sig) {
                Ok(name) => format!("killed by {name}"),
                Err(_) => format!("killed by signal {sig}"),
            },
            _ => "ended".into(),
        },
    }
}

/// The verdict's text, cut to [`LIMIT`] bytes on a character boundary.
pub fn text(formation: &str, outcomes: &[Outcome], code: i32, signalled: bool) -> String {
    let mut out = format!(
        "mur: formation {formation} ended with exit code {code}: {}\n",
        meaning(code, signalled)
    );
    for o in outcomes {
        out.push_str(&format!(
            "member {}{}: {}\n",
            o.member,
            if o.entry { " (entry)" } else { "" },
            status_text(o.status)
        ));
    }
    out.push_str("traces: ~/.murmur/records/ (docs/kubernetes.md)\n");
    if out.len() > LIMIT {
        let mut end = LIMIT;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    out
}

/// The file the verdict goes to: `/dev/termination-log`, or the test setting's.
fn path() -> PathBuf {
    crate::testing::termination_log().unwrap_or_else(|| PathBuf::from(TERMINATION_LOG))
}

/// Writes the verdict when the file exists, is a regular file and is writable;
/// otherwise nothing (not in a pod). Returns whether it wrote.
pub fn write(formation: &str, outcomes: &[Outcome], code: i32, signalled: bool) -> bool {
    write_to(&path(), &text(formation, outcomes, code, signalled))
}

fn write_to(path: &Path, text: &str) -> bool {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(false)
        // Never created, never through a symlink, never blocking on a FIFO.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let Ok(mut file) = file else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.file_type().is_file()) {
        return false;
    }
    file.set_len(0).is_ok() && file.write_all(text.as_bytes()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn outcomes() -> Vec<Outcome> {
        vec![
            Outcome {
                member: "lead".into(),
                entry: true,
                status: Some(std::process::ExitStatus::from_raw(0)),
            },
            Outcome {
                member: "helper".into(),
                entry: false,
                status: Some(std::process::ExitStatus::from_raw(9)),
            },
        ]
    }

    #[test]
    fn the_verdict_names_the_formation_each_member_and_the_code_s_meaning() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("termination-log");
        std::fs::write(&log, "old text that is longer than nothing").unwrap();
        assert!(write_to(&log, &text("frm_1", &outcomes(), 143, true)));
        let got = std::fs::read_to_string(&log).unwrap();
        assert!(
            got.starts_with("mur: formation frm_1 ended with exit code 143: ended by SIGTERM"),
            "{got}"
        );
        assert!(got.contains("member lead (entry): exit 0\n"), "{got}");
        assert!(got.contains("member helper: killed by SIGKILL\n"), "{got}");
        assert!(meaning(2, false).contains("command line"));
        assert!(
            meaning(0, false).contains("task completed"),
            "{}",
            meaning(0, false)
        );
        assert!(
            meaning(0, true).contains("wound down"),
            "{}",
            meaning(0, true)
        );
    }

    #[test]
    fn the_verdict_stays_within_4_kb() {
        let many: Vec<Outcome> = (0..500)
            .map(|i| Outcome {
                member: format!("mémbre-{i}"),
                entry: false,
                status: None,
            })
            .collect();
        let t = text("frm_1", &many, 1, false);
        assert!(t.len() <= LIMIT && t.len() > LIMIT - 64, "{}", t.len());
    }

    #[test]
    fn a_missing_file_a_symlink_or_a_fifo_is_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("absent");
        assert!(!write_to(&absent, "x"));
        assert!(!absent.exists(), "never created");
        let target = dir.path().join("target");
        std::fs::write(&target, "kept").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(!write_to(&link, "x"));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        // No reader: a blocking open would hang here; O_NONBLOCK fails with ENXIO.
        assert!(!write_to(&fifo, "x"));
    }
}
