//! Stand-in members for launcher tests: `MUR_TEST_MEMBER_PROGRAM` pointed at a wrapper
//! around tests/fixtures/fake_member.py, which speaks the launcher's real protocol.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

pub struct Fakes {
    pub events: PathBuf,
    pub program: PathBuf,
}

impl Fakes {
    /// Writes the wrapper and config into `dir`; `behaviours` by member name.
    pub fn new(dir: &Path, behaviours: &[(&str, &str)]) -> Fakes {
        let events = dir.join("events");
        std::fs::create_dir_all(&events).unwrap();
        let members: BTreeMap<_, _> = behaviours
            .iter()
            .map(|(m, b)| (m.to_string(), b.to_string()))
            .collect();
        let config = serde_json::json!({"events_dir": events, "members": members});
        let config_path = dir.join("fake-config.json");
        std::fs::write(&config_path, config.to_string()).unwrap();
        let fixture = crate::repo_root().join("tests/fixtures/fake_member.py");
        let program = dir.join("fake-member.sh");
        std::fs::write(
            &program,
            format!(
                "#!/bin/sh\nexec python3 {} {} \"$@\"\n",
                fixture.display(),
                config_path.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        Fakes { events, program }
    }

    pub fn events(&self, member: &str) -> Vec<Value> {
        let Ok(text) = std::fs::read_to_string(self.events.join(format!("{member}.jsonl"))) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    pub fn event(&self, member: &str, kind: &str) -> Option<Value> {
        self.events(member).into_iter().find(|e| e["event"] == kind)
    }

    /// Waits until `member` has logged `kind`, or panics at `limit`.
    pub fn wait_event(&self, member: &str, kind: &str, limit: Duration) -> Value {
        let until = Instant::now() + limit;
        loop {
            if let Some(e) = self.event(member, kind) {
                return e;
            }
            assert!(Instant::now() < until, "{member} never logged {kind}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pid a member logged at start.
    pub fn pid(&self, member: &str) -> i32 {
        self.wait_event(member, "started", Duration::from_secs(30))["pid"]
            .as_i64()
            .unwrap() as i32
    }
}

/// Whether `pid` is gone (a zombie counts as gone).
pub fn gone(pid: i32) -> bool {
    mur::descendants::stat(pid as u32).is_none_or(|p| p.is_zombie())
}

/// Waits until every pid is gone; returns how long it took, or panics at `limit`.
pub fn wait_gone(pids: &[i32], limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        if pids.iter().all(|p| gone(*p)) {
            return start.elapsed();
        }
        let left: Vec<_> = pids.iter().filter(|p| !gone(**p)).collect();
        assert!(
            start.elapsed() < limit,
            "still running after {limit:?}: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
