//! `mur run --roster` as a user runs it: the real binary, a real installed roster,
//! real signals and SIGKILLs. Members are stand-ins (tests/fake) so that these tests
//! prove the launcher's own guarantees; the member side has its own tests.
//! MUR_TEST_TIME_SCALE (support::TIME_SCALE) turns the 25 s group kill into 1.25 s.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::fake::{Fakes, gone, wait_gone};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use crate::support::{self, KillOnDrop, World};

/// A scaffolded team installed in a world, its members stand-ins.
struct Team {
    world: World,
    project: PathBuf,
    fakes: Fakes,
}

impl std::ops::Deref for Team {
    type Target = World;
    fn deref(&self) -> &World {
        &self.world
    }
}

/// `mur new --roster team` and `mur install lead helper`, for real.
fn world(behaviours: &[(&str, &str)]) -> Team {
    let world = World::new();
    let root = world.root.clone();
    let ok = crate::support::ok;
    ok(world.mur_in(&root).args(["new", "--roster", "team"]));
    let project = root.join("team");
    ok(world.mur_in(&project).args(["install", "lead", "helper"]));
    let fakes = Fakes::new(&root, behaviours);
    Team {
        world,
        project,
        fakes,
    }
}

impl Team {
    fn launcher(&self, args: &[&str]) -> Command {
        let mut cmd = self.mur_in(&self.project);
        cmd.arg("run")
            .arg("--roster")
            .args(args)
            .env("MUR_TEST_MEMBER_PROGRAM", &self.fakes.program)
            .stdin(Stdio::null());
        cmd
    }

    /// Starts the launcher in a process group of its own, stderr to a file.
    fn start(&self, args: &[&str]) -> KillOnDrop {
        let stderr = std::fs::File::create(self.stderr_path()).unwrap();
        KillOnDrop::group(
            self.launcher(args)
                .stdout(Stdio::null())
                .stderr(stderr)
                .process_group(0)
                .spawn()
                .unwrap(),
        )
    }

    fn stderr_path(&self) -> PathBuf {
        self.root.join("launcher.stderr")
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr_path()).unwrap_or_default()
    }

    fn formations(&self) -> PathBuf {
        self.home.join(".murmur/formations")
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < until,
            "the launcher did not exit within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn a_signal_to_the_launcher_closes_every_lifeline() {
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        let w = world(&[]);
        let mut launcher = w.start(&[]);
        let members = [w.fakes.pid("lead"), w.fakes.pid("helper")];
        kill(Pid::from_raw(launcher.id() as i32), signal).unwrap();
        let status = wait_exit(&mut launcher, LIMIT);
        assert_eq!(
            status.code(),
            Some(0),
            "{signal}: the entry member wound down with 0"
        );
        for m in ["lead", "helper"] {
            assert!(
                w.fakes.event(m, "lifeline_closed").is_some(),
                "{signal}: {m}'s lifeline"
            );
        }
        wait_gone(&members, LIMIT);
    }
}

#[test]
fn kill_9_of_the_launcher_leaves_no_member_running() {
    let w = world(&[]);
    let mut launcher = w.start(&["--task", "work"]);
    let members = [w.fakes.pid("lead"), w.fakes.pid("helper")];
    kill(Pid::from_raw(launcher.id() as i32), Signal::SIGKILL).unwrap();
    launcher.wait().unwrap();
    let took = wait_gone(&members, LIMIT);
    eprintln!("teardown after kill -9 of the launcher: {took:?}");
    for m in ["lead", "helper"] {
        assert!(
            w.fakes.event(m, "lifeline_closed").is_some(),
            "{m} read EOF on its lifeline: {:?}",
            w.fakes.events(m)
        );
    }
}

#[test]
fn kill_9_of_the_entry_member_ends_the_formation() {
    let w = world(&[]);
    let mut launcher = w.start(&["--task", "work"]);
    let (lead, helper) = (w.fakes.pid("lead"), w.fakes.pid("helper"));
    kill(Pid::from_raw(lead), Signal::SIGKILL).unwrap();
    let status = wait_exit(&mut launcher, LIMIT);
    assert_eq!(
        status.code(),
        Some(137),
        "the entry member's status: killed by signal 9"
    );
    assert!(w.fakes.event("helper", "lifeline_closed").is_some());
    wait_gone(&[helper], LIMIT);
}

#[test]
fn kill_9_of_the_launcher_s_group_takes_the_entry_member_and_ends_the_peers() {
    let w = world(&[]);
    let mut launcher = w.start(&["--task", "work"]);
    let (lead, helper) = (w.fakes.pid("lead"), w.fakes.pid("helper"));
    killpg(Pid::from_raw(launcher.id() as i32), Signal::SIGKILL).unwrap();
    launcher.wait().unwrap();
    let took = wait_gone(&[lead, helper], LIMIT);
    eprintln!("teardown after kill -9 of the launcher's group: {took:?}");
    assert!(
        w.fakes.event("lead", "lifeline_closed").is_none(),
        "the entry member died with the group"
    );
    assert!(
        w.fakes.event("helper", "lifeline_closed").is_some(),
        "the peer wound down on EOF"
    );
}

#[test]
fn a_peer_that_ignores_its_lifeline_is_killed_with_its_group_after_the_grace() {
    let w = world(&[("lead", "exit:0"), ("helper", "ignore_lifeline")]);
    let mut launcher = w.start(&["--task", "work"]);
    let helper = w.fakes.pid("helper");
    let status = wait_exit(&mut launcher, LIMIT);
    let closed = w.fakes.wait_event("helper", "ignoring", LIMIT);
    assert!(closed["event"] == "ignoring");
    assert_eq!(status.code(), Some(0));
    assert!(
        gone(helper),
        "the launcher reaped the peer before it exited"
    );
}

#[test]
fn peer_diagnostics_reach_the_launcher_s_stderr_behind_its_name() {
    let w = world(&[("lead", "exit:0")]);
    let mut launcher = w.start(&["--task", "work"]);
    assert_eq!(wait_exit(&mut launcher, LIMIT).code(), Some(0));
    let stderr = w.stderr();
    assert!(
        stderr.lines().any(|l| l == "[helper] starting as helper"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("[lead]"),
        "the entry member writes to the stderr it shares: {stderr}"
    );
}

#[test]
fn a_deadline_before_the_entry_member_started_is_e_run_053() {
    let w = world(&[("helper", "silent")]);
    let mut launcher = w.start(&["--task", "work", "--deadline", "1"]);
    let status = wait_exit(&mut launcher, LIMIT);
    assert_eq!(status.code(), Some(1));
    assert!(w.stderr().contains("error[E-RUN-053]"), "{}", w.stderr());
    assert!(
        w.fakes.event("lead", "started").is_none(),
        "the entry member never starts"
    );
    // The launcher reaps every member it started before it exits (a slow peer may have
    // been killed before it logged anything).
    if let Some(started) = w.fakes.event("helper", "started") {
        assert!(gone(started["pid"].as_i64().unwrap() as i32));
    }
}

#[test]
fn a_peer_that_never_reports_refuses_the_launch_with_e_run_045() {
    let w = world(&[("helper", "garbage")]);
    let out = w.launcher(&["--task", "work"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error[E-RUN-045]: peer `helper` did not come up"),
        "{stderr}"
    );
    assert!(w.fakes.event("lead", "started").is_none());
}

#[test]
fn a_formation_member_refuses_to_launch_a_formation() {
    let w = world(&[]);
    let out = w
        .launcher(&["--task", "x"])
        .env("MURMUR_FORMATION_ID", "frm_x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[E-RUN-046]"));
    assert!(!w.formations().exists(), "nothing was launched");
}

#[test]
fn roster_with_resume_exits_2() {
    let w = world(&[]);
    let out = w.launcher(&["--resume", "ses_x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!w.formations().exists());
}

#[test]
fn a_refused_roster_starts_nothing() {
    let w = world(&[]);
    std::fs::remove_dir_all(w.project.join(".murmur")).unwrap();
    let out = w.launcher(&["--task", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[E-ROS-007]"));
    assert!(!w.formations().exists());
    assert!(w.fakes.event("helper", "started").is_none());
}

#[test]
fn retention_removes_the_oldest_formation_with_the_spec_s_line() {
    let w = world(&[("lead", "exit:0")]);
    let manifest = w.project.join("lead/murmur.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        format!("{text}\ntrace:\n  retain:\n    max_sessions: 1\n"),
    )
    .unwrap();
    let out = support::mur()
        .args(["install", "--force", "lead"])
        .current_dir(&w.project)
        .env("HOME", &w.home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = w.launcher(&["--task", "one"]).output().unwrap();
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let ids = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    let before = ids(&w.formations());
    assert_eq!(before.len(), 1);
    let second = w.launcher(&["--task", "two"]).output().unwrap();
    assert_eq!(second.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&second.stderr);
    let line = format!(
        "[mur run] retention: removed formation {} (max_sessions)",
        before[0]
    );
    assert!(stderr.lines().any(|l| l == line), "{stderr}");
    assert!(
        second.stdout.is_empty() || !String::from_utf8_lossy(&second.stdout).contains("retention")
    );
    let after = ids(&w.formations());
    assert_eq!(after.len(), 1);
    assert_ne!(
        after, before,
        "the current formation's directory outlives its launch"
    );
}
