//! No descendant left behind (docs/design/descendants.md), on real processes: each harness
//! starts a grandchild that double-forks, calls setsid and ignores SIGTERM, and each
//! kind of end must leave it gone. The grandchildren are found by the pid and start
//! time they write, so a test need not catch one alive; a test kills only those, by
//! pidfd, when it expects one to survive.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mur::descendants::{self, Proc};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::{self, KillOnDrop, World};

const LIMIT: Duration = Duration::from_secs(30);

/// Shell that starts the escaping grandchild and waits until it runs: a subshell
/// backgrounds `setsid sh` and exits (the double fork); the grandchild ignores
/// SIGTERM, then writes its pid and start time (field 22 of its /proc/<pid>/stat) to
/// `pidfile` and execs into sleep (same pid, same start time). The record names the
/// grandchild even once it is gone: a test need not catch it alive, which it cannot
/// when mur kills it first. `pidfile` is in a folder the confined harness may write
/// (its work folder), and may name `$MURMUR_WORKDIR`, which both shells expand.
fn grandchild(pidfile: &Path) -> String {
    let p = pidfile.display();
    format!(
        "( setsid sh -c 'trap \"\" TERM; read -r s < /proc/$$/stat; set -- $s; shift 21; echo \"$$ $1\" > \"{p}.tmp\"; mv \"{p}.tmp\" \"{p}\"; exec sleep 600' </dev/null >/dev/null 2>&1 & )\nwhile [ ! -e \"{p}\" ]; do sleep 0.01; done\n"
    )
}

/// The file `name` a formation peer `member` wrote in its own work folder
/// (`~/.murmur/formations/<frm_id>/<member>/`), once there.
fn peer_file(home: &Path, member: &str, name: &str) -> PathBuf {
    let until = Instant::now() + LIMIT;
    loop {
        let found = std::fs::read_dir(home.join(".murmur/formations"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join(member).join(name))
            .find(|p| p.exists());
        if let Some(p) = found {
            return p;
        }
        assert!(Instant::now() < until, "no {name} of {member}");
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// The grandchild recorded in `pidfile`, once written: as it runs, or, when it is
/// already gone (mur may kill it before the test looks), as recorded, in state `X`.
fn await_grandchild(pidfile: &Path) -> Proc {
    let until = Instant::now() + LIMIT;
    loop {
        // Written whole (renamed into place), so a file there is a whole record.
        if let Ok(text) = std::fs::read_to_string(pidfile) {
            let mut fields = text.split_whitespace().map(|f| f.parse::<u64>());
            let (Some(Ok(pid)), Some(Ok(start)), None) =
                (fields.next(), fields.next(), fields.next())
            else {
                panic!("{pidfile:?} holds {text:?}, not `<pid> <start>`");
            };
            let pid = u32::try_from(pid).unwrap();
            return descendants::stat(pid)
                .filter(|now| now.start == start)
                .unwrap_or(Proc {
                    pid,
                    ppid: 0,
                    pgid: 0,
                    state: 'X',
                    start,
                });
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
    // In the work folder: a confined harness writes nowhere else.
    let pidfile = w.proj.join("gc.pid");
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

/// A harness that exits after answering leaves its setsid'd grandchild reparented to
/// the session, which lives on (it sleeps between tasks): the task's end kills it,
/// however the session's children are cloned (`MUR_TEST_SPAWN_VIA`).
#[rstest::rstest]
fn a_harness_that_exits_after_answering_leaves_nothing_at_the_task_s_end(
    #[values(None, Some("fork-clone3"), Some("clone"))] via: Option<&str>,
) {
    use crate::support::session::{Session, rpc};
    let w = World::new();
    // In the work folder: a confined harness writes nowhere else.
    let pidfile = w.proj.join("gc.pid");
    w.install(
        "quitter",
        "",
        Some(&format!(
            "IFS= read -r task\n{}echo '{{\"type\":\"message\",\"text\":\"done\"}}'\nexit 0\n",
            grandchild(&pidfile)
        )),
    );
    let mut cmd = w.run("quitter");
    cmd.arg("--json");
    if let Some(via) = via {
        cmd.env("MUR_TEST_SPAWN_VIA", via);
    }
    let s = Session::spawn(cmd);
    let ready = s.ready();
    let id = ready["session_id"].as_str().unwrap().to_string();
    let door = ready["door"].as_str().unwrap().to_string();
    let sent = rpc(
        &door,
        &w.token(&id),
        "SendMessage",
        serde_json::json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "go"}]}}),
    );
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    // Written before the answer; the grandchild may already be gone (mur's stop can
    // beat the test here), and its record still names it.
    let gc = await_grandchild(&pidfile);
    // The task has ended; what its harness left goes with it (the transport's stop, a
    // moment after the answer), while the session lives on. Unfixed, it lived until
    // the session's end.
    let until = Instant::now() + Duration::from_secs(10);
    while !gone(&gc) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let outlived = !gone(&gc);
    if outlived {
        kill_leftover(&gc);
    }
    assert!(
        !outlived,
        "grandchild {} outlived its task (the harness exited first)",
        gc.pid
    );
    assert!(
        descendants::stat(s.child.id()).is_some_and(|p| !p.is_zombie()),
        "the session sleeps on after its task"
    );
    s.signal(Signal::SIGTERM);
    s.wait(LIMIT);
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
            grandchild(&project.join("lead.pid"))
        ),
    );
    write_harness(
        &project.join("helper"),
        &format!(
            "IFS= read -r task\n{}sleep 600\necho '{{\"type\":\"message\",\"text\":\"done\"}}'\n",
            grandchild(Path::new("$MURMUR_WORKDIR/helper.pid"))
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
    fn launch(&self) -> (KillOnDrop, Proc, Proc) {
        let launcher = mur(&self.world.home)
            .args(["run", "--roster", "--task", "Work."])
            .current_dir(&self.project)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let launcher = KillOnDrop::group(launcher);
        let lead = await_grandchild(&self.project.join("lead.pid"));
        let helper = await_grandchild(&peer_file(&self.world.home, "helper", "helper.pid"));
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

/// Whether this process may make a cgroup v2 below its own with `cgroup.kill` (root
/// on this project's machines; an ordinary user without delegation may not).
fn cgroup_writable() -> bool {
    let Some(own) = mur::cgroup::own_dir() else {
        return false;
    };
    let probe = own.join(format!("murmur-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    let kill = made && probe.join("cgroup.kill").is_file();
    if made {
        let _ = std::fs::remove_dir(&probe);
    }
    kill
}

/// The formation's cgroup and its watcher (a child of the launcher running `mur
/// formation-watch --cgroup <dir>`), when the launcher made one.
fn formation_cgroup(launcher: u32) -> Option<(PathBuf, Proc)> {
    let (watcher, cmdline) = descendants::table().into_iter().find_map(|p| {
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", p.pid)).ok()?;
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        (p.ppid == launcher && args.iter().any(|a| a == "formation-watch")).then_some((p, args))
    })?;
    let dir = cmdline
        .iter()
        .skip_while(|a| *a != "--cgroup")
        .nth(1)
        .map(PathBuf::from)?;
    Some((dir, watcher))
}

/// The cgroup v2 of process `pid`, by name (the last part of its `0::` line).
fn cgroup_name(pid: u32) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap_or("");
    path.rsplit('/').next().unwrap_or("").to_string()
}

/// The spec's 30 s teardown bound as the tests scale it, with 1 s of slack for the
/// loaded machine the suite runs on.
fn scaled_bound() -> Duration {
    let scale: f64 = support::TIME_SCALE.parse().unwrap();
    mur::timing::TEARDOWN_BOUND.mul_f64(scale) + Duration::from_secs(1)
}

#[test]
fn kill_9_of_the_launcher_s_group_leaves_no_grandchild() {
    let t = team();
    let mut decoy = Command::new("sleep").arg("600").spawn().unwrap();
    let decoy_proc = descendants::stat(decoy.id()).unwrap();
    let (mut launcher, lead, helper) = t.launch();
    let contained = formation_cgroup(launcher.id());
    if contained.is_none() {
        assert!(
            !cgroup_writable(),
            "a cgroup v2 is writable here, yet the launcher made none"
        );
    }
    killpg(Pid::from_raw(launcher.id() as i32), Signal::SIGKILL).unwrap();
    let killed = Instant::now();
    launcher.wait().unwrap();
    assert_gone_within(&helper, LIMIT, "kill -9 of the launcher's group (helper)");
    let Some((dir, watcher)) = contained else {
        // The entry member died with the launcher and nothing of mur is left to sweep
        // its grandchild: only a cgroup covers this case (docs/design/descendants.md).
        eprintln!(
            "SKIPPED the entry member's grandchild: no writable cgroup v2 here (docs/design/descendants.md)"
        );
        kill_leftover(&lead);
        decoy.kill().unwrap();
        decoy.wait().unwrap();
        return;
    };
    // The watcher, outside the formation's cgroup, outlived the group kill; it gives
    // what is left 25 s (scaled), then kills the cgroup.
    let bound = scaled_bound().saturating_sub(killed.elapsed());
    assert_gone_within(&lead, bound, "kill -9 of the launcher's group (lead)");
    eprintln!(
        "kill -9 of the launcher's group: the entry member's grandchild gone after {:?}",
        killed.elapsed()
    );
    assert_gone_within(&watcher, LIMIT, "the watcher after its kill");
    assert!(!dir.exists(), "the watcher left {dir:?}");
    // Nothing outside the formation's cgroup was killed.
    assert!(
        decoy.try_wait().unwrap().is_none() && !gone(&decoy_proc),
        "a process outside the formation was killed"
    );
    decoy.kill().unwrap();
    decoy.wait().unwrap();
}

#[test]
fn a_normal_end_leaves_no_cgroup_and_no_watcher() {
    if !cgroup_writable() {
        eprintln!("SKIPPED: no writable cgroup v2 here (docs/design/descendants.md)");
        return;
    }
    let t = team();
    let (mut launcher, lead, helper) = t.launch();
    let (dir, watcher) = formation_cgroup(launcher.id())
        .expect("a cgroup v2 is writable, yet the launcher made none");
    assert!(dir.is_dir());
    // The members' grandchildren were started inside it; the launcher and its watcher
    // stay outside, so no cgroup.kill of the formation's reaches them.
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    assert_eq!(cgroup_name(lead.pid), name, "the lead's grandchild");
    assert_eq!(cgroup_name(helper.pid), name, "the helper's grandchild");
    assert_ne!(cgroup_name(launcher.id()), name, "the launcher");
    assert_ne!(cgroup_name(watcher.pid), name, "the watcher");
    kill(Pid::from_raw(launcher.id() as i32), Signal::SIGTERM).unwrap();
    launcher.wait().unwrap();
    // The launcher removed its cgroup before it exited; its watcher then exits.
    assert!(!dir.exists(), "the launcher left {dir:?}");
    assert_gone_within(
        &watcher,
        Duration::from_secs(5),
        "the watcher after a normal end",
    );
    assert!(gone(&lead) && gone(&helper));
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

/// The cgroup `dir`, made and `flock`ed as a launcher holds its own (a sweep passes
/// it by); made again if a sweep took it between the two.
fn made_locked(dir: &Path) -> std::fs::File {
    let until = Instant::now() + LIMIT;
    loop {
        let _ = std::fs::create_dir(dir);
        if let Ok(f) = std::fs::File::open(dir) {
            rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive).unwrap();
            // No one else makes this name: still there, it is the one locked.
            if dir.is_dir() {
                return f;
            }
        }
        assert!(Instant::now() < until, "cannot make {dir:?}");
    }
}

#[test]
fn a_launch_removes_empty_formation_cgroups_left_beside_it_and_only_those() {
    if !cgroup_writable() {
        eprintln!("SKIPPED: no writable cgroup v2 here (docs/design/descendants.md)");
        return;
    }
    let own = mur::cgroup::own_dir().unwrap();
    let me = std::process::id();
    // Each made under its lock: a launch in a test process beside this one (nextest
    // runs each test in a process of its own, all in one cgroup) sweeps the same
    // parent, and would take a cgroup made here before the test has set it up.
    // What a killed watcher left: an empty formation cgroup, with an empty one below.
    let left = own.join(format!("{}leftover{me}", mur::cgroup::PREFIX));
    let setting_up = made_locked(&left);
    std::fs::create_dir(left.join(format!("{}inner", mur::cgroup::PREFIX))).unwrap();
    drop(setting_up);
    // A live formation's before its first member: empty, but its launcher holds its lock.
    let locked = own.join(format!("{}locked{me}", mur::cgroup::PREFIX));
    let lock = made_locked(&locked);
    // A formation cgroup something runs in, and a cgroup not named for a formation.
    let busy = own.join(format!("{}busy{me}", mur::cgroup::PREFIX));
    let other = own.join(format!("murmur-other{me}"));
    let setting_up = made_locked(&busy);
    std::fs::create_dir(&other).unwrap();
    let mut sleeper = Command::new("sleep").arg("600").spawn().unwrap();
    std::fs::write(busy.join("cgroup.procs"), sleeper.id().to_string()).unwrap();
    drop(setting_up);

    mur::cgroup::remove_leftovers(&own);
    let (busy_stayed, other_stayed, locked_stayed) =
        (busy.is_dir(), other.is_dir(), locked.is_dir());
    drop(lock);
    let _ = std::fs::remove_dir(&locked);
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let _ = std::fs::remove_dir(&other);
    let until = Instant::now() + LIMIT;
    while std::fs::remove_dir(&busy).is_err() && busy.exists() {
        assert!(Instant::now() < until, "cannot remove {busy:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!left.exists(), "the empty leftover {left:?} stayed");
    assert!(
        busy_stayed,
        "a formation cgroup something ran in was removed"
    );
    assert!(
        other_stayed,
        "a cgroup not named for a formation was removed"
    );
    assert!(
        locked_stayed,
        "an empty formation cgroup its launcher holds locked was removed"
    );
}

#[test]
fn kill_9_of_the_launcher_with_a_stopped_member_leaves_nothing() {
    if !cgroup_writable() {
        eprintln!("SKIPPED: no writable cgroup v2 here (docs/design/descendants.md)");
        return;
    }
    let t = team();
    let (mut launcher, lead, helper) = t.launch();
    let (dir, watcher) = formation_cgroup(launcher.id()).expect("no formation cgroup");
    // A stopped helper cannot wind down, and its launcher, which would group-kill it
    // at 25 s, is dead: the watcher kills what is left in the cgroup at 25 s (scaled).
    let helper_member = descendants::stat(t.member_pid("helper") as u32).unwrap();
    kill(Pid::from_raw(helper_member.pid as i32), Signal::SIGSTOP).unwrap();
    kill(Pid::from_raw(launcher.id() as i32), Signal::SIGKILL).unwrap();
    let killed = Instant::now();
    launcher.wait().unwrap();
    let bound = scaled_bound();
    for (p, what) in [
        (&helper_member, "the stopped helper"),
        (&helper, "its grandchild"),
    ] {
        assert_gone_within(p, bound.saturating_sub(killed.elapsed()), what);
    }
    assert_gone_within(&lead, LIMIT, "the lead's grandchild");
    assert_gone_within(&watcher, LIMIT, "the watcher after its kill");
    assert!(!dir.exists(), "the watcher left {dir:?}");
}
