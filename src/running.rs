//! `~/.murmur/running/`: one record per live session, so `mur ps`, `mur stop` and
//! `mur trace show` find sessions. `<ses_id>.json` says where the session is;
//! `<ses_id>.token` (mode 0600) holds its operator token. A record whose process is
//! gone, or whose pid now names another process, is not listed.

use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::catalogue;
use crate::diag::{Diagnostic, Result};
use crate::fsutil::{self, Durability};
use crate::paths;

/// One live session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningRecord {
    pub session_id: String,
    pub pid: u32,
    /// When the process started, as /proc/<pid>/stat's 22nd field gives it (clock
    /// ticks after boot). Tells a live session from a later process that got its pid.
    /// `None` where it could not be read: the pid alone is then checked.
    pub start_time: Option<u64>,
    /// When the session started (RFC 3339 UTC).
    pub started_at: String,
    /// `<scope>/<name>` or the bare name, and its version.
    pub capsule: String,
    pub version: String,
    /// The door's URL, once it serves.
    pub door_url: Option<String>,
    pub workdir: PathBuf,
    pub records_dir: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formation_member: Option<crate::ids::MemberName>,
    /// The formation's entry member (`mur send <frm_id>` gives it the task).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub formation_entry: bool,
    /// A launched member's launcher (its parent, which holds its lifeline), so that
    /// `mur stop <frm_id>` finds the launcher of a formation with no formation.json.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<Process>,
}

/// A process, told from a later one that got its pid by its start time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    pub pid: u32,
    /// /proc/<pid>/stat's 22nd field; `None` where it could not be read.
    pub start_time: Option<u64>,
}

impl Process {
    /// This process's parent, when it is not init (a member whose launcher died is
    /// re-parented; nothing then is its launcher).
    pub fn parent() -> Option<Process> {
        let pid = u32::try_from(nix::unistd::getppid().as_raw()).ok()?;
        (pid > 1).then(|| Process {
            pid,
            start_time: crate::proc::start_time(pid),
        })
    }

    /// Whether it still runs: the same pid with the same start time.
    pub fn is_alive(&self) -> bool {
        alive(self.pid, self.start_time)
    }
}

fn alive(pid: u32, recorded: Option<u64>) -> bool {
    match (recorded, crate::proc::start_time(pid)) {
        (_, None) => false,
        (Some(recorded), Some(now)) => recorded == now,
        (None, Some(_)) => true,
    }
}

impl RunningRecord {
    /// Whether the process this record names is still the one that wrote it.
    pub fn is_alive(&self) -> bool {
        alive(self.pid, self.start_time)
    }
}

/// A new operator token: 32 random bytes in lowercase hex.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::fill(&mut bytes);
    hex::encode(bytes)
}

/// A running directory: `~/.murmur/running/` unless a test names another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningDir {
    pub dir: PathBuf,
}

impl Default for RunningDir {
    fn default() -> Self {
        RunningDir {
            dir: paths::running_dir(),
        }
    }
}

impl RunningDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RunningDir { dir: dir.into() }
    }

    fn json_path(&self, session_id: &str) -> PathBuf {
        self.dir.join(format!("{session_id}.json"))
    }

    fn token_path(&self, session_id: &str) -> PathBuf {
        self.dir.join(format!("{session_id}.token"))
    }

    /// Records a live session and its operator token. The token goes first, so a
    /// listed session always has one. Both files are 0600, written atomically; the
    /// folder is made 0700.
    pub fn register(&self, record: &RunningRecord, token: &str) -> Result<()> {
        check_id(&record.session_id)?;
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| fail("create", &self.dir, &e))?;
        let token_path = self.token_path(&record.session_id);
        fsutil::write_atomic(
            &token_path,
            format!("{token}\n").as_bytes(),
            0o600,
            Durability::Unsynced,
        )
        .map_err(|e| fsutil::write_failed(catalogue::E_REC_004, &token_path, &e))?;
        if let Err(e) = self.update(record) {
            let _ = std::fs::remove_file(self.token_path(&record.session_id));
            return Err(e);
        }
        Ok(())
    }

    /// Rewrites a registered session's record (its door URL became known).
    pub fn update(&self, record: &RunningRecord) -> Result<()> {
        check_id(&record.session_id)?;
        let json = serde_json::to_vec_pretty(record).map_err(|e| {
            Diagnostic::new(
                catalogue::E_REC_004,
                format!("record does not serialize: {e}"),
            )
        })?;
        let path = self.json_path(&record.session_id);
        fsutil::write_atomic(&path, &json, 0o600, Durability::Unsynced)
            .map_err(|e| fsutil::write_failed(catalogue::E_REC_004, &path, &e))
    }

    /// The live sessions, oldest first (session ids sort by time). Records of gone
    /// processes and files that are not records are skipped; a missing folder is no
    /// session.
    pub fn list(&self) -> Result<Vec<RunningRecord>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(fail("read", &self.dir, &e)),
        };
        let mut live = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let Ok(text) = std::fs::read(&path) else {
                continue;
            };
            match serde_json::from_slice::<RunningRecord>(&text) {
                Ok(r) if r.is_alive() => live.push(r),
                Ok(_) => {}
                Err(e) => tracing::warn!("skipping {}: {e}", path.display()),
            }
        }
        live.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        Ok(live)
    }

    /// The formation ids that a live session's record names: what the retention pass
    /// must not remove. An unreadable folder is an error (every formation then counts
    /// as running); a missing one is no formation.
    pub fn live_formations(&self) -> std::io::Result<std::collections::HashSet<String>> {
        if let Err(e) = std::fs::read_dir(&self.dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(e);
        }
        let live = self
            .list()
            .map_err(|d| std::io::Error::other(d.message.clone()))?;
        Ok(live.into_iter().filter_map(|r| r.formation_id).collect())
    }

    /// A live session by id.
    pub fn get(&self, session_id: &str) -> Result<Option<RunningRecord>> {
        Ok(self
            .list()?
            .into_iter()
            .find(|r| r.session_id == session_id))
    }

    /// A session's operator token.
    pub fn token(&self, session_id: &str) -> Result<String> {
        check_id(session_id)?;
        let path = self.token_path(session_id);
        std::fs::read_to_string(&path)
            .map(|t| t.trim().to_string())
            .map_err(|e| fail("read", &path, &e))
    }

    /// Forgets a session (at its exit): its record, then its token. Already gone is fine.
    pub fn remove(&self, session_id: &str) -> Result<()> {
        check_id(session_id)?;
        for path in [self.json_path(session_id), self.token_path(session_id)] {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(fail("remove", &path, &e)),
            }
        }
        Ok(())
    }
}

/// A session id names files in the folder: it may not name a path.
fn check_id(session_id: &str) -> Result<()> {
    let ok = !session_id.is_empty()
        && session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(Diagnostic::new(
            catalogue::E_REC_004,
            format!("`{session_id}` is not a session id"),
        ))
    }
}

fn fail(what: &str, path: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic::new(
        catalogue::E_REC_004,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn record(id: &str, pid: u32) -> RunningRecord {
        RunningRecord {
            session_id: id.into(),
            pid,
            start_time: crate::proc::start_time(pid),
            started_at: crate::a2a::time::now(),
            capsule: "local/coder".into(),
            version: "1.2.0".into(),
            door_url: Some("http://127.0.0.1:4000".into()),
            workdir: "/w".into(),
            records_dir: "/r".into(),
            formation_id: Some("frm_1".into()),
            formation_member: Some("coder".parse().unwrap()),
            formation_entry: false,
            launcher: None,
        }
    }

    #[test]
    fn tokens_are_32_random_bytes_in_hex() {
        let a = new_token();
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, new_token());
    }

    #[test]
    fn register_list_token_remove() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunningDir::new(root.path().join("running"));
        assert!(dir.list().unwrap().is_empty());
        let r = record("ses_1", std::process::id());
        let token = new_token();
        dir.register(&r, &token).unwrap();
        assert_eq!(dir.list().unwrap(), vec![r.clone()]);
        assert_eq!(dir.token("ses_1").unwrap(), token);
        let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir.dir.clone()), 0o700);
        assert_eq!(mode(dir.dir.join("ses_1.token")), 0o600);
        assert_eq!(mode(dir.dir.join("ses_1.json")), 0o600);
        // The record never carries the token.
        let json = std::fs::read_to_string(dir.dir.join("ses_1.json")).unwrap();
        assert!(!json.contains(&token));
        let mut moved = r.clone();
        moved.door_url = Some("http://127.0.0.1:5000".into());
        dir.update(&moved).unwrap();
        assert_eq!(dir.get("ses_1").unwrap(), Some(moved));
        dir.remove("ses_1").unwrap();
        dir.remove("ses_1").unwrap();
        assert!(dir.list().unwrap().is_empty());
        assert_eq!(std::fs::read_dir(&dir.dir).unwrap().count(), 0);
    }

    #[test]
    fn gone_processes_and_reused_pids_are_not_listed() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunningDir::new(root.path());
        // A process that has exited and been reaped.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        dir.register(&record("ses_gone", gone), "t").unwrap();
        // This pid, but a start time it never had: the pid was reused.
        let mut reused = record("ses_reused", std::process::id());
        reused.start_time = reused.start_time.map(|t| t + 1);
        dir.register(&reused, "t").unwrap();
        let live = record("ses_live", std::process::id());
        dir.register(&live, "t").unwrap();
        std::fs::write(root.path().join("junk.json"), "{").unwrap();
        assert_eq!(dir.list().unwrap(), vec![live]);
    }

    #[test]
    fn live_formations_are_those_of_live_records() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunningDir::new(root.path().join("running"));
        assert!(dir.live_formations().unwrap().is_empty());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let mut dead = record("ses_dead", gone);
        dead.formation_id = Some("frm_dead".into());
        dir.register(&dead, "t").unwrap();
        dir.register(&record("ses_live", std::process::id()), "t")
            .unwrap();
        let mut alone = record("ses_alone", std::process::id());
        alone.formation_id = None;
        dir.register(&alone, "t").unwrap();
        let live = dir.live_formations().unwrap();
        assert_eq!(live, ["frm_1".to_string()].into_iter().collect());
    }

    #[test]
    fn ids_that_name_paths_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunningDir::new(root.path());
        for id in ["", "../x", "a/b"] {
            assert_eq!(dir.token(id).unwrap_err().code, catalogue::E_REC_004);
            let refused = dir.register(&record(id, 1), "t").unwrap_err();
            assert_eq!(refused.code, catalogue::E_REC_004, "{id:?}");
        }
        // Refused before anything is written.
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
}
