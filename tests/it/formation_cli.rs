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

use crate::support::session::wait_for;
use crate::support::{self, KillOnDrop, World};
use serde_json::Value;

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

/// `mur new --roster team`, installed; `alone`: the roster keeps only the entry member.
fn scaffolded_team(alone: bool) -> (World, std::path::PathBuf) {
    let w = World::new();
    let ok = crate::support::ok;
    ok(w.mur().args(["new", "--roster", "team"]));
    let project = w.proj.join("team");
    ok(w.mur_in(&project).args(["install", "lead", "helper"]));
    if alone {
        std::fs::write(
            project.join("roster.yaml"),
            "roster_version: 1\nmembers:\n  - name: lead\n    capsule: local/team-lead\n    version: 0.1.0\n    entry: true\n",
        )
        .unwrap();
        // A roster edited by hand is approved before it launches (docs/approval.md).
        ok(w.mur_in(&project).arg("approve"));
    }
    (w, project)
}

#[test]
fn stop_reaches_a_formation_that_has_no_formation_json() {
    // A roster with no peers makes no formation directory and no marker (1a).
    let (w, project) = scaffolded_team(true);
    let (mut launcher, ready) = w.launch_json(&project);
    let frm = ready["formation_id"].as_str().unwrap();
    assert!(!w.home.join(".murmur/formations").join(frm).exists());
    let stop = w.mur().args(["stop", frm]).output().unwrap();
    let stderr = String::from_utf8_lossy(&stop.stderr);
    assert_eq!(stop.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("the launcher of {frm} (pid {})", launcher.id())),
        "{stderr}"
    );
    let mut status = None;
    wait_for("the launcher to exit", || {
        status = launcher.try_wait().unwrap();
        status.is_some()
    });
    assert_eq!(status.unwrap().code(), Some(0));
    let again = w.mur().args(["stop", frm]).output().unwrap();
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already ended"));
}

#[test]
fn the_deadline_counts_from_the_launcher_s_start_not_the_end_of_admission() {
    // A large member makes admission take a while: it hashes every artifact (1b).
    let w = World::new();
    let ok = crate::support::ok;
    ok(w.mur().args(["new", "--roster", "team"]));
    let project = w.proj.join("team");
    let mut noise = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open("/dev/urandom").unwrap(), 12 << 20),
        &mut noise,
    )
    .unwrap();
    std::fs::write(project.join("helper/big.bin"), noise).unwrap();
    ok(w.mur_in(&project).args(["install", "lead", "helper"]));
    let t = std::time::Instant::now();
    ok(w.mur_in(&project).arg("doctor"));
    let admission = t.elapsed();
    let fakes = crate::support::fake::Fakes::new(&w.root, &[("lead", "exit:0")]);
    let deadline = Duration::from_secs(30);
    let before = std::time::SystemTime::now();
    let out = w
        .mur_in(&project)
        .args(["run", "--roster", "--task", "x", "--deadline", "30"])
        .env("MUR_TEST_MEMBER_PROGRAM", &fakes.program)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let since = |ms: &Value| {
        let at = std::time::UNIX_EPOCH + Duration::from_millis(ms.as_u64().unwrap());
        at.duration_since(before).unwrap_or_default()
    };
    for member in ["lead", "helper"] {
        let creds = &fakes.event(member, "started").unwrap()["credentials"];
        let told = since(&creds["deadline_unix_ms"]);
        // Counted from the launcher's start, the moment lies at most a little after
        // `before + 30 s`; counted from the end of admission, `admission` later.
        assert!(
            told < deadline + admission / 2,
            "{member} was told {told:?} after the launch began; admission took {admission:?}"
        );
        assert!(told >= deadline, "{member}: {told:?}");
    }
}

#[test]
fn a_formation_directory_removed_by_hand_takes_its_peers_traces_with_it() {
    let (w, project) = scaffolded_team(false);
    let out = w
        .mur_in(&project)
        .args(["run", "--roster", "--json", "--task", "Say hello."])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ready: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    let frm = ready["formation_id"].as_str().unwrap();
    let id = |i: usize| {
        ready["members"][i]["session_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (lead, helper) = (id(0), id(1));
    let show = |what: &str| w.mur().args(["trace", "show", what]).output().unwrap();
    let both = String::from_utf8_lossy(&show(frm).stdout).into_owned();
    assert!(both.contains(&lead) && both.contains(&helper), "{both}");
    // 1c: removed by hand, the peers' traces go with it.
    std::fs::remove_dir_all(w.home.join(".murmur/formations").join(frm)).unwrap();
    let after = show(frm);
    let text = String::from_utf8_lossy(&after.stdout);
    assert_eq!(after.status.code(), Some(0));
    assert!(!text.contains(&helper), "{text}");
    assert!(
        text.contains("session_start"),
        "the entry member's trace: {text}"
    );
    assert!(!text.contains("== "), "one session, no headers: {text}");
    let peer = show(&helper);
    assert_eq!(peer.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&peer.stderr).contains("E-RUN-003"));
    assert_eq!(show(&lead).status.code(), Some(0));
}
