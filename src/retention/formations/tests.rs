use super::*;
use crate::retention::Reason;
use std::collections::HashSet;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

const HOUR: Duration = Duration::from_secs(3600);

struct World {
    _tmp: tempfile::TempDir,
    dirs: Dirs,
    project: PathBuf,
    other_project: PathBuf,
    dead_pid: u32,
    now: SystemTime,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let dirs = Dirs {
        formations: root.join("formations"),
        records: root.join("records"),
    };
    std::fs::create_dir_all(&dirs.formations).unwrap();
    let project = root.join("project");
    let other_project = root.join("other");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&other_project).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    World {
        _tmp: tmp,
        dirs,
        project,
        other_project,
        dead_pid,
        now,
    }
}

/// A `frm_` id minted `age` before `now`, with `n` to tell ids of one instant apart.
fn id_at(now: SystemTime, age: Duration, n: u64) -> String {
    let ms = (now - age).duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    format!("frm_{ms:012x}7{n:019x}")
}

impl World {
    fn id(&self, age: Duration, n: u64) -> String {
        id_at(self.now, age, n)
    }

    /// A formation directory with a marker for `project`, launcher `pid`, and one
    /// member's records.
    fn formation(&self, id: &str, project: &Path, pid: u32) -> String {
        let dir = self.dirs.formations.join(id);
        std::fs::create_dir_all(dir.join("coder")).unwrap();
        let marker = Marker {
            project_dir: project.to_path_buf(),
            launcher_pid: pid,
            launcher_start: "1".into(),
        };
        marker.write(&dir).unwrap();
        let records = self.dirs.records_of(id).join("coder/ses_1");
        std::fs::create_dir_all(&records).unwrap();
        std::fs::write(records.join("trace.jsonl"), "{}\n").unwrap();
        id.to_string()
    }

    fn ours(&self, age: Duration, n: u64) -> String {
        self.formation(&self.id(age, n), &self.project.clone(), self.dead_pid)
    }

    fn pass(&self, current: &str, policy: Retain, running: Running) -> Vec<Removal> {
        pass(
            &self.dirs,
            &self.project,
            current,
            &policy,
            &running,
            self.now,
        )
    }

    fn exists(&self, id: &str) -> bool {
        self.dirs.formations.join(id).exists()
    }
}

fn none_running() -> Running {
    Ok(HashSet::new())
}

fn removal(id: &str, reason: Reason) -> Removal {
    Removal {
        removed: Removed::Formation(id.parse().unwrap()),
        reason,
    }
}

#[test]
fn minted_at_reads_the_uuidv7_time() {
    let now = UNIX_EPOCH + Duration::from_millis(1_800_000_000_123);
    let id: FormationId = id_at(now, Duration::ZERO, 5).parse().unwrap();
    assert_eq!(id.minted_at(), now);
    assert!("frm_xyz".parse::<FormationId>().is_err());
    assert!(
        "ses_0199c4e2f1b7712a9d3e4f5061728394"
            .parse::<FormationId>()
            .is_err()
    );
}

#[test]
fn without_a_policy_nothing_is_removed() {
    let w = world();
    let old = w.ours(100 * HOUR, 1);
    let current = w.ours(Duration::ZERO, 2);
    assert!(
        w.pass(&current, Retain::default(), none_running())
            .is_empty()
    );
    assert!(w.exists(&old));
}

#[test]
fn max_sessions_keeps_the_newest_including_the_current_one() {
    let w = world();
    let a = w.ours(4 * HOUR, 1);
    let b = w.ours(3 * HOUR, 2);
    let c = w.ours(2 * HOUR, 3);
    let current = w.ours(Duration::ZERO, 4);
    let policy = Retain {
        max_sessions: Some(2),
        max_age: None,
    };
    let removed = w.pass(&current, policy, none_running());
    assert_eq!(
        removed,
        vec![
            removal(&b, Reason::MaxSessions),
            removal(&a, Reason::MaxSessions),
        ],
        "newest first"
    );
    assert!(w.exists(&current) && w.exists(&c));
    assert!(!w.exists(&a) && !w.exists(&b));
    assert!(
        !w.dirs.records_of(&a).exists(),
        "members' records go with the directory"
    );
    assert!(w.dirs.records_of(&c).exists());
}

#[test]
fn max_age_and_both_limits_name_max_age() {
    let w = world();
    let old = w.ours(3 * HOUR, 1);
    let young = w.ours(HOUR / 2, 2);
    let current = w.ours(Duration::ZERO, 3);
    let policy = Retain {
        max_sessions: Some(2),
        max_age: Some(HOUR),
    };
    let removed = w.pass(&current, policy, none_running());
    assert_eq!(removed, vec![removal(&old, Reason::MaxAge)]);
    assert!(w.exists(&young) && w.exists(&current));
}

#[test]
fn never_removes_current_or_newer() {
    let w = world();
    let current = w.ours(2 * HOUR, 1);
    let newer = w.ours(HOUR, 2);
    let policy = Retain {
        max_sessions: Some(1),
        max_age: Some(Duration::from_secs(1)),
    };
    assert!(w.pass(&current, policy, none_running()).is_empty());
    assert!(w.exists(&current) && w.exists(&newer));
}

#[test]
fn never_removes_a_formation_whose_launcher_runs() {
    let w = world();
    let id = w.id(5 * HOUR, 1);
    let dir = w.dirs.formations.join(&id);
    std::fs::create_dir_all(&dir).unwrap();
    Marker::for_this_launcher(&w.project).write(&dir).unwrap();
    let current = w.ours(Duration::ZERO, 2);
    let policy = Retain {
        max_sessions: Some(1),
        max_age: None,
    };
    assert!(w.pass(&current, policy, none_running()).is_empty());
    assert!(w.exists(&id));
}

#[test]
fn never_removes_a_formation_a_running_record_names() {
    let w = world();
    let named = w.ours(5 * HOUR, 1);
    let current = w.ours(Duration::ZERO, 2);
    let policy = Retain {
        max_sessions: Some(1),
        max_age: None,
    };
    let running: Running = Ok(HashSet::from([named.clone()]));
    assert!(w.pass(&current, policy, running).is_empty());
    assert!(w.exists(&named));
}

#[test]
fn an_unreadable_running_dir_counts_every_formation_as_running() {
    let w = world();
    let old = w.ours(5 * HOUR, 1);
    let current = w.ours(Duration::ZERO, 2);
    let policy = Retain {
        max_sessions: Some(1),
        max_age: Some(HOUR),
    };
    let running: Running = Err(io::Error::other("unreadable"));
    assert!(w.pass(&current, policy, running).is_empty());
    assert!(w.exists(&old));
}

#[test]
fn never_removes_another_project_s_or_an_unmarked_formation() {
    let w = world();
    let other = w.formation(&w.id(5 * HOUR, 1), &w.other_project.clone(), w.dead_pid);
    let unmarked = w.id(5 * HOUR, 2);
    std::fs::create_dir_all(w.dirs.formations.join(&unmarked)).unwrap();
    let garbled = w.id(5 * HOUR, 3);
    std::fs::create_dir_all(w.dirs.formations.join(&garbled)).unwrap();
    std::fs::write(w.dirs.formations.join(&garbled).join("formation.json"), "{").unwrap();
    let current = w.ours(Duration::ZERO, 4);
    let policy = Retain {
        max_sessions: Some(1),
        max_age: Some(HOUR),
    };
    assert!(w.pass(&current, policy, none_running()).is_empty());
    for id in [&other, &unmarked, &garbled] {
        assert!(w.exists(id), "{id}");
    }
}

#[test]
fn a_pass_finishes_what_a_killed_pass_left() {
    let w = world();
    let id = w.ours(5 * HOUR, 1);
    let trash = w.dirs.formations.join(format!(".trash-{id}"));
    std::fs::rename(w.dirs.formations.join(&id), &trash).unwrap();
    let current = w.ours(Duration::ZERO, 2);
    w.pass(
        &current,
        Retain {
            max_sessions: Some(5),
            max_age: None,
        },
        none_running(),
    );
    assert!(!trash.exists());
    assert!(!w.dirs.records_of(&id).exists());
}
