//! `trace.retain` for the project's sessions (docs/manifest.md): at the end of each
//! session, the records directories of earlier sessions of the same work folder
//! (`~/.murmur/records/<project>/`) beyond `max_sessions` (newest first, the current one
//! counted), or older than `max_age`, are removed. Never the current session, a session
//! started after it, or one still running.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{Removal, Removed, Retain, set_aside, set_aside_before};
use crate::ids::SessionId;
use crate::trace;

/// Applies `policy` to the sessions beside `current_dir` (the current session's
/// records directory). `live` names sessions still running. Returns what it removed,
/// newest first.
pub fn pass(current_dir: &Path, policy: &Retain, live: &[String], now: SystemTime) -> Vec<Removal> {
    if policy.is_unbounded() {
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
    for (aside, _) in set_aside_before(parent) {
        let _ = std::fs::remove_dir_all(aside);
    }
    let mut sessions: Vec<(SessionId, PathBuf)> = std::fs::read_dir(parent)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let id: SessionId = e.file_name().to_str()?.parse().ok()?;
                    let path = e.path();
                    let ours = e.file_type().is_ok_and(|t| t.is_dir())
                        && path.join(trace::FILE_NAME).is_file();
                    ours.then_some((id, path))
                })
                .collect()
        })
        .unwrap_or_default();
    // Newest first: UUIDv7 ids sort by the time they were made.
    sessions.sort_by(|a, b| b.0.cmp(&a.0));
    let mut removed = Vec::new();
    for (rank, (id, path)) in sessions.iter().enumerate() {
        if id.as_str() >= current.as_str() || live.iter().any(|l| id == l.as_str()) {
            continue;
        }
        let Some(reason) = policy.reason(rank, id.minted_at(), now) else {
            continue;
        };
        // Once set aside the session is gone; a failed delete is finished next pass.
        if let Ok(aside) = set_aside(path) {
            let _ = std::fs::remove_dir_all(aside);
            removed.push(Removal {
                removed: Removed::Session(id.clone()),
                reason,
            });
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retention::Reason;
    use crate::trace::{CapsuleRef, Event, TraceWriter};
    use std::time::Duration;

    fn session(root: &Path, capsule: &str) -> String {
        // UUIDv7 ids made in order are increasing.
        let id = SessionId::mint().to_string();
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
                unconfined: None,
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
        let removed = pass(
            &root.path().join(&current),
            &retain,
            std::slice::from_ref(&live),
            SystemTime::now(),
        );
        let ids: Vec<Removed> = removed.iter().map(|r| r.removed.clone()).collect();
        let session = |id: &str| Removed::Session(id.parse().unwrap());
        assert_eq!(ids, [session(&older), session(&oldest)]);
        assert!(removed.iter().all(|r| r.reason == Reason::MaxSessions));
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
        let removed = pass(&root.path().join(&current), &retain, &[], later);
        assert_eq!(removed.len(), 1);
        assert_eq!(removed[0].removed, Removed::Session(old.parse().unwrap()));
        assert_eq!(removed[0].reason, Reason::MaxAge);
        let none = Retain::default();
        assert!(pass(&root.path().join(&current), &none, &[], later).is_empty());
    }

    #[test]
    fn a_session_a_killed_pass_set_aside_is_deleted_by_the_next() {
        let root = tempfile::tempdir().unwrap();
        let old = session(root.path(), "local/a");
        let current = session(root.path(), "local/a");
        // What a pass killed between its rename and its delete leaves.
        let aside = root.path().join(format!(".trash-{old}"));
        std::fs::rename(root.path().join(&old), &aside).unwrap();
        let retain = Retain {
            max_sessions: Some(5),
            max_age: None,
        };
        let removed = pass(&root.path().join(&current), &retain, &[], SystemTime::now());
        assert!(removed.is_empty(), "nothing was in bounds to remove");
        assert!(!aside.exists(), "the set-aside session is deleted");
        assert!(root.path().join(&current).is_dir());
    }
}
