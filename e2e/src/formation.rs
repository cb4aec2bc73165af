//! Formations inside a scenario's container: projects, launches, faults, and what
//! the members left behind (stand-ins' event logs, real members' traces).

use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::container::{Sandbox, Spawned};
use crate::procs;

/// Which program the launcher starts for each member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Members {
    /// docker/e2e/bin/standin through the documented test setting
    /// `MUR_TEST_MEMBER_PROGRAM`: proves the launcher's own guarantees.
    StandIn,
    /// `mur run` itself: proves the member side too.
    Real,
}

impl Members {
    pub fn label(self) -> &'static str {
        match self {
            Members::StandIn => "stand-in",
            Members::Real => "real",
        }
    }

    /// The launcher's environment for this kind of member. `behaviours` is
    /// `member=behaviour` pairs for stand-ins (docker/e2e/bin/standin).
    pub fn env(self, behaviours: &str) -> Vec<(&'static str, String)> {
        match self {
            Members::StandIn => vec![
                ("MUR_TEST_MEMBER_PROGRAM", "/e2e/bin/standin".to_string()),
                ("E2E_BEHAVIOURS", behaviours.to_string()),
            ],
            Members::Real => Vec::new(),
        }
    }
}

/// Makes /e2e/work/<project> from /e2e/rosters/<roster>.yaml with every test capsule
/// installed in its project store.
pub async fn setup(sb: &Sandbox, project: &str, roster: &str) -> Result<()> {
    sb.exec(
        vec!["/e2e/bin/setup".into(), project.into(), roster.into()],
        &[],
    )
    .await?
    .ok()
    .with_context(|| format!("setting up {project}"))?;
    Ok(())
}

/// A launcher started with `docker exec /e2e/bin/launch`.
pub struct Launch {
    pub tag: String,
    pub pid: u32,
    /// The container's uptime when it started.
    pub started: f64,
    exec: Spawned,
}

pub async fn launch(
    sb: &Sandbox,
    tag: &str,
    project: &str,
    args: &[&str],
    env: &[(&str, String)],
) -> Result<Launch> {
    let mut cmd = vec!["/e2e/bin/launch".to_string(), tag.into(), project.into()];
    cmd.extend(args.iter().map(|a| a.to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let exec = sb.spawn(cmd, &env).await?;
    let pid_file = format!("/e2e/run/{tag}.pid");
    let text = wait_file(sb, &pid_file, Duration::from_secs(30)).await?;
    let mut words = text.split_whitespace();
    let pid = words.next().unwrap_or_default().parse()?;
    let started = words.next().unwrap_or_default().parse()?;
    Ok(Launch {
        tag: tag.into(),
        pid,
        started,
        exec,
    })
}

impl Launch {
    /// The launcher's exit status once it ended: 128 + the signal when killed.
    pub async fn exit_code(&self) -> Result<Option<i64>> {
        self.exec.exit_code().await
    }

    /// Waits for the launcher's `docker exec` to report its end.
    pub async fn wait_exit(&self, bound: Duration) -> Result<i64> {
        let until = tokio::time::Instant::now() + bound;
        loop {
            if let Some(code) = self.exit_code().await? {
                return Ok(code);
            }
            if tokio::time::Instant::now() > until {
                bail!("launcher {} still running after {bound:?}", self.tag);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub async fn stderr(&self, sb: &Sandbox) -> String {
        read(sb, &format!("/e2e/run/{}.err", self.tag))
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    pub async fn stdout(&self, sb: &Sandbox) -> String {
        read(sb, &format!("/e2e/run/{}.out", self.tag))
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

/// A file's content, or `None` when it does not exist.
pub async fn read(sb: &Sandbox, path: &str) -> Result<Option<String>> {
    let out = sb
        .probe_sh(&format!("[ -e '{path}' ] || exit 3; cat '{path}'"))
        .await?;
    match out.code {
        0 => Ok(Some(out.stdout)),
        3 => Ok(None),
        _ => bail!("reading {path}: {}", out.stderr),
    }
}

/// Waits for a file to exist and returns its content.
pub async fn wait_file(sb: &Sandbox, path: &str, bound: Duration) -> Result<String> {
    let until = tokio::time::Instant::now() + bound;
    loop {
        if let Some(text) = read(sb, path).await? {
            return Ok(text);
        }
        if tokio::time::Instant::now() > until {
            bail!("{path} did not appear within {bound:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sends `signal` to `target` (a pid, or `-<pgid>`) from inside the container and
/// returns the container's uptime right after it was sent.
pub async fn fault(sb: &Sandbox, signal: &str, target: &str) -> Result<f64> {
    let out = sb
        .exec(
            vec![
                "/e2e/bin/fault".into(),
                "kill".into(),
                signal.into(),
                target.into(),
            ],
            &[],
        )
        .await?
        .ok()
        .with_context(|| format!("kill -{signal} {target}"))?;
    out.stdout
        .trim()
        .strip_prefix("at ")
        .context("fault printed no time")?
        .parse()
        .context("fault time")
}

/// One line of a stand-in's event log.
#[derive(Debug, Clone)]
pub struct Event {
    pub at: f64,
    pub text: String,
}

/// A stand-in member's event log (docker/e2e/bin/standin); empty when it never started.
pub async fn events(sb: &Sandbox, member: &str) -> Result<Vec<Event>> {
    let text = read(sb, &format!("/e2e/run/events/{member}.log"))
        .await?
        .unwrap_or_default();
    Ok(text
        .lines()
        .filter_map(|l| {
            let (at, text) = l.split_once(' ')?;
            Some(Event {
                at: at.parse().ok()?,
                text: text.to_string(),
            })
        })
        .collect())
}

/// The first event of `member` starting with `prefix`, waiting up to `bound` for it.
pub async fn wait_event(
    sb: &Sandbox,
    member: &str,
    prefix: &str,
    bound: Duration,
) -> Result<Event> {
    let until = tokio::time::Instant::now() + bound;
    loop {
        if let Some(e) = events(sb, member)
            .await?
            .into_iter()
            .find(|e| e.text.starts_with(prefix))
        {
            return Ok(e);
        }
        if tokio::time::Instant::now() > until {
            bail!(
                "member {member} logged no `{prefix}` within {bound:?}: {:?}",
                events(sb, member).await?
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The value of `key=` in a stand-in's `started` event (pid, pgid).
pub fn field(event: &Event, key: &str) -> Option<u32> {
    event
        .text
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.parse().ok())
}

/// When a stand-in's process started, on the events' clock (seconds of uptime): the
/// `start=` of its `started` event, stat's clock ticks since boot. A readiness wait
/// counts from this moment, the member's own start (spec: "Readiness"), which the
/// event itself may trail on a loaded host.
pub fn process_start(started: &Event) -> Result<f64> {
    // USER_HZ: /proc reports clock ticks of 1/100 s on every Linux architecture mur
    // ships for (x86_64, aarch64), whatever the kernel's own tick.
    const TICKS_PER_SECOND: f64 = 100.0;
    let ticks: u64 = started
        .text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("start="))
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no start= in the stand-in's event: {started:?}"))?;
    Ok(ticks as f64 / TICKS_PER_SECOND)
}

/// A member process found by a scan: the one whose command line runs its capsule.
pub async fn member_pid(sb: &Sandbox, capsule: &str) -> Result<Option<u32>> {
    let needle = format!("--capsule {capsule} ");
    Ok(procs::scan(sb)
        .await?
        .alive()
        .into_iter()
        .find(|p| p.member && p.cmdline.contains(&needle))
        .map(|p| p.pid))
}
