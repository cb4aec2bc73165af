//! Formations on real processes, with the real `mur`:
//! - launch: time from spawning `mur run --roster --task` to the entry member's task
//!   starting (its trace's `a2a_task_received`/first task record), for 2, 8 and 32
//!   members, beside the floor of spawning as many bare processes in the same run
//!   (goal: 8 members under 150 ms on 2 cores);
//! - teardown: time from a SIGKILL of the launcher to the last member gone, 8 and 32
//!   members, idle and with the entry member mid-task (goal under 100 ms).
//!
//! Run with `just bench` or `cargo bench --bench formation`.

// A bench is a program that prints its figures; it uses some of the dev-dependencies.
#![allow(
    unused_crate_dependencies,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use mur_test::clean;
use mur_test::measure;

use measure::median;
use serde_json::json;

/// One run's figure, for the report.
fn record(figure: &str, labels: serde_json::Value, took: Duration) {
    measure::record_ms("formation", figure, labels, &[took]);
}

const SIZES: [usize; 3] = [2, 8, 32];
/// Launches per size (one in a smoke run).
fn runs() -> usize {
    measure::sized(5, 1)
}
/// The busy entry member's harness: reads its task and works on it for a minute.
const BUSY_HARNESS: &str = "busy-harness.sh";

fn mur(home: &Path) -> Command {
    let mut cmd = clean::clean_mur();
    cmd.env("HOME", home).stdin(Stdio::null());
    cmd
}

/// A project whose entry member `m00` may call every other member. With `busy`, the
/// entry member's harness (process transport) works on its task for a minute.
fn project(home: &Path, members: usize, busy: bool) -> PathBuf {
    let tag = if busy {
        format!("{members}-busy")
    } else {
        members.to_string()
    };
    let project = home.join(format!("project-{tag}"));
    let mut roster = String::from("roster_version: 1\nmembers:\n");
    let mut folders = Vec::new();
    for i in 0..members {
        let name = format!("m{i:02}");
        let folder = project.join("src").join(&name);
        std::fs::create_dir_all(&folder).unwrap();
        let peer = if i == 0 {
            "capabilities:\n  network:\n    allow: [localhost]\n"
        } else {
            "exports:\n  peer_tasks:\n    accept: true\n"
        };
        let agent = if busy && i == 0 {
            std::fs::write(folder.join(BUSY_HARNESS), "read task\nsleep 60\n").unwrap();
            format!("agent:\n  transport: process\n  command: [sh, {BUSY_HARNESS}]\n")
        } else {
            "agent:\n  transport: builtin\n".to_string()
        };
        std::fs::write(
            folder.join("murmur.yaml"),
            format!(
                "name: b{tag}-{name}\nversion: 1.0.0\ndescription: Bench member.\n{agent}\
                 network:\n  authentication: {{}}\n{peer}"
            ),
        )
        .unwrap();
        folders.push(folder);
        roster.push_str(&format!(
            "  - name: {name}\n    capsule: local/b{tag}-{name}\n    version: 1.0.0\n{}",
            if i == 0 { "    entry: true\n" } else { "" }
        ));
    }
    if members > 1 {
        let callees: Vec<String> = (1..members).map(|i| format!("m{i:02}")).collect();
        roster.push_str(&format!(
            "reachability:\n  - from: m00\n    to: [{}]\n",
            callees.join(", ")
        ));
    }
    std::fs::write(project.join("roster.yaml"), roster).unwrap();
    let status = mur(home)
        .arg("install")
        .args(&folders)
        .current_dir(&project)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    project
}

/// The first trace record of the entry member's task, as a wall-clock time.
fn entry_task_start(home: &Path, project: &Path) -> Option<SystemTime> {
    let records = home
        .join(".murmur/records")
        .join(project.strip_prefix("/").unwrap());
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    for e in std::fs::read_dir(&records).ok()?.flatten() {
        let modified = e.metadata().ok()?.modified().ok()?;
        if newest.as_ref().is_none_or(|(t, _)| modified > *t) {
            newest = Some((modified, e.path()));
        }
    }
    let trace = std::fs::read_to_string(newest?.1.join("trace.jsonl")).ok()?;
    for line in trace.lines() {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let kind = v["type"].as_str().unwrap_or("");
        if kind == "a2a_task_received" || kind == "task_state" {
            let ts = v["ts"].as_str()?;
            let t = humantime::parse_rfc3339(ts).ok()?;
            return Some(t);
        }
    }
    None
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    println!(
        "formation launch: spawn of `mur run --roster --task` to the entry member's task starting"
    );
    for members in SIZES {
        let project = project(&home, members, false);
        let mut launch = Vec::new();
        for _ in 0..runs() {
            let started = SystemTime::now();
            let out = mur(&home)
                .args(["run", "--roster", "--task", "Say hello."])
                .current_dir(&project)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let t =
                entry_task_start(&home, &project).expect("the entry member's task in its trace");
            let took = t.duration_since(started).unwrap_or_default();
            record("launch", json!({"members": members}), took);
            launch.push(took);
        }
        let mut floor = Vec::new();
        for _ in 0..runs() {
            let started = Instant::now();
            let children: Vec<_> = (0..members)
                .map(|_| {
                    clean::as_installed(&mut Command::new("true"))
                        .spawn()
                        .unwrap()
                })
                .collect();
            for mut c in children {
                c.wait().unwrap();
            }
            record(
                "launch_floor",
                json!({"members": members}),
                started.elapsed(),
            );
            floor.push(started.elapsed());
        }
        println!(
            "  {members:>2} members: median {:>8.1?}   (floor: {members} bare processes {:>8.1?})",
            median(launch),
            median(floor)
        );
    }

    println!("teardown: SIGKILL of the launcher to the last member gone");
    for (members, busy) in [(8, false), (32, false), (8, true), (32, true)] {
        let project = if busy {
            project(&home, members, true)
        } else {
            home.join(format!("project-{members}"))
        };
        let args: &[&str] = if busy {
            &["run", "--roster", "--task", "Work."]
        } else {
            &["run", "--roster"]
        };
        let mut took = Vec::new();
        for _ in 0..runs() {
            let mut launcher = mur(&home)
                .args(args)
                .current_dir(&project)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .unwrap();
            // Wait until every member has registered as running.
            let running = home.join(".murmur/running");
            let until = Instant::now() + Duration::from_secs(60);
            let pids = loop {
                let pids: Vec<i32> = std::fs::read_dir(&running)
                    .map(|d| {
                        d.flatten()
                            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                            .filter_map(|e| {
                                let v: serde_json::Value =
                                    serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
                                v["pid"].as_i64().map(|p| p as i32)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                if pids.len() == members && (!busy || harness_running()) {
                    break pids;
                }
                assert!(Instant::now() < until, "the formation never came up");
                std::thread::sleep(Duration::from_millis(5));
            };
            let killed = Instant::now();
            launcher.kill().unwrap();
            launcher.wait().unwrap();
            loop {
                let alive = pids.iter().any(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                        !s.rsplit(')')
                            .next()
                            .unwrap_or("")
                            .trim_start()
                            .starts_with('Z')
                    })
                });
                // Busy: the entry member's harness must be gone too.
                let harness_left = busy && harness_running();
                if !alive && !harness_left {
                    break;
                }
                assert!(
                    killed.elapsed() < Duration::from_secs(30),
                    "members outlived the launcher"
                );
                std::thread::sleep(Duration::from_millis(2));
            }
            let state = if busy { "busy" } else { "idle" };
            record(
                "teardown",
                json!({"members": members, "state": state}),
                killed.elapsed(),
            );
            took.push(killed.elapsed());
        }
        let state = if busy {
            "busy (entry member mid-task)"
        } else {
            "idle"
        };
        println!(
            "  {members:>2} members, {state}: median {:>8.1?}",
            median(took)
        );
    }
}

/// Whether the busy entry member's harness is running (its task has started).
fn harness_running() -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(BUSY_HARNESS))
        })
}
