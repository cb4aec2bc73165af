//! The leftover detector: scans /proc inside a scenario's container from outside the
//! launcher (`docker exec /e2e/bin/scan`) until nothing of the formation is left.
//!
//! Everything in the container counts except PID 1 (tini), PID 1's long sleep (by its
//! pid, found when the container started) and the scan itself, so a process that escaped its process group, dropped its
//! `MURMUR_*` environment or was reparented to tini is still seen. A zombie counts as
//! gone: it holds no descriptor and runs nothing.

use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::container::Sandbox;

/// One process the scan saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub pgid: u32,
    pub state: String,
    /// Its environment carries `MURMUR_FORMATION_ID`: a member (or one of its children
    /// that kept the environment).
    pub member: bool,
    pub cmdline: String,
}

impl Proc {
    pub fn alive(&self) -> bool {
        self.state != "Z"
    }
}

impl std::fmt::Display for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pid {} ppid {} pgid {} {}{} `{}`",
            self.pid,
            self.ppid,
            self.pgid,
            self.state,
            if self.member { " member" } else { "" },
            self.cmdline.trim()
        )
    }
}

/// One scan: the container's uptime clock when it began, and what it saw.
#[derive(Debug, Clone)]
pub struct Scan {
    pub now: f64,
    pub procs: Vec<Proc>,
}

impl Scan {
    pub fn parse(text: &str) -> Result<Scan> {
        let mut now = None;
        let mut procs = Vec::new();
        for line in text.lines() {
            if let Some(t) = line.strip_prefix("now ") {
                now = Some(t.trim().parse::<f64>().context("scan: bad uptime")?);
            } else if let Some(rest) = line.strip_prefix("proc ") {
                let mut f = rest.splitn(6, ' ');
                let mut next = || f.next().unwrap_or_default();
                let (pid, ppid, pgid, state, member) = (next(), next(), next(), next(), next());
                procs.push(Proc {
                    pid: pid.parse().context("scan: bad pid")?,
                    ppid: ppid.parse().context("scan: bad ppid")?,
                    pgid: pgid.parse().context("scan: bad pgid")?,
                    state: state.to_string(),
                    member: member == "1",
                    cmdline: next().to_string(),
                });
            }
        }
        let Some(now) = now else {
            bail!("scan printed no uptime: {text:?}")
        };
        Ok(Scan { now, procs })
    }

    pub fn alive(&self) -> Vec<Proc> {
        self.procs.iter().filter(|p| p.alive()).cloned().collect()
    }

    pub fn has(&self, pid: u32) -> bool {
        self.procs.iter().any(|p| p.pid == pid && p.alive())
    }
}

pub async fn scan(sandbox: &Sandbox) -> Result<Scan> {
    let out = sandbox
        .probe(vec!["/e2e/bin/scan".into(), sandbox.keeper.to_string()])
        .await?
        .ok()?;
    Scan::parse(&out.stdout)
}

/// The container's uptime clock: the clock every in-container timestamp uses.
pub async fn uptime(sandbox: &Sandbox) -> Result<f64> {
    let out = sandbox
        .sh("read -r up _ </proc/uptime; echo $up")
        .await?
        .ok()?;
    out.stdout.trim().parse().context("uptime")
}

/// What the detector found.
#[derive(Debug, Clone)]
pub struct Teardown {
    /// Seconds from `since` to the first scan that found nothing left.
    pub gone_after: Option<f64>,
    /// What was still alive at the bound, when something was.
    pub left: Vec<Proc>,
}

/// How often the detector scans.
pub const SCAN_EVERY: Duration = Duration::from_millis(200);

/// Scans until nothing is left or until `bound` seconds after `since` (the container's
/// uptime clock) have passed.
pub async fn wait_all_gone(sandbox: &Sandbox, since: f64, bound: f64) -> Result<Teardown> {
    loop {
        let s = scan(sandbox).await?;
        let alive = s.alive();
        if alive.is_empty() {
            return Ok(Teardown {
                gone_after: Some(s.now - since),
                left: Vec::new(),
            });
        }
        if s.now - since > bound {
            return Ok(Teardown {
                gone_after: None,
                left: alive,
            });
        }
        tokio::time::sleep(SCAN_EVERY).await;
    }
}

/// Scans until `pid` is gone (or a zombie) and returns the uptime of that scan, or
/// fails after `bound` seconds.
pub async fn wait_pid_gone(sandbox: &Sandbox, pid: u32, bound: Duration) -> Result<f64> {
    let until = tokio::time::Instant::now() + bound;
    loop {
        let s = scan(sandbox).await?;
        if !s.has(pid) {
            return Ok(s.now);
        }
        if tokio::time::Instant::now() > until {
            bail!("pid {pid} still alive after {bound:?}");
        }
        tokio::time::sleep(SCAN_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_scan_and_counts_zombies_as_gone() {
        let s = Scan::parse(
            "now 12.50\nproc 7 0 7 S 1 mur run --roster . \nproc 9 1 9 Z 1 \nproc 11 7 7 S 0 sh -c a b\n",
        )
        .unwrap();
        assert_eq!(s.now, 12.5);
        assert_eq!(s.procs.len(), 3);
        assert_eq!(s.procs[2].cmdline, "sh -c a b");
        let alive: Vec<u32> = s.alive().iter().map(|p| p.pid).collect();
        assert_eq!(alive, vec![7, 11]);
        assert!(s.has(7) && !s.has(9));
        assert!(Scan::parse("proc 1 0 0 S 0 x\n").is_err());
    }
}
