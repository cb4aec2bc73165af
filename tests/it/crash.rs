//! Crash safety: `mur install`, `mur pack`, `mur lock`, a session writing its
//! records, a formation's launch and the retention passes are killed with SIGKILL at
//! random moments, many times. Afterwards the stores, the lock, the formation
//! directories and the records are consistent (no partial artifact, the lock old or
//! new and never torn, every trace line whole JSON, no half-removed session or
//! formation) and the next command works.
//!
//! The moments come from a seed, printed at the start of each test; set
//! MUR_CRASH_SEED to run the same moments again.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;
use sha2::{Digest, Sha256};

const ROUNDS: usize = 20;

/// splitmix64: a small, repeatable source of moments.
struct Moments(u64);

impl Moments {
    fn new(test: &str) -> Moments {
        let seed = std::env::var("MUR_CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{test}: MUR_CRASH_SEED={seed}");
        Moments(seed)
    }

    /// A moment in 0..=1.2 × `span`, to kill at.
    fn within(&mut self, span: Duration) -> Duration {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^= z >> 31;
        span.mul_f64(1.2 * (z % 10_000) as f64 / 10_000.0)
    }
}

/// How long `cmd` takes when left alone; it must succeed.
fn timed(mut cmd: Command) -> Duration {
    let t0 = Instant::now();
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    t0.elapsed()
}

/// Runs `cmd` and kills it with SIGKILL after `after` (or lets it end first).
fn kill_after(mut cmd: Command, after: Duration) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The wait is the random moment itself, not a hope that a race goes one way.
    std::thread::sleep(after);
    let _ = child.kill();
    child.wait().unwrap();
}

/// Like [`kill_after`], with `cmd` in a process group of its own that gets the
/// SIGKILL: a launcher and every member in its group.
fn kill_group_after(mut cmd: Command, after: Duration) {
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    child.wait().unwrap();
}

/// Waits until no session a running record names is still alive: what a killed
/// launch left winds down through its lifelines.
fn sessions_gone(home: &Path) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let live: Vec<i32> = std::fs::read_dir(home.join(".murmur/running"))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| {
                        let v: serde_json::Value =
                            serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
                        let pid = nix::unistd::Pid::from_raw(v["pid"].as_i64()? as i32);
                        nix::sys::signal::kill(pid, None)
                            .is_ok()
                            .then_some(pid.as_raw())
                    })
                    .collect()
            })
            .unwrap_or_default();
        if live.is_empty() {
            return;
        }
        assert!(Instant::now() < until, "sessions still running: {live:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every trace under `dir` holds whole JSON lines, each ended.
fn whole_traces(dir: &Path, round: usize) {
    for trace in traces(dir) {
        let text = std::fs::read_to_string(&trace).unwrap();
        for (i, line) in text.lines().enumerate() {
            assert!(
                serde_json::from_str::<serde_json::Value>(line).is_ok(),
                "round {round}: {}:{} is not whole JSON: {line}",
                trace.display(),
                i + 1
            );
        }
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "round {round}: {}",
            trace.display()
        );
    }
}

/// A capsule with 1 MiB of incompressible data, so each command takes a while.
fn big_capsule(w: &World, name: &str) -> PathBuf {
    let dir = w.path(name);
    write_capsule(&dir, name, "1.0.0");
    let mut data = Vec::with_capacity(1 << 20);
    let mut block = Sha256::digest(name.as_bytes()).to_vec();
    while data.len() < 1 << 20 {
        block = Sha256::digest(&block).to_vec();
        data.extend_from_slice(&block);
    }
    std::fs::write(dir.join("data.bin"), data).unwrap();
    dir
}

fn sha(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

/// Every entry under `dir` whose name does not start with a dot.
fn visible(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn install_killed_at_random_leaves_a_consistent_store() {
    let w = World::new();
    let mut at = Moments::new("install");
    let src = big_capsule(&w, "big");
    let out = w.path("out");
    std::fs::create_dir_all(&out).unwrap();
    let want = pack(&w, &src, &out);
    let zip = out.join("big-1.0.0.mur.zip");
    let mut cmd = w.mur();
    cmd.args(["install", "--global"]).arg(&zip);
    let span = timed(cmd);
    let installed = w.home.join(".murmur/artifacts/local/big/1.0.0.mur.zip");
    for round in 0..ROUNDS {
        let _ = std::fs::remove_file(&installed);
        let mut cmd = w.mur();
        cmd.args(["install", "--global"]).arg(&zip);
        kill_after(cmd, at.within(span));
        // Either the whole artifact or none; `mur ls` reads the store.
        if installed.exists() {
            assert_eq!(sha(&installed), want, "round {round}: a partial artifact");
        }
        let o = w.mur().args(["ls", "--json"]).output().unwrap();
        assert!(o.status.success(), "round {round}: {}", stderr(&o));
        assert_eq!(
            visible(installed.parent().unwrap()),
            if installed.exists() {
                vec!["1.0.0.mur.zip".to_string()]
            } else {
                vec![]
            },
            "round {round}"
        );
    }
    // The next install works, and so does a run of what it installed.
    w.mur()
        .args(["install", "--global"])
        .arg(&zip)
        .assert()
        .success();
    assert_eq!(sha(&installed), want);
    let o = w
        .mur()
        .args([
            "run",
            "--capsule",
            "local/big",
            "--capsule-version",
            "1.0.0",
            "--task",
            "hi",
        ])
        .env("MUR_TEST_TIME_SCALE", "0.05")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn pack_killed_at_random_leaves_no_partial_artifact() {
    let w = World::new();
    let mut at = Moments::new("pack");
    let src = big_capsule(&w, "big");
    let reference = w.path("reference");
    std::fs::create_dir_all(&reference).unwrap();
    let want = pack(&w, &src, &reference);
    let out = w.path("out");
    let mut cmd = w.mur();
    cmd.arg("pack").arg(&src).arg("--out").arg(&reference);
    let span = timed(cmd);
    for round in 0..ROUNDS {
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let mut cmd = w.mur();
        cmd.arg("pack").arg(&src).arg("--out").arg(&out);
        kill_after(cmd, at.within(span));
        match visible(&out).as_slice() {
            [] => {}
            [one] if one == "big-1.0.0.mur.zip" => {
                assert_eq!(
                    sha(&out.join(one)),
                    want,
                    "round {round}: a partial artifact"
                )
            }
            other => panic!("round {round}: {other:?}"),
        }
    }
    assert_eq!(pack(&w, &src, &out), want);
}

#[test]
fn lock_killed_at_random_leaves_the_old_lock_or_the_new() {
    let w = World::new();
    let mut at = Moments::new("lock");
    for name in ["a", "b", "c"] {
        let dir = w.path(name);
        write_capsule(&dir, name, "1.0.0");
        w.mur().arg("install").arg(&dir).assert().success();
    }
    let lock = w.proj.join("murmur.lock");
    let mut cmd = w.mur();
    cmd.arg("lock");
    let span = timed(cmd);
    let new = std::fs::read_to_string(&lock).unwrap();
    let old =
        "# murmur.lock: written by `mur lock`; do not edit.\nlock_version: 1\nartifacts: []\n";
    std::fs::write(w.proj.join("murmur.yaml"), manifest_text("app", "1.0.0")).unwrap();
    for round in 0..ROUNDS {
        std::fs::write(&lock, old).unwrap();
        let mut cmd = w.mur();
        cmd.arg("lock");
        kill_after(cmd, at.within(span));
        let now = std::fs::read_to_string(&lock).unwrap();
        assert!(
            now == old || now == new,
            "round {round}: a torn lock:\n{now}"
        );
    }
    w.mur().arg("lock").assert().success();
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), new);
}

#[test]
fn a_session_killed_at_random_leaves_whole_trace_lines() {
    let w = World::new();
    let mut at = Moments::new("session");
    let dir = w.path("demo");
    write_capsule(&dir, "demo", "1.0.0");
    w.mur().arg("install").arg(&dir).assert().success();
    let run = || {
        let mut cmd = w.mur();
        cmd.args([
            "run",
            "--capsule",
            "local/demo",
            "--capsule-version",
            "1.0.0",
            "--task",
            "hi",
        ])
        .env("MUR_TEST_TIME_SCALE", "0.05");
        cmd
    };
    let span = timed(run());
    for round in 0..ROUNDS {
        kill_after(run(), at.within(span));
        whole_traces(&w.home.join(".murmur/records"), round);
    }
    let o = run().output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

fn traces(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(traces(&p));
        } else if p.file_name().is_some_and(|n| n == "trace.jsonl") {
            out.push(p);
        }
    }
    out
}

/// `trace.retain` that keeps two: every run then ends with a retention pass.
const RETAIN_TWO: &str = "trace:\n  retain:\n    max_sessions: 2\n";

#[test]
fn a_session_s_retention_pass_killed_at_random_leaves_no_half_removed_session() {
    let w = World::new();
    let mut at = Moments::new("session retention");
    let dir = w.path("demo");
    write_capsule(&dir, "demo", "1.0.0");
    let manifest = manifest_text("demo", "1.0.0") + RETAIN_TWO;
    std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
    w.mur().arg("install").arg(&dir).assert().success();
    let run = || {
        let mut cmd = w.mur();
        cmd.args([
            "run",
            "--capsule",
            "local/demo",
            "--capsule-version",
            "1.0.0",
            "--task",
            "hi",
        ]);
        cmd
    };
    let span = timed(run());
    let records = w
        .home
        .join(".murmur/records")
        .join(w.proj.strip_prefix("/").unwrap());
    let traced = |records: &Path| -> Vec<String> {
        visible(records)
            .into_iter()
            .filter(|n| records.join(n).join("trace.jsonl").is_file())
            .collect()
    };
    for round in 0..ROUNDS {
        let before = traced(&records);
        kill_after(run(), at.within(span));
        // Each session that had its trace before the round has it still, or is gone
        // as a whole. (A start killed before its trace leaves a folder without one;
        // that is not a removal.)
        for name in before {
            let dir = records.join(&name);
            assert!(
                !dir.exists() || dir.join("trace.jsonl").is_file(),
                "round {round}: {name} is half removed: {:?}",
                visible(&dir)
            );
        }
        whole_traces(&records, round);
    }
    let o = run().output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(traced(&records).len(), 2, "the last pass keeps two");
    let aside: Vec<String> = std::fs::read_dir(&records)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".trash-"))
        .collect();
    assert!(aside.is_empty(), "nothing set aside is left: {aside:?}");
}

#[test]
fn a_formation_launch_killed_at_random_leaves_whole_formation_directories() {
    let w = World::new();
    let mut at = Moments::new("formation");
    w.mur().args(["new", "--roster", "team"]).assert().success();
    let team = w.proj.join("team");
    let lead = team.join("lead/murmur.yaml");
    let manifest = std::fs::read_to_string(&lead).unwrap() + RETAIN_TWO;
    std::fs::write(&lead, manifest).unwrap();
    w.mur_in(&team)
        .args(["install", "lead", "helper"])
        .assert()
        .success();
    let run = || {
        let mut cmd = w.mur_in(&team);
        cmd.args(["run", "--roster", "--task", "Plan a picnic."]);
        cmd
    };
    let span = timed(run());
    let formations = w.home.join(".murmur/formations");
    for round in 0..ROUNDS {
        kill_group_after(run(), at.within(span));
        sessions_gone(&w.home);
        // Each formation directory holds its whole marker, or is empty: a launch
        // killed between making the directory and writing the marker (the spec's
        // directory with no marker, never removed automatically).
        for name in visible(&formations) {
            let dir = formations.join(&name);
            let whole = std::fs::read(dir.join("formation.json"))
                .is_ok_and(|t| serde_json::from_slice::<serde_json::Value>(&t).is_ok());
            assert!(
                whole || visible(&dir).is_empty(),
                "round {round}: {name} holds {:?} without a whole formation.json",
                visible(&dir)
            );
        }
        whole_traces(&w.home.join(".murmur/records"), round);
        let ps = w.mur().args(["ps", "--json"]).output().unwrap();
        assert!(ps.status.success(), "round {round}: {}", stderr(&ps));
    }
    let o = run().output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // The last pass keeps two of those it may remove: a directory with no marker (a
    // launch killed before it wrote one) is never removed automatically.
    let marked: Vec<String> = visible(&formations)
        .into_iter()
        .filter(|n| formations.join(n).join("formation.json").is_file())
        .collect();
    assert!(marked.len() <= 2, "the last pass keeps two: {marked:?}");
}
