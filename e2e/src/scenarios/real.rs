//! The same endings with real members (`mur run` itself): besides nothing being left
//! within 30 s, each member's trace ends as the spec's table says
//! (`formation_ended`, `session_end.exit_status`, `exit_code`, `error_code`).
//!
//! The rosters' entry member `busylead` runs its task on a process harness that never
//! answers, so the task is still running when the fault comes; the peers are idle.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};

use crate::container::{Config, Sandbox};
use crate::formation::{self, Launch, fault};
use crate::procs;
use crate::report::Measured;
use crate::scenarios::kills::BOUND;
use crate::scenarios::readiness::READINESS;
use crate::traces::{self, Trace};

const TASK: &str = "Work on this until you are stopped.";
const PEERS: &[&str] = &["coder", "reviewer"];

pub struct Real {
    pub sb: Sandbox,
    pub launch: Launch,
}

/// Launches `roster` with real members and waits until every member in `members` has
/// started its session and each in `working` runs a task.
pub(super) async fn start(
    sb: Sandbox,
    roster: &str,
    args: &[&str],
    env: &[(&'static str, String)],
    members: &[&str],
    working: &[&str],
) -> Result<Real> {
    formation::setup(&sb, roster, roster).await?;
    let launch = formation::launch(&sb, "launcher", roster, args, env).await?;
    let until = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let all = traces::traces(&sb).await?;
        let started = members.iter().all(|m| traces::of(&all, m).is_ok());
        let busy = working
            .iter()
            .all(|m| traces::of(&all, m).is_ok_and(|t| t.working()));
        if started && busy {
            break;
        }
        if tokio::time::Instant::now() > until {
            bail!(
                "the formation did not come up: traces {:?}; launcher stderr: {}",
                all.iter()
                    .map(|t| format!("{:?}: {}", t.member(), t.summary()))
                    .collect::<Vec<_>>(),
                launch.stderr(&sb).await
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(Real { sb, launch })
}

impl Real {
    async fn traces(&self) -> Result<Vec<Trace>> {
        traces::traces(&self.sb).await
    }

    async fn pid(&self, member: &str) -> Result<u32> {
        traces::of(&self.traces().await?, member)?
            .pid()
            .context("no pid in session_start")
    }

    pub(super) async fn gone(&self, since: f64) -> Result<f64> {
        let t = procs::wait_all_gone(&self.sb, since, BOUND).await?;
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

    /// The exit status each member's process ended with, as its wrapper recorded it
    /// (`None`: it recorded none, the wrapper itself being killed). Checked only
    /// when the members ran wrapped.
    async fn exits(&self, wrap: bool, expected: &[(&str, Option<i64>)]) -> Result<&'static str> {
        if !wrap {
            return Ok("");
        }
        for (capsule, code) in expected {
            let path = format!("/e2e/run/events/{capsule}.exit");
            let text = match code {
                Some(_) => formation::wait_file(&self.sb, &path, Duration::from_secs(10)).await?,
                None => formation::read(&self.sb, &path).await?.unwrap_or_default(),
            };
            let got = text
                .lines()
                .last()
                .and_then(|l| l.split_once(" exit "))
                .and_then(|(_, c)| c.trim().parse::<i64>().ok());
            ensure!(got == *code, "{capsule} exited {got:?}, not {code:?}");
        }
        Ok("; exit statuses checked")
    }

    async fn launcher_exit(&self, expected: i64) -> Result<()> {
        let code = self.launch.wait_exit(Duration::from_secs(40)).await?;
        ensure!(
            code == expected,
            "the launcher exited {code}, not {expected}; stderr: {}",
            self.launch.stderr(&self.sb).await
        );
        Ok(())
    }

    /// The entry member ran a task when its lifeline closed: `formation_ended`, exit 0,
    /// the task `canceled` and its result.txt holding the `canceled:` line.
    async fn entry_wound_down_mid_task(&self) -> Result<()> {
        let all = self.traces().await?;
        let lead = traces::of(&all, "lead")?;
        lead.expect_end(true, "formation_ended", 0, None)?;
        ensure!(
            lead.records
                .iter()
                .any(|r| r["type"] == "task_state" && r["to"] == "canceled"),
            "lead: the task did not end canceled: {}",
            lead.summary()
        );
        let dir = lead.records_dir().context("no records_dir")?;
        let result = formation::read(&self.sb, &format!("{dir}/out/result.txt"))
            .await?
            .unwrap_or_default();
        ensure!(
            result.starts_with("canceled:"),
            "lead: out/result.txt is {result:?}, not a canceled: line"
        );
        Ok(())
    }

    /// Idle peers whose lifelines closed: `formation_ended`, then `ok`, exit 0.
    async fn peers_wound_down_idle(&self, peers: &[&str]) -> Result<()> {
        let all = self.traces().await?;
        for p in peers {
            traces::of(&all, p)?.expect_end(true, "ok", 0, None)?;
        }
        Ok(())
    }
}

/// The launcher's environment: with `wrap`, every member's `mur` runs under the
/// stand-in script's 4-line wrapper that records the status it exits with
/// (docker/e2e/bin/standin, E2E_WRAP) and exits with it.
fn member_env(wrap: bool, mut env: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
    if wrap {
        env.push(("MUR_TEST_MEMBER_PROGRAM", "/e2e/bin/standin".to_string()));
        env.push(("E2E_WRAP", "1".to_string()));
    }
    env
}

fn name(base: &'static str, wrap: bool) -> String {
    if wrap {
        format!("real-{base}")
    } else {
        format!("real-pure-{base}")
    }
}

async fn busy(
    scenario: &str,
    config: Config,
    env: Vec<(&'static str, String)>,
    wrap: bool,
) -> Result<Real> {
    let sb = Sandbox::start(scenario, config).await?;
    start(
        sb,
        "busy",
        &["--task", TASK],
        &member_env(wrap, env),
        &["lead", "coder", "reviewer"],
        &["lead"],
    )
    .await
}

pub async fn kill_launcher(wrap: bool) -> Result<Measured> {
    let f = busy(
        &name("kill-launcher", wrap),
        Config::default(),
        vec![],
        wrap,
    )
    .await?;
    let at = fault(&f.sb, "KILL", &f.launch.pid.to_string()).await?;
    let gone = f.gone(at).await?;
    f.entry_wound_down_mid_task().await?;
    f.peers_wound_down_idle(PEERS).await?;
    f.launcher_exit(137).await?;
    let exits = f
        .exits(
            wrap,
            &[
                ("busylead", Some(0)),
                ("coder", Some(0)),
                ("reviewer", Some(0)),
            ],
        )
        .await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!("entry formation_ended/0 (task canceled), peers ok/0{exits}"),
    })
}

pub async fn kill_entry(wrap: bool) -> Result<Measured> {
    let f = busy(&name("kill-entry", wrap), Config::default(), vec![], wrap).await?;
    let at = fault(&f.sb, "KILL", &f.pid("lead").await?.to_string()).await?;
    let gone = f.gone(at).await?;
    traces::of(&f.traces().await?, "lead")?.expect_killed()?;
    f.peers_wound_down_idle(PEERS).await?;
    f.launcher_exit(137).await?;
    let exits = f
        .exits(
            wrap,
            &[
                ("busylead", Some(137)),
                ("coder", Some(0)),
                ("reviewer", Some(0)),
            ],
        )
        .await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!(
            "entry killed (no session_end, its harness gone), peers ok/0, launcher 137{exits}"
        ),
    })
}

pub async fn kill_group(wrap: bool) -> Result<Measured> {
    let f = busy(&name("kill-group", wrap), Config::default(), vec![], wrap).await?;
    let at = fault(&f.sb, "KILL", &format!("-{}", f.launch.pid)).await?;
    let gone = f.gone(at).await?;
    traces::of(&f.traces().await?, "lead")?.expect_killed()?;
    f.peers_wound_down_idle(PEERS).await?;
    f.launcher_exit(137).await?;
    let exits = f
        .exits(
            wrap,
            &[
                ("busylead", None),
                ("coder", Some(0)),
                ("reviewer", Some(0)),
            ],
        )
        .await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!("launcher+entry killed as a group; entry's harness gone; peers ok/0{exits}"),
    })
}

pub async fn oom_launcher() -> Result<Measured> {
    const LIMIT: i64 = 256 << 20;
    let f = busy(
        "real-oom-launcher",
        Config {
            memory: Some(LIMIT),
            ..Config::default()
        },
        vec![(
            "MUR_TEST_LAUNCHER_BALLOON",
            crate::scenarios::kills::BALLOON_AFTER.to_string(),
        )],
        true,
    )
    .await?;
    // Nothing runs in the container while the launcher grows: its end is awaited
    // through the engine, and the teardown is timed from when it was seen.
    f.launcher_exit(137).await?;
    let died = procs::uptime(&f.sb).await?;
    let gone = f.gone(died).await?;
    let kills = crate::scenarios::kills::oom_kills(&f.sb).await?;
    ensure!(
        kills == 1,
        "the cgroup counted {kills} OOM kills, not the launcher's one"
    );
    f.entry_wound_down_mid_task().await?;
    f.peers_wound_down_idle(PEERS).await?;
    let exits = f
        .exits(
            true,
            &[
                ("busylead", Some(0)),
                ("coder", Some(0)),
                ("reviewer", Some(0)),
            ],
        )
        .await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!(
            "OOM kill (oom_kill {kills}, {} MiB): entry formation_ended/0, peers ok/0{exits}",
            LIMIT >> 20
        ),
    })
}

pub async fn sigterm_launcher() -> Result<Measured> {
    let f = busy("real-sigterm-launcher", Config::default(), vec![], true).await?;
    let at = fault(&f.sb, "TERM", &f.launch.pid.to_string()).await?;
    let gone = f.gone(at).await?;
    f.entry_wound_down_mid_task().await?;
    f.peers_wound_down_idle(PEERS).await?;
    f.launcher_exit(0).await?;
    let stderr = f.launch.stderr(&f.sb).await;
    ensure!(
        !stderr.contains("E-RUN-040"),
        "a member printed E-RUN-040: {stderr}"
    );
    let exits = f
        .exits(
            true,
            &[
                ("busylead", Some(0)),
                ("coder", Some(0)),
                ("reviewer", Some(0)),
            ],
        )
        .await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!(
            "SIGTERM mid-task: entry formation_ended/0, canceled: result, peers ok/0, launcher 0{exits}"
        ),
    })
}

/// A peer whose process harness ignores SIGTERM and never answers, given a task on its
/// door: when the formation ends, the member's own wind-down cancels the task and
/// stops the harness's process group (SIGTERM, then SIGKILL), and the member ends
/// `formation_ended`.
pub async fn stubborn_harness() -> Result<Measured> {
    let sb = Sandbox::start("real-stubborn-harness", Config::default()).await?;
    let f = start(
        sb,
        "stubborn",
        &[],
        &member_env(true, vec![]),
        &["lead", "coder", "stubborn"],
        &[],
    )
    .await?;
    f.sb.exec(
        vec!["/e2e/bin/send-task".into(), "stubborn".into(), TASK.into()],
        &[],
    )
    .await?
    .ok()?;
    let stubborn = f.pid("stubborn").await?;
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    let harness = loop {
        let s = procs::scan(&f.sb).await?;
        if let Some(p) = s
            .alive()
            .into_iter()
            .find(|p| p.ppid == stubborn && p.cmdline.starts_with("sleep"))
        {
            break p;
        }
        ensure!(
            tokio::time::Instant::now() < until,
            "the stubborn harness never started"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    ensure!(
        harness.pgid != stubborn,
        "the harness is in its member's process group"
    );
    let at = fault(&f.sb, "TERM", &f.launch.pid.to_string()).await?;
    let gone = f.gone(at).await?;
    let all = f.traces().await?;
    traces::of(&all, "stubborn")?.expect_end(true, "formation_ended", 0, None)?;
    traces::of(&all, "lead")?.expect_end(true, "ok", 0, None)?;
    traces::of(&all, "coder")?.expect_end(true, "ok", 0, None)?;
    f.launcher_exit(0).await?;
    let exits = f
        .exits(
            true,
            &[("lead", Some(0)), ("coder", Some(0)), ("stubborn", Some(0))],
        )
        .await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!(
            "working peer's TERM-ignoring harness (own group) stopped by its wind-down; peer formation_ended/0, others ok/0{exits}"
        ),
    })
}

/// The control with real members: a `mur run` started by hand into the formation
/// (MURMUR_FORMATION_ID, no lifeline: W-RUN-007) outlives its SIGKILLed launcher,
/// and the detector must report it.
pub async fn control_by_hand() -> Result<Measured> {
    let f = busy("real-control-byhand", Config::default(), vec![], false).await?;
    let frm = traces::of(&f.traces().await?, "lead")?
        .first("session_start")
        .and_then(|s| s["formation_id"].as_str())
        .context("no formation id")?
        .to_string();
    f.sb.spawn(
        vec![
            "sh".into(),
            "-c".into(),
            "cd /e2e/work/busy && exec mur run --capsule local/coder --capsule-version 0.1.0 >/e2e/run/byhand.out 2>/e2e/run/byhand.err".into(),
        ],
        &[("MURMUR_FORMATION_ID", frm.as_str())],
    )
    .await?;
    let until = tokio::time::Instant::now() + Duration::from_secs(60);
    let by_hand = loop {
        let all = f.traces().await?;
        if let Some(t) = all
            .iter()
            .find(|t| t.member().is_none() && t.capsule() == Some("local/coder"))
        {
            break t.pid().context("no pid")?;
        }
        ensure!(
            tokio::time::Instant::now() < until,
            "the session started by hand never started"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let warned = formation::read(&f.sb, "/e2e/run/byhand.err")
        .await?
        .unwrap_or_default();
    ensure!(
        warned.contains("W-RUN-007"),
        "no W-RUN-007 from the session started by hand: {warned}"
    );
    let at = fault(&f.sb, "KILL", &f.launch.pid.to_string()).await?;
    let t = procs::wait_all_gone(&f.sb, at, BOUND).await?;
    ensure!(
        t.gone_after.is_none(),
        "the detector saw nothing left, yet a session was started by hand"
    );
    ensure!(
        t.left.iter().any(|p| p.pid == by_hand && p.member),
        "the detector did not report the session started by hand ({by_hand}): {:?}",
        t.left
    );
    Ok(Measured {
        teardown: None,
        note: "by-hand `mur run` (W-RUN-007) reported left at 30 s (must fail: did)".into(),
    })
}

/// `--deadline` across a formation: every member ends at the same moment.
pub async fn deadline() -> Result<Measured> {
    const DEADLINE: f64 = 20.0;
    let sb = Sandbox::start("real-deadline", Config::default()).await?;
    let f = start(
        sb,
        "busy",
        &["--deadline", "20", "--task", TASK],
        &member_env(true, vec![]),
        &["lead", "coder", "reviewer"],
        &["lead"],
    )
    .await?;
    let gone = f.gone(f.launch.started + DEADLINE).await?;
    f.launcher_exit(1).await?;
    let all = f.traces().await?;
    let mut ends = Vec::new();
    for m in ["lead", "coder", "reviewer"] {
        let t = traces::of(&all, m)?;
        t.expect_end(false, "deadline_reached", 1, Some("E-RUN-053"))?;
        ends.push(t.end_ms().context("no session_end time")?);
    }
    ensure!(
        ends.iter().all(|e| e.0 == ends[0].0),
        "session_end on different days: {ends:?}"
    );
    let min = ends.iter().map(|e| e.1).min().unwrap_or_default();
    let max = ends.iter().map(|e| e.1).max().unwrap_or_default();
    ensure!(
        max - min <= 100,
        "session_end times {} ms apart: {ends:?}",
        max - min
    );
    let stderr = f.launch.stderr(&f.sb).await;
    ensure!(
        stderr.contains("E-RUN-053"),
        "no E-RUN-053 on the launcher's stderr: {stderr}"
    );
    let exits = f
        .exits(
            true,
            &[
                ("busylead", Some(1)),
                ("coder", Some(1)),
                ("reviewer", Some(1)),
            ],
        )
        .await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!(
            "3 members deadline_reached/1/E-RUN-053, session_end within {} ms; launcher 1{exits}",
            max - min
        ),
    })
}

/// Readiness with real members beside one silent stand-in peer.
pub async fn readiness() -> Result<Measured> {
    let sb = Sandbox::start("real-readiness-180s", Config::default()).await?;
    formation::setup(&sb, "trio", "trio").await?;
    let env = vec![
        ("MUR_TEST_MEMBER_PROGRAM", "/e2e/bin/standin".to_string()),
        ("E2E_REAL_EXCEPT", "local/reviewer".to_string()),
        ("E2E_BEHAVIOURS", "reviewer=silent".to_string()),
    ];
    let launch = formation::launch(&sb, "launcher", "trio", &["--task", TASK], &env).await?;
    let silent = formation::wait_event(&sb, "reviewer", "started", Duration::from_secs(60)).await?;
    let code = launch
        .wait_exit(Duration::from_secs(READINESS as u64 + 80))
        .await?;
    let stderr = launch.stderr(&sb).await;
    ensure!(code == 1, "the launcher exited {code}, not 1: {stderr}");
    ensure!(
        stderr.contains("E-RUN-045") && stderr.contains("`reviewer`"),
        "no E-RUN-045 naming the silent peer: {stderr}"
    );
    let refused = formation::wait_event(&sb, "reviewer", "lifeline_closed", Duration::ZERO)
        .await?
        .at;
    // From the peer process's start, the spec's "own start": never before 180 s
    // (the clocks tick in hundredths), and not much after.
    let waited = refused - formation::process_start(&silent)?;
    ensure!(
        (READINESS - 0.02..READINESS + 3.0).contains(&waited),
        "refused {waited:.2} s after the peer's process started, not 180 s"
    );
    let t = procs::wait_all_gone(&sb, refused, BOUND).await?;
    ensure!(t.left.is_empty(), "left after the refusal: {:?}", t.left);
    let all = traces::traces(&sb).await?;
    traces::of(&all, "coder")?.expect_end(true, "ok", 0, None)?;
    ensure!(
        traces::of(&all, "lead").is_err(),
        "the entry member started"
    );
    Ok(Measured {
        teardown: t.gone_after,
        note: format!(
            "E-RUN-045 after {waited:.1} s; real coder formation_ended+ok/0; entry never started"
        ),
    })
}

/// What only the escaping grandchildren of docker/e2e/capsules/escaper and escapee run.
const ESCAPED: &str = "sleep 2147483646";

/// Waits until an escaped grandchild runs: not in its harness's process group, and
/// ignoring SIGTERM (docs/design/descendants.md).
async fn escaped(f: &Real) -> Result<u32> {
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let s = procs::scan(&f.sb).await?;
        if let Some(p) = s
            .alive()
            .into_iter()
            .find(|p| p.cmdline.starts_with(ESCAPED))
        {
            ensure!(p.pgid == p.pid, "the grandchild {p} did not call setsid");
            return Ok(p.pid);
        }
        ensure!(
            tokio::time::Instant::now() < until,
            "no escaped grandchild ran; launcher stderr: {}",
            f.launch.stderr(&f.sb).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `escape` roster: the entry member's harness left an escaped grandchild.
async fn escaping_entry(scenario: &str) -> Result<Real> {
    let sb = Sandbox::start(scenario, Config::default()).await?;
    start(
        sb,
        "escape",
        &["--task", TASK],
        &member_env(false, vec![]),
        &["lead", "coder", "reviewer"],
        &["lead"],
    )
    .await
}

/// A kill of the launcher: the entry member's lifeline closes, it winds down and
/// sweeps its descendants, the escaped grandchild included.
pub async fn escape_kill_launcher() -> Result<Measured> {
    let f = escaping_entry("real-escape-kill-launcher").await?;
    let gc = escaped(&f).await?;
    let at = fault(&f.sb, "KILL", &f.launch.pid.to_string()).await?;
    let gone = f.gone(at).await?;
    f.entry_wound_down_mid_task().await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!(
            "entry's setsid, TERM-ignoring grandchild {gc} swept by its wound-down member"
        ),
    })
}

/// A kill of the entry member: its harness dies of its parent-death signal, the
/// grandchild reparents to the launcher (a subreaper), which ends it before exiting.
pub async fn escape_kill_entry() -> Result<Measured> {
    let f = escaping_entry("real-escape-kill-entry").await?;
    let gc = escaped(&f).await?;
    let at = fault(&f.sb, "KILL", &f.pid("lead").await?.to_string()).await?;
    let gone = f.gone(at).await?;
    f.launcher_exit(137).await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!("entry's escaped grandchild {gc} reparented to the launcher and ended by it"),
    })
}

/// The `escapepeer` roster, its peer `escapee` given a task: its harness left an
/// escaped grandchild, whose pid is returned.
async fn escaping_peer(scenario: &str) -> Result<(Real, u32)> {
    let sb = Sandbox::start(scenario, Config::default()).await?;
    let f = start(
        sb,
        "escapepeer",
        &[],
        &member_env(false, vec![]),
        &["lead", "coder", "escapee"],
        &[],
    )
    .await?;
    f.sb.exec(
        vec!["/e2e/bin/send-task".into(), "escapee".into(), TASK.into()],
        &[],
    )
    .await?
    .ok()?;
    let gc = escaped(&f).await?;
    Ok((f, gc))
}

/// A kill of the launcher's group, with the escaped grandchild below a working peer:
/// the peer's lifeline closes, it winds down and sweeps. (Below the entry member,
/// which dies with the group, only a cgroup ends it: `escape_kill_group_cgroup`.)
pub async fn escape_kill_group() -> Result<Measured> {
    let (f, gc) = escaping_peer("real-escape-kill-group").await?;
    let at = fault(&f.sb, "KILL", &format!("-{}", f.launch.pid)).await?;
    let gone = f.gone(at).await?;
    traces::of(&f.traces().await?, "escapee")?.expect_end(true, "formation_ended", 0, None)?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!("working peer's escaped grandchild {gc} swept by its wound-down peer"),
    })
}

/// A working peer that cannot wind down (SIGSTOPped) when the launcher gets SIGTERM:
/// the launcher SIGKILLs its group at 25 s, its harness dies of its parent-death
/// signal, and the escaped grandchild, reparented to the launcher, is ended before the
/// launcher exits: all within 30 s of the SIGTERM, in real time.
pub async fn escape_group_kill_25s() -> Result<Measured> {
    let (f, gc) = escaping_peer("real-escape-group-kill-25s").await?;
    fault(&f.sb, "STOP", &f.pid("escapee").await?.to_string()).await?;
    let at = fault(&f.sb, "TERM", &f.launch.pid.to_string()).await?;
    let gone = f.gone(at).await?;
    ensure!(
        gone >= crate::scenarios::kills::GROUP_KILL,
        "gone after {gone} s: the stopped peer should have lasted until its 25 s group kill"
    );
    Ok(Measured {
        teardown: Some(gone),
        note: format!(
            "stopped peer group-killed at 25 s; its escaped grandchild {gc} ended by the launcher"
        ),
    })
}

/// Whether process `pid` in the sandbox is in a formation's cgroup (`murmur-frm_…`).
async fn in_formation_cgroup(sb: &Sandbox, pid: &str) -> Result<bool> {
    let out = sb.sh(&format!("cat /proc/{pid}/cgroup")).await?.ok()?;
    Ok(out
        .stdout
        .lines()
        .any(|l| l.starts_with("0::") && l.contains("/murmur-frm_")))
}

/// A kill of the launcher's group with the escaped grandchild below the entry
/// member, which dies with the group: nothing of mur is left above the grandchild.
/// The container is given a writable cgroup v2 (`Config::cgroup2`), so the launcher
/// made its formation's cgroup and started its members in it, and its watcher
/// (outside it like the launcher, in a session of its own) outlives the kill: it gives the cgroup until 25 s, then `cgroup.kill`s it and
/// removes it, and exits. Gone in [25 s, 30 s), the watcher included
/// (docs/design/descendants.md, "The case only a cgroup covers").
pub async fn escape_kill_group_cgroup() -> Result<Measured> {
    let config = Config {
        cgroup2: true,
        ..Config::default()
    };
    let sb = Sandbox::start("real-escape-kill-group-cgroup", config).await?;
    let f = start(
        sb,
        "escape",
        &["--task", TASK],
        &member_env(false, vec![]),
        &["lead", "coder", "reviewer"],
        &["lead"],
    )
    .await?;
    let gc = escaped(&f).await?;
    let pid = f.launch.pid;
    // The grandchild is in the formation's cgroup (its member was cloned into it);
    // the launcher is not, so the cgroup's kill never reaches its watcher's parent.
    ensure!(
        in_formation_cgroup(&f.sb, &gc.to_string()).await?,
        "the grandchild is not in a formation cgroup"
    );
    ensure!(
        !in_formation_cgroup(&f.sb, &pid.to_string()).await?,
        "the launcher is in its formation's cgroup"
    );
    let at = fault(&f.sb, "KILL", &format!("-{pid}")).await?;
    let gone = f.gone(at).await?;
    ensure!(
        gone >= crate::scenarios::kills::GROUP_KILL - 0.5,
        "gone after {gone} s: the watcher kills the cgroup at 25 s, not before"
    );
    traces::of(&f.traces().await?, "lead")?.expect_killed()?;
    f.peers_wound_down_idle(PEERS).await?;
    f.launcher_exit(137).await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!(
            "entry's escaped grandchild {gc} ended by the formation cgroup's watcher (cgroup.kill at 25 s); peers ok/0"
        ),
    })
}
