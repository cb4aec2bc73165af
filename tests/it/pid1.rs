//! mur as PID 1 of a PID namespace, as it is in a pod (`ENTRYPOINT mur`): started with
//! `unshare --pid --fork --mount-proc` (in a user namespace), signalled from outside as
//! the kubelet signals it. The kernel drops a signal PID 1 has no handler for, and every
//! orphan of the namespace is PID 1's to reap.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::{self, KillOnDrop, World};

const LIMIT: Duration = Duration::from_secs(60);

fn write_harness(dir: &Path, body: &str) {
    let manifest = std::fs::read_to_string(dir.join("murmur.yaml")).unwrap();
    let manifest = manifest.replace(
        "  transport: builtin",
        "  transport: process\n  command: [\"sh\", \"harness.sh\"]",
    );
    std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
    std::fs::write(dir.join("harness.sh"), body).unwrap();
    std::fs::set_permissions(
        dir.join("harness.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
}

/// `mur new --roster team`: `lead` calls `helper` and then works for ten minutes;
/// `helper`'s harness makes an orphan every 100 ms that dies 200 ms later (a zombie
/// until its subreaper reaps it) and works for ever.
fn team(w: &World) -> PathBuf {
    let ok = crate::support::ok;
    ok(w.mur_in(&w.root).args(["new", "--roster", "team"]));
    let project = w.root.join("team");
    // Each harness marks its own work folder (a confined harness writes nowhere else):
    // the lead's is the project, the helper's its folder under ~/.murmur/formations/.
    let marks = project.display();
    write_harness(
        &project.join("lead"),
        &format!(
            "IFS= read -r task\ntouch '{marks}/lead.busy'\necho '{{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"call-member\",\"arguments\":{{\"member\":\"helper\",\"task\":\"hold\"}}}}'\nIFS= read -r result\nexec sleep 600\n"
        ),
    );
    write_harness(
        &project.join("helper"),
        "IFS= read -r task\ntouch \"$MURMUR_WORKDIR/helper.busy\"\nwhile :; do ( sh -c 'sleep 0.2' & ); sleep 0.1; done\n",
    );
    ok(w.mur_in(&project).args(["install", "lead", "helper"]));
    project
}

/// `mur run --roster …` as PID 1 of new user, PID and mount namespaces.
fn launch_as_pid_1(w: &World, project: &Path, args: &[&str]) -> KillOnDrop {
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--user",
        "--map-root-user",
        "--pid",
        "--fork",
        "--mount-proc",
        "--",
    ])
    .arg(env!("CARGO_BIN_EXE_mur"))
    .args(["run", "--roster"])
    .args(args)
    .env_remove("LD_LIBRARY_PATH")
    .env("HOME", &w.home)
    .env("MUR_TEST_TIME_SCALE", support::TIME_SCALE)
    .env("MURMUR_ALLOW_ROOT", "1")
    .env("MUR_TEST_TERMINATION_LOG", w.root.join("termination-log"))
    .current_dir(project)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .process_group(0);
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if text.starts_with("MURMUR_") || text.starts_with("MUR_TEST_") {
            cmd.env_remove(&name);
        }
    }
    cmd.env("MUR_TEST_TIME_SCALE", support::TIME_SCALE)
        .env("MURMUR_ALLOW_ROOT", "1")
        .env("MUR_TEST_TERMINATION_LOG", w.root.join("termination-log"));
    KillOnDrop::group(cmd.spawn().expect("unshare (util-linux) runs"))
}

/// The host pid of the namespace's PID 1: `unshare`'s child, once it runs mur.
fn pid_1(unshare: u32) -> u32 {
    let until = Instant::now() + LIMIT;
    loop {
        let children = std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children"))
            .unwrap_or_default();
        if let Some(pid) = children
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .next()
            && std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e.ends_with("mur"))
        {
            return pid;
        }
        assert!(Instant::now() < until, "mur never ran as unshare's child");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every process of `ns` (a `/proc/<pid>/ns/pid` link): host pid → (pid in the
/// namespace, state, start time).
fn in_namespace(ns: &Path) -> BTreeMap<u32, (u32, char, u64)> {
    let ns = std::fs::read_link(ns).unwrap_or_default();
    let mut found = BTreeMap::new();
    for p in mur::descendants::table() {
        if std::fs::read_link(format!("/proc/{}/ns/pid", p.pid)).is_ok_and(|l| l == ns) {
            let status =
                std::fs::read_to_string(format!("/proc/{}/status", p.pid)).unwrap_or_default();
            let inner = status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .and_then(|l| l.split_whitespace().last()?.parse().ok())
                .unwrap_or(0);
            found.insert(p.pid, (inner, p.state, p.start));
        }
    }
    found
}

/// Whether SIGTERM is caught by `pid` (bit 15 of SigCgt).
fn catches_sigterm(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|mask| mask & (1 << (15 - 1)) != 0)
}

/// Whether the helper marked its work folder, `~/.murmur/formations/<frm_id>/helper/`.
fn helper_busy(w: &World) -> bool {
    std::fs::read_dir(w.home.join(".murmur/formations"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("helper/helper.busy").exists())
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + LIMIT;
    while !done() {
        assert!(Instant::now() < until, "{what}: not within {LIMIT:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Samples the namespace for `span`; fails on a zombie seen for longer than `most`,
/// but for `except`: a member the launcher waits for itself (its exit status is the
/// launcher's to read when the formation ends, so it is never reaped as a stray).
fn no_lasting_zombie(ns: &Path, span: Duration, most: Duration, except: Option<u32>) -> usize {
    let mut first: BTreeMap<(u32, u64), Instant> = BTreeMap::new();
    let mut seen = 0;
    let until = Instant::now() + span;
    while Instant::now() < until {
        let now = Instant::now();
        let zombies: Vec<(u32, u64)> = in_namespace(ns)
            .into_iter()
            .filter(|(pid, (_, state, _))| matches!(state, 'Z' | 'X') && Some(*pid) != except)
            .map(|(pid, (_, _, start))| (pid, start))
            .collect();
        first.retain(|k, _| zombies.contains(k));
        for z in zombies {
            let at = *first.entry(z).or_insert_with(|| {
                seen += 1;
                now
            });
            if now - at > most {
                let who = |pid: u32| {
                    let stat = mur::descendants::stat(pid);
                    let comm =
                        std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                    (stat, comm.trim().to_string())
                };
                let (stat, comm) = who(z.0);
                let parent = stat.map(|s| who(s.ppid));
                panic!(
                    "zombie {z:?} {comm} left unreaped for {:?}; its parent: {parent:?}",
                    now - at
                );
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    seen
}

fn trace(w: &World, member_dir_part: &str) -> Vec<Value> {
    let root = w.home.join(".murmur/records");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.ends_with("trace.jsonl") && p.to_string_lossy().contains(member_dir_part) {
                files.push(p);
            }
        }
    }
    assert_eq!(files.len(), 1, "one trace for {member_dir_part}: {files:?}");
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn mur_as_pid_1_reaps_every_orphan_and_winds_down_on_the_kubelet_s_sigterm() {
    let w = World::new();
    let project = team(&w);
    let mut unshare = launch_as_pid_1(&w, &project, &["--task", "Work."]);
    let mur = pid_1(unshare.id());
    let ns = PathBuf::from(format!("/proc/{mur}/ns/pid"));
    wait_for("the lead's task", || project.join("lead.busy").exists());
    wait_for("the helper's task", || helper_busy(&w));
    // The helper's session reaps its harness's orphans.
    let zombies = no_lasting_zombie(&ns, Duration::from_secs(2), Duration::from_secs(2), None);
    // Kill the helper's session: its harness and its orphans are PID 1's now.
    let running = w.home.join(".murmur/running");
    let helper_ns_pid = std::fs::read_dir(&running)
        .unwrap()
        .flatten()
        .filter_map(|e| serde_json::from_slice::<Value>(&std::fs::read(e.path()).ok()?).ok())
        .find(|v| v["formation_member"] == "helper")
        .and_then(|v| v["pid"].as_u64())
        .expect("the helper's running record") as u32;
    let (helper, _) = in_namespace(&ns)
        .into_iter()
        .find(|(_, (inner, _, _))| *inner == helper_ns_pid)
        .expect("the helper in the namespace");
    kill(Pid::from_raw(helper as i32), Signal::SIGKILL).unwrap();
    let zombies = zombies
        + no_lasting_zombie(
            &ns,
            Duration::from_secs(3),
            Duration::from_secs(2),
            Some(helper),
        );
    assert!(
        zombies > 0,
        "the harness made orphans that died: some zombie was seen"
    );
    // The kubelet's SIGTERM, to PID 1 from outside its namespace.
    let sent = Instant::now();
    kill(Pid::from_raw(mur as i32), Signal::SIGTERM).unwrap();
    let status = loop {
        if let Some(s) = unshare.try_wait().unwrap() {
            break s;
        }
        assert!(sent.elapsed() < LIMIT, "PID 1 never ended on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("mur as PID 1: SIGTERM to exit in {:?}", sent.elapsed());
    // The contract: signalled after the entry member started, wound down in time: 0.
    assert_eq!(status.code(), Some(0));
    let lead = trace(&w, "/team/");
    let kinds: Vec<&str> = lead.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"formation_ended"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"session_end"), "{kinds:?}");
    assert_eq!(lead.last().unwrap()["exit_status"], "formation_ended");
    let verdict = std::fs::read_to_string(w.root.join("termination-log"));
    // The test setting names a file that does not exist: never created.
    assert!(verdict.is_err(), "{verdict:?}");
}

#[test]
fn a_sigterm_as_soon_as_pid_1_catches_it_ends_the_launch_and_writes_the_verdict() {
    let w = World::new();
    let project = team(&w);
    std::fs::write(w.root.join("termination-log"), "").unwrap();
    let mut unshare = launch_as_pid_1(&w, &project, &["--task", "Work."]);
    let mur = pid_1(unshare.id());
    wait_for("PID 1 catches SIGTERM", || catches_sigterm(mur));
    kill(Pid::from_raw(mur as i32), Signal::SIGTERM).unwrap();
    let sent = Instant::now();
    let status = loop {
        if let Some(s) = unshare.try_wait().unwrap() {
            break s;
        }
        assert!(
            sent.elapsed() < LIMIT,
            "PID 1 never ended on an early SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Before the entry member started: 143; after: the wound-down entry member's 0.
    assert!(matches!(status.code(), Some(143) | Some(0)), "{status:?}");
    let verdict = std::fs::read_to_string(w.root.join("termination-log")).unwrap();
    assert!(verdict.starts_with("mur: formation frm_"), "{verdict}");
    assert!(
        verdict.contains(&format!("exit code {}", status.code().unwrap())),
        "{verdict}"
    );
    assert!(verdict.contains("member lead (entry)"), "{verdict}");
    assert!(verdict.contains("member helper"), "{verdict}");
}

/// Not PID 1: the launcher is a child subreaper, so a member's double-forked child
/// reparents to it (not to the host's init), and the formation's end leaves nothing.
#[test]
fn a_member_s_double_forked_child_reparents_to_the_launcher_and_ends_with_it() {
    let w = World::new();
    let ok = crate::support::ok;
    ok(w.mur_in(&w.root).args(["new", "--roster", "team"]));
    let project = w.root.join("team");
    ok(w.mur_in(&project).args(["install", "lead", "helper"]));
    let fakes = crate::support::fake::Fakes::new(&w.root, &[("helper", "double_fork")]);
    let mut launcher = KillOnDrop::group(
        w.mur_in(&project)
            .args(["run", "--roster"])
            .env("MUR_TEST_MEMBER_PROGRAM", &fakes.program)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap(),
    );
    let mut orphan = None;
    wait_for("the helper's orphan", || {
        orphan = fakes
            .events("helper")
            .iter()
            .find(|e| e["event"] == "orphan")
            .and_then(|e| e["pid"].as_u64());
        orphan.is_some()
    });
    let orphan = orphan.unwrap() as u32;
    wait_for("the orphan reparented to the launcher", || {
        mur::descendants::stat(orphan).is_some_and(|p| p.ppid == launcher.id())
    });
    kill(Pid::from_raw(launcher.id() as i32), Signal::SIGTERM).unwrap();
    let status = loop {
        if let Some(s) = launcher.try_wait().unwrap() {
            break s;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.code().is_some(), "{status:?}");
    // The launcher ends its strays (SIGTERM, ignored; SIGKILL after the scaled 25 s)
    // and sweeps before it exits: the orphan is gone, not left to the host's init.
    assert!(
        mur::descendants::stat(orphan).is_none_or(|p| p.is_zombie() && p.ppid != 1),
        "the orphan outlived the launcher: {:?}",
        mur::descendants::stat(orphan)
    );
}
