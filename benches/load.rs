//! Load: one formation (the scaffolded `lead` + `helper`, on the built-in model) takes
//! `MUR_BENCH_TASKS` tasks (default 10,000) at its entry member, from 8 concurrent
//! clients, with `task_acceptance: queue`. Each task's lead calls `helper` (call-member),
//! so the formation does twice the work.
//!
//! Checked, and the bench fails otherwise: no task is lost (every SendMessage answers
//! a completed task with its artifact), and the entry member's trace records each
//! task's arrival and its end. Printed: the RSS of the launcher and of each member,
//! sampled every tenth of the run (the curve docs/benchmarks.md reports).
//!
//! `cargo bench --bench load` (`MUR_BENCH_TASKS=200` for a smoke run).

// A bench is a program that prints its figures; it uses some of the dev-dependencies.
#![allow(
    unused_crate_dependencies,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::collections::{HashMap, HashSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use mur_test::clean;
use mur_test::measure;

use measure::{Conn, load, vm_rss_mib};

const CLIENTS: usize = 8;
const SAMPLES: usize = 10;

fn mur(home: &Path, cwd: &Path) -> Command {
    let mut cmd = clean::clean_mur();
    cmd.env("HOME", home).current_dir(cwd).stdin(Stdio::null());
    cmd
}

fn ok(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `mur new --roster team`, the lead queueing up to 16 tasks, both installed.
fn team(home: &Path) -> PathBuf {
    ok(mur(home, home).args(["new", "--roster", "team"]));
    let team = home.join("team");
    let lead = team.join("lead/murmur.yaml");
    let manifest = std::fs::read_to_string(&lead).unwrap()
        + "lifecycle:\n  task_acceptance: queue\n  queue_depth: 16\n";
    std::fs::write(&lead, manifest).unwrap();
    ok(mur(home, &team).args(["install", "lead", "helper"]));
    team
}

/// The launcher; SIGTERM to its group when dropped, so a failed run leaves nothing.
struct Launcher(Child);

impl Drop for Launcher {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.0.wait();
    }
}

/// Each member's running record once both are up: name -> (pid, door, session id).
fn members(home: &Path) -> HashMap<String, (u32, String, String)> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let found: HashMap<String, (u32, String, String)> =
            std::fs::read_dir(home.join(".murmur/running"))
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                        .filter_map(|e| {
                            let v: Value =
                                serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
                            Some((
                                v["formation_member"].as_str()?.to_string(),
                                (
                                    v["pid"].as_u64()? as u32,
                                    v["door_url"].as_str()?.to_string(),
                                    v["session_id"].as_str()?.to_string(),
                                ),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
        if found.len() == 2 {
            return found;
        }
        assert!(Instant::now() < until, "the formation never came up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn send_request(addr: &str, token: &str, n: usize) -> Vec<u8> {
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": n, "method": "SendMessage",
        "params": {"message": {"messageId": format!("m{n}"), "role": "ROLE_USER",
            "parts": [{"text": format!("Task {n}: plan a picnic.")}]}}}))
    .unwrap();
    let mut request = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    request
}

/// The task id of a completed task with its answer; panics on anything else.
fn completed(answer: &[u8], n: usize) -> String {
    let v: Value = serde_json::from_slice(answer).unwrap();
    let task = &v["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "task {n} did not complete: {v}"
    );
    let text = task["status"]["message"]["parts"][0]["text"].as_str();
    assert!(
        text.is_some_and(|t| !t.is_empty()),
        "task {n}: no result: {v}"
    );
    task["id"].as_str().unwrap().to_string()
}

/// The entry member's trace: the ids with an `a2a_task_received` and with a final
/// `task_state`.
fn recorded(home: &Path, session: &str) -> (HashSet<String>, HashSet<String>) {
    let mut stack = vec![home.join(".murmur/records")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == session) {
                let text = std::fs::read_to_string(p.join("trace.jsonl")).unwrap();
                let (mut received, mut ended) = (HashSet::new(), HashSet::new());
                for line in text.lines() {
                    let v: Value = serde_json::from_str(line).unwrap();
                    let id = v["task_id"].as_str().unwrap_or_default().to_string();
                    match v["type"].as_str() {
                        Some("a2a_task_received") => {
                            received.insert(id);
                        }
                        Some("task_state") if v["to"] == "completed" => {
                            ended.insert(id);
                        }
                        _ => {}
                    }
                }
                return (received, ended);
            } else if p.is_dir() {
                stack.push(p);
            }
        }
    }
    panic!("no records for {session}");
}

fn main() {
    let tasks: usize = measure::knob("MUR_BENCH_TASKS", 10_000, 100);
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    let team = team(&home);
    let load_before = load();
    let launcher = Launcher(
        mur(&home, &team)
            .args(["run", "--roster"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap(),
    );
    let up = members(&home);
    let (lead_pid, door, lead_session) = up["lead"].clone();
    let helper_pid = up["helper"].0;
    let token = std::fs::read_to_string(home.join(format!(".murmur/running/{lead_session}.token")))
        .unwrap()
        .trim()
        .to_string();
    let addr = door
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    // Printed, and recorded for the report's RSS curve.
    let rss = |tasks: usize| {
        let rss = [launcher.0.id(), lead_pid, helper_pid].map(vm_rss_mib);
        for (process, mib) in ["launcher", "lead", "helper"].into_iter().zip(rss) {
            let labels = serde_json::json!({"process": process, "tasks": tasks});
            measure::record("load", "rss", labels, mib, "MiB");
        }
        rss.map(|m| format!("{m:5.1}")).join("  ")
    };
    println!(
        "load: {tasks} tasks from {CLIENTS} clients at the entry member (load average {load_before})"
    );
    println!(
        "{:>7}  {:>8}  launcher  lead  helper (RSS, MiB)",
        "tasks", "secs"
    );
    println!("{:>7}  {:>8.2}  {}", 0, 0.0, rss(0));

    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ids: Vec<String> = rt.block_on(async {
        let mut clients = tokio::task::JoinSet::new();
        for _ in 0..CLIENTS {
            let (addr, token, next, done) =
                (addr.clone(), token.clone(), next.clone(), done.clone());
            clients.spawn(async move {
                let mut conn = Conn::open(&addr).await;
                let mut ids = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= tasks {
                        return ids;
                    }
                    ids.push(completed(
                        conn.call(&send_request(&addr, &token, n)).await,
                        n,
                    ));
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let sampler = async {
            let mut mark = 1;
            while mark <= SAMPLES {
                let d = done.load(Ordering::Relaxed);
                if d * SAMPLES >= mark * tasks {
                    println!(
                        "{d:>7}  {:>8.2}  {}",
                        started.elapsed().as_secs_f64(),
                        rss(d)
                    );
                    mark += 1;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        let (ids, ()) = tokio::join!(clients.join_all(), sampler);
        ids.into_iter().flatten().collect()
    });
    let took = started.elapsed();
    let unique: HashSet<String> = ids.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        tasks,
        "every task answered once, with its own id"
    );
    let (received, ended) = recorded(&home, &lead_session);
    let missing = unique.difference(&received).count() + unique.difference(&ended).count();
    assert_eq!(missing, 0, "the trace records every task's arrival and end");
    let labels = serde_json::json!({"tasks": tasks});
    measure::record("load", "lost", labels.clone(), missing as f64, "tasks");
    let rate = tasks as f64 / took.as_secs_f64();
    measure::record("load", "tasks_per_s", labels, rate, "tasks/s");
    println!(
        "load: {tasks} tasks in {:.1} s ({:.0} tasks/s), none lost, each in the trace; load average {}",
        took.as_secs_f64(),
        tasks as f64 / took.as_secs_f64(),
        load()
    );
}
