//! Whole formations of real `mur run` members, launched by the real `mur run --roster`:
//! kills, signals, wind-down statuses in each member's trace, the deadline, and a scan
//! for formation tokens everywhere a member could leak one.
//! MUR_TEST_TIME_SCALE (support::TIME_SCALE) scales the spec's waits (docs/testing.md); the e2e suite
//! proves the real ones.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::fake::wait_gone;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::{self, KillOnDrop, World, files_under};

const LIMIT: Duration = Duration::from_secs(30);

/// A scaffolded team installed in a world.
struct Team {
    world: World,
    project: PathBuf,
}

impl std::ops::Deref for Team {
    type Target = World;
    fn deref(&self) -> &World {
        &self.world
    }
}

fn mur(home: &Path) -> Command {
    let mut cmd = support::mur();
    cmd.env("HOME", home).stdin(Stdio::null());
    cmd
}

/// `mur new --roster team`; with `busy_lead`, the entry member's harness works on a
/// task for a minute (process transport) instead of answering at once.
fn world(busy_lead: bool) -> Team {
    let world = World::new();
    let root = world.root.clone();
    let home = world.home.clone();
    let ok = crate::support::ok;
    ok(mur(&home)
        .args(["new", "--roster", "team"])
        .current_dir(&root));
    let project = root.join("team");
    if busy_lead {
        let lead = project.join("lead");
        let manifest = std::fs::read_to_string(lead.join("murmur.yaml")).unwrap();
        let manifest = manifest.replace(
            "  transport: builtin",
            "  transport: process\n  command: [\"sh\", \"harness.sh\"]",
        );
        std::fs::write(lead.join("murmur.yaml"), manifest).unwrap();
        std::fs::write(
            lead.join("harness.sh"),
            "read task\nsleep 60\necho '{\"type\":\"message\",\"text\":\"done\"}'\n",
        )
        .unwrap();
        std::fs::set_permissions(
            lead.join("harness.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    ok(mur(&home)
        .args(["install", "lead", "helper"])
        .current_dir(&project));
    Team { world, project }
}

impl Team {
    fn launch(&self, args: &[&str]) -> KillOnDrop {
        KillOnDrop::group(
            mur(&self.home)
                .args(["run", "--roster"])
                .args(args)
                .current_dir(&self.project)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .unwrap(),
        )
    }

    /// The running records of the formation's members, once `n` are registered.
    fn members_up(&self, n: usize) -> Vec<Value> {
        let until = Instant::now() + LIMIT;
        loop {
            let records: Vec<Value> = std::fs::read_dir(self.home.join(".murmur/running"))
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
                        .filter(|v: &Value| {
                            v["formation_member"].is_string() && v["door_url"].is_string()
                        })
                        .collect()
                })
                .unwrap_or_default();
            if records.len() >= n {
                return records;
            }
            assert!(Instant::now() < until, "the formation never came up");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pid_of(records: &[Value], member: &str) -> i32 {
        let r = records
            .iter()
            .find(|r| r["formation_member"] == member)
            .unwrap();
        r["pid"].as_i64().unwrap() as i32
    }

    /// Every trace under ~/.murmur/records, by the member its session_start names.
    fn trace(&self, member: &str) -> Vec<Value> {
        for file in files_under(&self.home.join(".murmur/records")) {
            if file.file_name().is_some_and(|n| n == "trace.jsonl") {
                let records: Vec<Value> = std::fs::read_to_string(&file)
                    .unwrap()
                    .lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect();
                if records
                    .first()
                    .is_some_and(|r| r["formation_member"] == member)
                {
                    return records;
                }
            }
        }
        panic!("no trace for {member}");
    }
}

fn kinds(trace: &[Value]) -> Vec<&str> {
    trace.iter().map(|r| r["type"].as_str().unwrap()).collect()
}

/// The trace of a member whose lifeline closed while idle ends formation_ended, then
/// session_end ok with exit code 0.
fn wound_down_idle(trace: &[Value]) {
    let k = kinds(trace);
    let ended = k
        .iter()
        .position(|k| *k == "formation_ended")
        .expect("formation_ended");
    assert_eq!(k.last(), Some(&"session_end"), "{k:?}");
    assert!(ended < k.len() - 1);
    let end = trace.last().unwrap();
    assert_eq!(end["exit_status"], "ok", "{end}");
    assert_eq!(end["exit_code"], 0);
}

#[test]
fn kill_9_of_the_launcher_winds_every_member_down() {
    let w = world(false);
    let mut launcher = w.launch(&[]);
    let up = w.members_up(2);
    let pids = [Team::pid_of(&up, "lead"), Team::pid_of(&up, "helper")];
    kill(Pid::from_raw(launcher.id() as i32), Signal::SIGKILL).unwrap();
    launcher.wait().unwrap();
    let took = wait_gone(&pids, LIMIT);
    eprintln!("kill -9 launcher: last member gone after {took:?}");
    wound_down_idle(&w.trace("lead"));
    wound_down_idle(&w.trace("helper"));
}

#[test]
fn kill_9_of_the_entry_member_ends_the_formation() {
    let w = world(false);
    let mut launcher = w.launch(&[]);
    let up = w.members_up(2);
    let helper = Team::pid_of(&up, "helper");
    kill(Pid::from_raw(Team::pid_of(&up, "lead")), Signal::SIGKILL).unwrap();
    let status = launcher.wait().unwrap();
    assert_eq!(status.code(), Some(137));
    wait_gone(&[helper], LIMIT);
    wound_down_idle(&w.trace("helper"));
}

#[test]
fn kill_9_of_the_launcher_s_group_leaves_no_member() {
    let w = world(false);
    let mut launcher = w.launch(&[]);
    let up = w.members_up(2);
    let pids = [Team::pid_of(&up, "lead"), Team::pid_of(&up, "helper")];
    killpg(Pid::from_raw(launcher.id() as i32), Signal::SIGKILL).unwrap();
    launcher.wait().unwrap();
    wait_gone(&pids, LIMIT);
    wound_down_idle(&w.trace("helper"));
    assert_ne!(
        kinds(&w.trace("lead")).last(),
        Some(&"session_end"),
        "the entry member was killed"
    );
}

#[test]
fn sigterm_to_the_launcher_cancels_the_running_task_as_formation_ended() {
    let w = world(true);
    let mut launcher = w.launch(&["--task", "Work for a minute."]);
    let up = w.members_up(2);
    let pids = [Team::pid_of(&up, "lead"), Team::pid_of(&up, "helper")];
    // Wait until the entry member's task is running.
    let until = Instant::now() + LIMIT;
    while !kinds(&w.trace("lead")).contains(&"a2a_task_received") {
        assert!(Instant::now() < until, "the task never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(launcher.id() as i32), Signal::SIGTERM).unwrap();
    let status = launcher.wait().unwrap();
    assert_eq!(status.code(), Some(0), "the entry member wound down with 0");
    wait_gone(&pids, LIMIT);
    let lead = w.trace("lead");
    let end = lead.last().unwrap();
    assert_eq!(end["type"], "session_end");
    assert_eq!(end["exit_status"], "formation_ended", "{end}");
    assert_eq!(end["exit_code"], 0);
    assert!(
        end.get("error_code").is_none_or(|c| c != "E-RUN-040"),
        "no E-RUN-040: {end}"
    );
    let result = files_under(&w.home.join(".murmur/records"))
        .into_iter()
        .find(|p| {
            p.ends_with("out/result.txt")
                && p.starts_with(
                    w.home
                        .join(".murmur/records")
                        .join(w.project.strip_prefix("/").unwrap()),
                )
        })
        .expect("the entry member's result.txt");
    let text = std::fs::read_to_string(result).unwrap();
    assert!(text.starts_with("canceled:"), "{text}");
    wound_down_idle(&w.trace("helper"));
}

#[test]
fn the_deadline_ends_every_member_at_one_moment() {
    let w = world(false);
    let mut launcher = w.launch(&["--deadline", "2"]);
    let _ = w.members_up(2);
    let status = launcher.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(1),
        "the launcher exits with the entry member's 1"
    );
    let mut ends = Vec::new();
    for m in ["lead", "helper"] {
        let trace = w.trace(m);
        let end = trace.last().unwrap().clone();
        assert_eq!(end["exit_status"], "deadline_reached", "{m}: {end}");
        assert_eq!(end["error_code"], "E-RUN-053", "{m}");
        assert_eq!(end["exit_code"], 1);
        assert!(
            !kinds(&trace).contains(&"formation_ended"),
            "{m}: deadline_reached, not formation_ended"
        );
        ends.push(humantime::parse_rfc3339(end["ts"].as_str().unwrap()).unwrap());
    }
    let apart = ends[0]
        .duration_since(ends[1])
        .unwrap_or_else(|e| e.duration());
    assert!(
        apart < Duration::from_millis(100),
        "members ended {apart:?} apart"
    );
}

#[test]
fn no_formation_token_anywhere_a_member_could_leak_one() {
    let w = world(false);
    let out = mur(&w.home)
        .args(["run", "--roster", "--task", "Say hello."])
        .current_dir(&w.project)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut seen = String::from_utf8_lossy(&out.stdout).into_owned();
    seen.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(!seen.contains("mft1."), "a token on stdout or stderr");
    // The launcher reports host warnings once for the whole formation.
    let host_warnings = seen.matches("warning[W-SEC-013]").count();
    let expected = usize::from(nix::unistd::geteuid().is_root());
    assert_eq!(host_warnings, expected, "{seen}");
    for file in files_under(&w.home) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("mft1."),
            "a token in {}",
            file.display()
        );
    }
    // While running: every member's environment and command line.
    let mut launcher = w.launch(&[]);
    let up = w.members_up(2);
    for r in &up {
        let pid = r["pid"].as_i64().unwrap();
        for part in ["environ", "cmdline"] {
            let bytes = std::fs::read(format!("/proc/{pid}/{part}")).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains("mft1."),
                "a token in {part}"
            );
        }
    }
    kill(Pid::from_raw(launcher.id() as i32), Signal::SIGTERM).unwrap();
    launcher.wait().unwrap();
}

#[test]
fn a_lone_session_reports_host_warnings_itself() {
    let w = world(false);
    let out = mur(&w.home)
        .args(["run", "--task", "Say hello."])
        .current_dir(w.project.join("helper"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = usize::from(nix::unistd::geteuid().is_root());
    assert_eq!(
        stderr.matches("warning[W-SEC-013]").count(),
        expected,
        "{stderr}"
    );
    let reported = mur(&w.home)
        .args(["run", "--task", "Say hello."])
        .current_dir(w.project.join("helper"))
        .env("MURMUR_HOST_WARNINGS_REPORTED", "1")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&reported.stderr).contains("W-SEC-013"));
}

/// A `FROM scratch` image has no system CA certificates. Doors speak plain HTTP on
/// 127.0.0.1, so neither the launcher's readiness probe nor a member's calls may
/// depend on a certificate store: here the store is an empty file and an empty
/// directory (what rustls-native-certs reads in place of the system's).
#[test]
fn a_formation_runs_where_the_system_has_no_ca_certificates() {
    let w = world(false);
    let empty = w.root.join("no-certs");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("none.pem"), "").unwrap();
    let out = mur(&w.home)
        .args(["run", "--roster", "--task", "Plan a picnic."])
        .current_dir(&w.project)
        .env("SSL_CERT_FILE", empty.join("none.pem"))
        .env("SSL_CERT_DIR", &empty)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!out.stdout.is_empty(), "the entry member's result");
}
