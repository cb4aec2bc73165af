//! How a formation ends, with real SIGKILLs, a real OOM kill and real signals
//! (spec: "How a formation ends"). Each scenario runs in its own container and
//! asserts from outside the launcher that nothing is left within 30 s.

use std::time::Duration;

use anyhow::{Result, bail, ensure};

use crate::container::{Config, Sandbox};
use crate::formation::{self, Launch, Members, events, fault, field, wait_event};
use crate::procs::{self, Teardown};
use crate::report::Measured;

/// The spec's bound: no member of a killed formation is left after this long.
pub const BOUND: f64 = 30.0;
/// A launcher closes a lifeline, then SIGKILLs the member's group this long after.
pub const GROUP_KILL: f64 = 25.0;

/// A formation up and running in its own container: every member started.
pub struct Running {
    pub sb: Sandbox,
    pub launch: Launch,
    /// (member, pid, pgid) in start order, the entry member last.
    pub members: Vec<(String, u32, u32)>,
}

/// Starts `roster` (stand-in members behaving as `behaviours`) and waits until the
/// entry member `lead` has started, which the launcher does only once every peer
/// is ready.
pub async fn start(
    scenario: &str,
    roster: &str,
    peers: &[&str],
    behaviours: &str,
    args: &[&str],
    config: Config,
    extra_env: &[(&'static str, String)],
) -> Result<Running> {
    let sb = Sandbox::start(scenario, config).await?;
    formation::setup(&sb, roster, roster).await?;
    run(sb, roster, peers, behaviours, args, extra_env).await
}

/// Launches `roster` in a container already set up, as [`start`] does.
pub async fn run(
    sb: Sandbox,
    roster: &str,
    peers: &[&str],
    behaviours: &str,
    args: &[&str],
    extra_env: &[(&'static str, String)],
) -> Result<Running> {
    let mut env = Members::StandIn.env(behaviours);
    env.extend(extra_env.iter().cloned());
    let launch = formation::launch(&sb, "launcher", roster, args, &env).await?;
    let mut members = Vec::new();
    for name in peers.iter().chain(["lead"].iter()) {
        let started = match wait_event(&sb, name, "started", Duration::from_secs(60)).await {
            Ok(e) => e,
            Err(e) => bail!("{e}; launcher stderr: {}", launch.stderr(&sb).await),
        };
        let (Some(pid), Some(pgid)) = (field(&started, "pid"), field(&started, "pgid")) else {
            bail!("{name}: no pid in {started:?}");
        };
        members.push((name.to_string(), pid, pgid));
    }
    Ok(Running {
        sb,
        launch,
        members,
    })
}

impl Running {
    pub fn pid(&self, name: &str) -> u32 {
        self.members.iter().find(|m| m.0 == name).map_or(0, |m| m.1)
    }

    pub fn pgid(&self, name: &str) -> u32 {
        self.members.iter().find(|m| m.0 == name).map_or(0, |m| m.2)
    }

    /// The process groups the spec gives: each peer leads its own, and the entry
    /// member stays in the launcher's (the `docker exec`'d launcher leads its own).
    pub fn check_groups(&self) -> Result<()> {
        for (name, pid, pgid) in &self.members {
            if name == "lead" {
                ensure!(
                    *pgid == self.launch.pid,
                    "the entry member's group is {pgid}, not the launcher's {}",
                    self.launch.pid
                );
            } else {
                ensure!(pgid == pid, "peer {name} is in group {pgid}, not its own");
            }
        }
        Ok(())
    }

    /// Fails unless the detector found nothing left within the bound.
    pub async fn require_gone(&self, t: &Teardown) -> Result<f64> {
        match t.gone_after {
            Some(s) => Ok(s),
            None => bail!(
                "left after {BOUND} s: {}; launcher stderr: {}",
                t.left
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join("; "),
                self.launch.stderr(&self.sb).await
            ),
        }
    }

    /// A member wound down on its own: it saw its lifeline close, then exited 0.
    pub async fn wound_down(&self, name: &str) -> Result<()> {
        let ev = events(&self.sb, name).await?;
        let closed = ev
            .iter()
            .position(|e| e.text.starts_with("lifeline_closed"));
        let exited = ev.iter().position(|e| e.text == "exit 0");
        match (closed, exited) {
            (Some(c), Some(x)) if c < x => Ok(()),
            _ => bail!("member {name} did not wind down on its lifeline: {ev:?}"),
        }
    }

    /// A member that was killed wrote no exit of its own.
    pub async fn killed(&self, name: &str) -> Result<()> {
        let ev = events(&self.sb, name).await?;
        ensure!(
            !ev.iter().any(|e| e.text.starts_with("exit")),
            "member {name} was to be killed, yet it exited: {ev:?}"
        );
        Ok(())
    }

    pub async fn launcher_exit(&self, expected: i64) -> Result<()> {
        let code = self.launch.wait_exit(Duration::from_secs(40)).await?;
        ensure!(
            code == expected,
            "the launcher exited {code}, not {expected}; stderr: {}",
            self.launch.stderr(&self.sb).await
        );
        Ok(())
    }
}

const PEERS: &[&str] = &["coder", "reviewer"];

/// kill -KILL the launcher: the kernel closes every lifeline; every member winds down.
pub async fn kill_launcher() -> Result<Measured> {
    let f = start(
        "kill-launcher",
        "trio",
        PEERS,
        "",
        &[],
        Config::default(),
        &[],
    )
    .await?;
    f.check_groups()?;
    let at = fault(&f.sb, "KILL", &f.launch.pid.to_string()).await?;
    let t = procs::wait_all_gone(&f.sb, at, BOUND).await?;
    let gone = f.require_gone(&t).await?;
    for m in ["coder", "reviewer", "lead"] {
        f.wound_down(m).await?;
    }
    f.launcher_exit(137).await?;
    Ok(Measured {
        teardown: Some(gone),
        note: "launcher SIGKILLed: 2 peers + entry read lifeline EOF and exited 0".into(),
    })
}

/// kill -KILL the entry member: the launcher closes every peer's lifeline and exits
/// with the entry member's status.
pub async fn kill_entry() -> Result<Measured> {
    let f = start("kill-entry", "trio", PEERS, "", &[], Config::default(), &[]).await?;
    let at = fault(&f.sb, "KILL", &f.pid("lead").to_string()).await?;
    let t = procs::wait_all_gone(&f.sb, at, BOUND).await?;
    let gone = f.require_gone(&t).await?;
    f.killed("lead").await?;
    for m in PEERS {
        f.wound_down(m).await?;
    }
    f.launcher_exit(137).await?;
    Ok(Measured {
        teardown: Some(gone),
        note: "entry SIGKILLed: launcher closed both peers' lifelines, exited 137".into(),
    })
}

/// kill -KILL the launcher's process group: the launcher and the entry member die
/// together; the peers, each in a group of its own, wind down on their lifelines.
pub async fn kill_group() -> Result<Measured> {
    let f = start("kill-group", "trio", PEERS, "", &[], Config::default(), &[]).await?;
    f.check_groups()?;
    let target = format!("-{}", f.pgid("lead"));
    let at = fault(&f.sb, "KILL", &target).await?;
    let t = procs::wait_all_gone(&f.sb, at, BOUND).await?;
    let gone = f.require_gone(&t).await?;
    f.killed("lead").await?;
    for m in PEERS {
        f.wound_down(m).await?;
    }
    f.launcher_exit(137).await?;
    Ok(Measured {
        teardown: Some(gone),
        note: "launcher's group SIGKILLed (launcher + entry); peers wound down".into(),
    })
}

/// Seconds after the entry member started that the launcher starts to grow: time for
/// the harness to see the formation up and then leave the container alone.
pub const BALLOON_AFTER: u32 = 6;

/// The cgroup's OOM-kill counter: v1 memory.oom_control or v2 memory.events.
pub async fn oom_kills(sb: &Sandbox) -> Result<u64> {
    let out = sb
        .probe_sh(
            "for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do \
             [ -r $f ] && grep '^oom_kill ' $f && exit 0; done; exit 1",
        )
        .await?
        .ok()?;
    Ok(out
        .stdout
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .parse()?)
}

/// The OOM killer kills the launcher under the container's memory limit
/// (MUR_TEST_LAUNCHER_BALLOON makes the launcher grow a few seconds after the entry
/// member started). While it grows nothing is run in the container: the launcher's
/// end is awaited through the engine, so no probe can trigger a second OOM kill.
pub async fn oom_launcher() -> Result<Measured> {
    const LIMIT: i64 = 96 << 20;
    let sb = Sandbox::start(
        "oom-launcher",
        Config {
            memory: Some(LIMIT),
            ..Config::default()
        },
    )
    .await?;
    formation::setup(&sb, "trio", "trio").await?;
    let before = oom_kills(&sb).await?;
    let f = run(
        sb,
        "trio",
        PEERS,
        "",
        &[],
        &[("MUR_TEST_LAUNCHER_BALLOON", BALLOON_AFTER.to_string())],
    )
    .await?;
    f.launcher_exit(137).await?;
    // The kernel closed every lifeline as the launcher died: the first stand-in to
    // see its lifeline close marks the moment.
    let mut died = f64::MAX;
    for m in ["coder", "reviewer", "lead"] {
        let e = wait_event(&f.sb, m, "lifeline_closed", Duration::from_secs(30)).await?;
        died = died.min(e.at);
    }
    let t = procs::wait_all_gone(&f.sb, died, BOUND).await?;
    let gone = f.require_gone(&t).await?;
    let kills = oom_kills(&f.sb).await?;
    ensure!(
        kills == before + 1,
        "the cgroup counted {} OOM kills, not the launcher's one",
        kills - before
    );
    for m in ["coder", "reviewer", "lead"] {
        f.wound_down(m).await?;
    }
    Ok(Measured {
        teardown: Some(gone),
        note: format!(
            "OOM killer took the launcher (cgroup oom_kill {kills}, limit {} MiB); all wound down",
            LIMIT >> 20
        ),
    })
}

/// SIGTERM to the launcher while the entry member works: every lifeline closes, the
/// entry member's included, and the launcher exits with the entry member's status.
pub async fn sigterm_launcher() -> Result<Measured> {
    let f = start(
        "sigterm-launcher",
        "trio",
        PEERS,
        "",
        &["--task", "Write the report."],
        Config::default(),
        &[],
    )
    .await?;
    let at = fault(&f.sb, "TERM", &f.launch.pid.to_string()).await?;
    let t = procs::wait_all_gone(&f.sb, at, BOUND).await?;
    let gone = f.require_gone(&t).await?;
    for m in ["coder", "reviewer", "lead"] {
        f.wound_down(m).await?;
    }
    f.launcher_exit(0).await?;
    Ok(Measured {
        teardown: Some(gone),
        note: "SIGTERM: every lifeline closed, all exited 0, launcher exited 0".into(),
    })
}

/// A peer that ignores its lifeline and SIGTERM: the launcher SIGKILLs its whole
/// process group 25 s after closing its lifeline, and not before.
pub async fn stubborn_peer() -> Result<Measured> {
    let f = start(
        "stubborn-peer",
        "stubborn",
        &["coder", "stubborn"],
        "stubborn=ignore",
        &[],
        Config::default(),
        &[],
    )
    .await?;
    // The entry member completes: the formation ends, every peer's lifeline closes.
    fault(&f.sb, "USR1", &f.pid("lead").to_string()).await?;
    let ended = wait_event(&f.sb, "lead", "exit 0", Duration::from_secs(10))
        .await?
        .at;
    let t = procs::wait_all_gone(&f.sb, ended, BOUND).await?;
    let gone = f.require_gone(&t).await?;
    f.wound_down("coder").await?;
    wait_event(
        &f.sb,
        "stubborn",
        "lifeline_closed (ignored)",
        Duration::ZERO,
    )
    .await?;
    f.killed("stubborn").await?;
    ensure!(
        gone >= GROUP_KILL - 0.5,
        "the stubborn peer was gone after {gone:.2} s, before the 25 s group kill"
    );
    f.launcher_exit(0).await?;
    Ok(Measured {
        teardown: Some(gone),
        note: "peer ignoring lifeline+SIGTERM: its group SIGKILLed at 25 s, not before".into(),
    })
}

/// The control that must fail: a peer that ignores its lifeline, with its launcher
/// SIGKILLed, has nobody left to kill it. The detector must report it as left over,
/// so a pass of the scenarios above is never vacuous.
pub async fn control_leftover() -> Result<Measured> {
    let f = start(
        "control-leftover",
        "trio",
        PEERS,
        "coder=ignore",
        &[],
        Config::default(),
        &[],
    )
    .await?;
    let at = fault(&f.sb, "KILL", &f.launch.pid.to_string()).await?;
    let t = procs::wait_all_gone(&f.sb, at, BOUND).await?;
    let coder = f.pid("coder");
    ensure!(
        t.gone_after.is_none(),
        "the detector saw nothing left after {:?} s, yet the coder ignores its lifeline",
        t.gone_after
    );
    ensure!(
        t.left.iter().any(|p| p.pid == coder && p.member),
        "the detector did not report the surviving member {coder}: {:?}",
        t.left
    );
    Ok(Measured {
        teardown: None,
        note: format!(
            "detector reported {} process(es) left at 30 s, the surviving member included (must fail: did)",
            t.left.len()
        ),
    })
}
