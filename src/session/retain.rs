//! `trace.retain` for the project's sessions (docs/manifest.md): at the end of each
//! session, the records directories of earlier sessions of the same work folder
//! (`~/.murmur/records/<project>/`) beyond `max_sessions` (newest first, the current one
//! counted), or older than `max_age`, are removed. Never the current session, a session
//! started after it, or one still running.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::manifest::Retain;
use crate::trace;

/// One removed session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub session_id: String,
    /// `max_sessions` or `max_age` (`max_age` when both bound it).
    pub reason: &'static str,
}

impl Removed {
    /// The stderr line that reports it.
    pub fn line(&self) -> String {
        format!(
            "[mur run] retention: removed session {} ({})",
            self.session_id, self.reason
        )
    }
}

/// The time in a `ses_` id (UUIDv7 hex): its first 48 bits are Unix milliseconds.
pub fn started_at(session_id: &str) -> Option<SystemTime> {
    let hex = session_id.strip_prefix("ses_")?;
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let ms = u64::from_str_radix(&hex[..12], 16).ok()?;
    Some(UNIX_EPOCH + Duration::from_millis(ms))
}

/// Applies `retain` to the sessions beside `current_dir` (the current session's
/// records directory). `live` names sessions still running. Returns what it removed,
/// newest first.
pub fn prune(
    current_dir: &Path,
    retain: &Retain,
    live: &[String],
    now: SystemTime,
) -> Vec<Removed> {
    if retain.max_sessions.is_none() && retain.max_age.is_none() {
        return Vec::new();
    }
    let (Some(parent), Some(current)) = (
        current_dir.parent(),
        current_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned()),
    ) else {
        return Vec::new();
    };
    let mut sessions: Vec<(String, PathBuf)> = std::fs::read_dir(parent)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let path = e.path();
                    let ours = name.starts_with("ses_")
                        && e.file_type().is_ok_and(|t| t.is_dir())
                        && path.join(trace::FILE_NAME).is_file();
                    ours.then_some((name, path))
                })
                .collect()
        })
        .unwrap_or_default();
    // Newest first: UUIDv7 ids sort by the time they were made.
    sessions.sort_by(|a, b| b.0.cmp(&a.0));
    let mut removed = Vec::new();
    for (rank, (id, path)) in sessions.iter().enumerate() {
        if *id >= current || live.contains(id) {
            continue;
        }
        let too_old = retain.max_age.is_some_and(|age| {
            started_at(id).is_some_and(|at| now.duration_since(at).is_ok_and(|d| d > age))
        });
        let too_many = retain.max_sessions.is_some_and(|max| rank >= max as usize);
        let reason = match (too_old, too_many) {
            (true, _) => "max_age",
            (false, true) => "max_sessions",
            (false, false) => continue,
        };
        if std::fs::remove_dir_all(path).is_ok() {
            removed.push(Removed {
                session_id: id.clone(),
                reason,
            });
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{CapsuleRef, Event, TraceWriter};

    fn session(root: &Path, capsule: &str) -> String {
        // UUIDv7 ids made in order are increasing.
        let id = crate::records::new_session_id();
        let dir = root.join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        let trace = TraceWriter::create(&dir.join(trace::FILE_NAME)).unwrap();
        trace
            .write(Event::SessionStart {
                session_id: id.clone(),
                capsule: CapsuleRef {
                    name: capsule.into(),
                    version: "1".into(),
                    sha256: None,
                },
                mur_version: "0".into(),
                pid: 1,
                workdir: "/w".into(),
                records_dir: dir.clone(),
                formation_id: None,
                formation_member: None,
                formation_callees: None,
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(2));
        id
    }

    #[test]
    fn keeps_the_newest_and_never_the_live_the_current_or_a_newer_one() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("ses_not_a_session")).unwrap();
        let oldest = session(root.path(), "local/a");
        let live = session(root.path(), "local/b");
        let older = session(root.path(), "local/a");
        let current = session(root.path(), "local/a");
        let newer = session(root.path(), "local/a");
        let retain = Retain {
            max_sessions: Some(2),
            max_age: None,
        };
        let removed = prune(
            &root.path().join(&current),
            &retain,
            std::slice::from_ref(&live),
            SystemTime::now(),
        );
        let ids: Vec<&str> = removed.iter().map(|r| r.session_id.as_str()).collect();
        assert_eq!(ids, [older.as_str(), oldest.as_str()]);
        assert!(removed.iter().all(|r| r.reason == "max_sessions"));
        for kept in [&live, &current, &newer] {
            assert!(root.path().join(kept).is_dir(), "{kept} was removed");
        }
        assert_eq!(
            removed[0].line(),
            format!("[mur run] retention: removed session {older} (max_sessions)")
        );
    }

    #[test]
    fn max_age_counts_from_the_time_in_the_id() {
        let root = tempfile::tempdir().unwrap();
        let old = session(root.path(), "local/a");
        let current = session(root.path(), "local/a");
        let retain = Retain {
            max_sessions: None,
            max_age: Some(Duration::from_secs(3600)),
        };
        let later = SystemTime::now() + Duration::from_secs(7200);
        let removed = prune(&root.path().join(&current), &retain, &[], later);
        assert_eq!(removed.len(), 1);
        assert_eq!(removed[0].session_id, old);
        assert_eq!(removed[0].reason, "max_age");
        let none = Retain::default();
        assert!(prune(&root.path().join(&current), &none, &[], later).is_empty());
    }
}
