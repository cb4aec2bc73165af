//! No descendant left behind (docs/design/descendants.md), on real processes: each harness
//! starts a grandchild that double-forks, calls setsid and ignores SIGTERM, and each
//! kind of end must leave it gone. The grandchildren are found by the pid they write;
//! a test kills only those, by pidfd, when it expects one to survive.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mur::descendants::{self, Proc};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::{self, World};

const LIMIT: Duration = Duration::from_secs(30);

/// Shell that starts the escaping grandchild and waits until it runs: a subshell
/// backgrounds `setsid sh` and exits (the double fork); the grandchild ignores
/// SIGTERM, then writes its pid to `pidfile` and execs into sleep (same pid).
fn grandchild(pidfile: &Path) -> String {
    let p = pidfile.display();
    format!(
        "( setsid sh -c 'trap \"\" TERM; echo $$ > \"{p}.tmp\"; mv \"{p}.tmp\" \"{p}\"; exec sleep 600' </dev/null >/dev/null 2>&1 & )\nwhile [ ! -e '{p}' ]; do sleep 0.01; done\n"
    )
}

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

/// The grandchild named by `pidfile`, once written.
fn await_grandchild(pidfile: &Path) -> Proc {
    let until = Instant::now() + LIMIT;
    loop {
        if let Some(p) = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .and_then(descendants::stat)
        {
            return p;
        }
        assert!(Instant::now() < until, "no grandchild in {pidfile:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Gone: no such process, a zombie, or a later process with its pid.
fn gone(p: &Proc) -> bool {
    descendants::stat(p.pid).is_none_or(|now| now.is_zombie() || now.start != p.start)
}

fn assert_gone_within(p: &Proc, limit: Duration, what: &str) -> Duration {
    let start = Instant::now();
    while !gone(p) {
        assert!(
            start.elapsed() < limit,
            "{what}: grandchild {} still running after {limit:?}",
            p.pid
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

/// A test's own leftover, killed by pidfd (never a reused pid).
fn kill_leftover(p: &Proc) {
    let pinned = descendants::pin_tree(p.pid, true)
        .into_iter()
        .filter(|(q, _)| q.pid == p.pid && q.start == p.start)
        .collect::<Vec<_>>();
    descendants::kill_pinned(&pinned, Instant::now() + Duration::from_secs(5));
}

#[test]
fn a_session_s_end_leaves_no_grandchild() {
    let w = World::new();
    support::write_capsule(&w.proj, "gc", "0.1.0");
    let pidfile = w.path("gc.pid");
    write_harness(
        &w.proj,
        &format!(
            "IFS= read -r task\n{}echo '{{\"type\":\"message\",\"text\":\"done\"}}'\n",
            grandchild(&pidfile)
        ),
    );
    let out = w.mur().args(["run", "--task", "go"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let gc = await_grandchild(&pidfile);
    // The session has exited: the grandchild is already gone, not merely going.
    assert!(gone(&gc), "grandchild {} outlived its session", gc.pid);
}

/// `mur new --roster team`, both members on process harnesses: `lead` starts a
/// grandchild and calls `helper`, whose harness starts one too and works for ten
/// minutes.
struct Team {
    world: World,
    project: PathBuf,
}

fn team() -> Team {
    let world = World::new();
    let ok = |cmd: &mut Command| {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ok(mur(&world.home)
        .args(["new", "--roster", "team"])
        .current_dir(&world.root));
    let project = world.root.join("team");
    write_harness(
        &project.join("lead"),
        &format!(
            "IFS= read -r task\n{}echo '{{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"call-member\",\"arguments\":{{\"member\":\"helper\",\"task\":\"hold\"}}}}'\nIFS= read -r result\nexec sleep 600\n",
            grandchild(&world.root.join("lead.pid"))
        ),
    );
    write_harness(
        &project.join("helper"),
        &format!(
            "IFS= read -r task\n{}sleep 600\necho '{{\"type\":\"message\",\"text\":\"done\"}}'\n",
            grandchild(&world.root.join("helper.pid"))
        ),
    );
    ok(mur(&world.home)
        .args(["install", "lead", "helper"])
        .current_dir(&project));
    Team { world, project }
}

fn mur(home: &Path) -> Command {
    let mut cmd = support::mur();
    cmd.env("HOME", home).stdin(Stdio::null());
    cmd
}

impl Team {
    /// The launcher, in a process group of its own, running `--task`; returns it
    /// with both grandchildren once they run.
    fn launch(&self) -> (Child, Proc, Proc) {
        let launcher = mur(&self.world.home)
            .args(["run", "--roster", "--task", "Work."])
            .current_dir(&self.project)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let lead = await_grandchild(&self.world.root.join("lead.pid"));
        let helper = await_grandchild(&self.world.root.join("helper.pid"));
        (launcher, lead, helper)
    }

    fn member_pid(&self, member: &str) -> i32 {
        let dir = self.world.home.join(".murmur/running");
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "json")
                && let Ok(v) = serde_json::from_slice::<Value>(&std::fs::read(e.path()).unwrap())
                && v["formation_member"] == member
            {
                return v["pid"].as_i64().unwrap() as i32;
            }
        }
        panic!("no running record for {member}");
    }
}

#[test]
fn kill_9_of_the_launcher_leaves_no_grandchild() {
    let t = team();
    let (mut launcher, lead, helper) = t.launch();
    kill(Pid::from_raw(launcher.id() as i32), Signal::SIGKILL).unwrap();
    launcher.wait().unwrap();
    // Each member's lifeline closes; it winds down and sweeps what it started.
    assert_gone_within(&lead, LIMIT, "kill -9 launcher (lead)");
    let took = assert_gone_within(&helper, LIMIT, "kill -9 launcher (helper)");
    eprintln!("kill -9 launcher: grandchildren gone after {took:?}");
}

#[test]
fn kill_9_of_the_entry_member_leaves_no_grandchild() {
    let t = team();
    let (mut launcher, lead, helper) = t.launch();
    kill(Pid::from_raw(t.member_pid("lead")), Signal::SIGKILL).unwrap();
    launcher.wait().unwrap();
    // The lead's grandchild reparented to the launcher, which swept it before exiting.
    assert!(
        gone(&lead),
        "the launcher exited, leaving the lead's grandchild"
    );
    assert_gone_within(&helper, LIMIT, "kill -9 lead (helper)");
}

#[test]
fn a_member_group_killed_at_25_s_leaves_no_grandchild() {
    let t = team();
    let (mut launcher, lead, helper) = t.launch();
    // A stopped helper cannot wind down: the launcher SIGKILLs its group at 25 s
    // (scaled), and sweeps what its harness left.
    let helper_pid = Pid::from_raw(t.member_pid("helper"));
    kill(helper_pid, Signal::SIGSTOP).unwrap();
    kill(Pid::from_raw(launcher.id() as i32), Signal::SIGTERM).unwrap();
    launcher.wait().unwrap();
    assert!(
        gone(&helper),
        "the launcher exited, leaving the helper's grandchild"
    );
    assert!(
        gone(&lead),
        "the launcher exited, leaving the lead's grandchild"
    );
}

#[test]
fn kill_9_of_the_launcher_s_group_leaves_no_peer_grandchild() {
    let t = team();
    let (mut launcher, lead, helper) = t.launch();
    killpg(Pid::from_raw(launcher.id() as i32), Signal::SIGKILL).unwrap();
    launcher.wait().unwrap();
    assert_gone_within(&helper, LIMIT, "kill -9 of the launcher's group (helper)");
    // The entry member died with the launcher, so nothing of mur is left to sweep its
    // grandchild: only a cgroup covers this case (docs/design/descendants.md).
    kill_leftover(&lead);
}

#[test]
fn kill_9_of_a_peer_leaves_no_grandchild_while_the_formation_runs() {
    let t = team();
    let (mut launcher, lead, helper) = t.launch();
    let launcher_pid = Pid::from_raw(launcher.id() as i32);
    kill(Pid::from_raw(t.member_pid("helper")), Signal::SIGKILL).unwrap();
    // The helper's grandchild reparented to the launcher: a stray, ended while the
    // formation goes on (SIGTERM, ignored, then SIGKILL 25 s later, scaled).
    let took = assert_gone_within(&helper, LIMIT, "kill -9 of a peer (helper)");
    eprintln!("kill -9 of a peer: its grandchild gone after {took:?}");
    assert!(
        launcher.try_wait().unwrap().is_none(),
        "the formation should still run"
    );
    assert!(
        !gone(&lead),
        "the lead's grandchild belongs to a live member"
    );
    kill(launcher_pid, Signal::SIGTERM).unwrap();
    launcher.wait().unwrap();
    assert!(gone(&lead));
}
