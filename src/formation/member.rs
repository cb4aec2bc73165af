//! One member process as the launcher sees it: how it is started (its command line,
//! environment, inherited lifeline and channel), and how it is stopped.

use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::channel;
use crate::lifeline::{self, Lifeline};
use crate::output::stderr_line;
use crate::spawn::{Child, Spawn, Stderr};

/// The descriptor numbers a member inherits its lifeline and channel at.
pub const LIFELINE_FD: i32 = 3;
pub const CHANNEL_FD: i32 = 4;

/// `MURMUR_FORMATION_ID`
pub const FORMATION_ID_ENV: &str = crate::env::MURMUR_FORMATION_ID;
/// `MURMUR_HOST_WARNINGS_REPORTED`
pub const HOST_WARNINGS_ENV: &str = crate::env::MURMUR_HOST_WARNINGS_REPORTED;

/// What the launcher needs to start one member.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: crate::ids::MemberName,
    pub capsule: String,
    pub version: String,
    pub entry: bool,
    /// Extra arguments after `run --capsule C --capsule-version V --json`.
    pub extra_args: Vec<String>,
    /// Peers get a process group of their own; the entry member stays in the launcher's.
    pub own_group: bool,
}

/// A started member: its process, the launcher's end of its lifeline, and its channel.
pub struct Started {
    pub name: crate::ids::MemberName,
    pub child: Child,
    pub lifeline: Lifeline,
    pub channel: channel::Writer,
    /// The process group to SIGKILL after the grace period (peers only).
    pub pgid: Option<i32>,
    /// Its pid, still known once it has been reaped.
    pub pid: u32,
    pub started_at: tokio::time::Instant,
    /// Keeps its pid out of the strays while it is the launcher's to wait for.
    pub _own: crate::descendants::Own,
}

/// The program members are started from: this `mur`, unless the test setting names another.
pub fn program() -> PathBuf {
    crate::testing::member_program()
        .or_else(|| std::env::current_exe().ok())
        .unwrap_or_else(|| PathBuf::from("mur"))
}

/// A member cloned and on its way to `mur run`: [`Starting::started`] waits for that.
pub struct Starting {
    name: crate::ids::MemberName,
    child: crate::spawn::Starting,
    lifeline: Lifeline,
    channel: channel::Writer,
    pgid: Option<i32>,
    pid: u32,
    started_at: tokio::time::Instant,
    own: crate::descendants::Own,
}

impl Starting {
    /// The started member, or why its program could not run.
    pub fn started(self) -> std::io::Result<Started> {
        Ok(Started {
            name: self.name,
            child: self.child.started()?,
            lifeline: self.lifeline,
            channel: self.channel,
            pgid: self.pgid,
            pid: self.pid,
            started_at: self.started_at,
            _own: self.own,
        })
    }
}

/// Starts a member whose channel already holds `lines` (its credentials first), in
/// the formation's `cgroup` when there is one; returns before it runs its program,
/// so the next member can be cloned meanwhile.
pub fn start(
    program: &Path,
    spec: &Spec,
    formation: &crate::ids::FormationId,
    lines: &[channel::Line],
    cwd: &Path,
    cgroup: Option<BorrowedFd<'_>>,
) -> std::io::Result<Starting> {
    let (lifeline, lifeline_read) = Lifeline::new()?;
    let (mut channel, channel_read) = channel::Writer::new()?;
    // Written before the member starts: the pipe holds them until the member reads.
    for line in lines {
        channel.send(line)?;
    }

    let mut cmd = Spawn::new(program);
    cmd.arg("run").args([
        "--capsule",
        &spec.capsule,
        "--capsule-version",
        &spec.version,
    ]);
    // Every member reports readiness on stdout; the launcher reads the entry
    // member's too (its session, door and outcome: formation::announce).
    cmd.arg("--json");
    // The launcher's `-v`s: members log as much as it does.
    cmd.args(crate::output::verbosity_args());
    cmd.args(&spec.extra_args)
        .current_dir(cwd)
        .env(FORMATION_ID_ENV, formation.as_str())
        .env(channel::ENV, CHANNEL_FD.to_string())
        .env(lifeline::ENV, LIFELINE_FD.to_string())
        .env(HOST_WARNINGS_ENV, "1")
        .env_remove(crate::call_member::PEERS_ENV)
        .stderr(if spec.entry {
            Stderr::Inherit
        } else {
            Stderr::Piped
        })
        .fd(lifeline_read, LIFELINE_FD)
        .fd(channel_read, CHANNEL_FD);
    if spec.own_group {
        cmd.own_group();
    }
    // Owned: the launcher waits for it, so its stray watch never reaps or kills it.
    let (child, own) = crate::descendants::spawn_owned(|| cmd.start(cgroup), |c| c.id())?;
    // `cmd` owns the member's ends; dropping it closes the launcher's copies.
    drop(cmd);
    let pgid = spec
        .own_group
        .then(|| child.id().map(|p| p as i32))
        .flatten();
    Ok(Starting {
        name: spec.name.clone(),
        pid: child.id().unwrap_or(0),
        child,
        lifeline,
        channel,
        pgid,
        started_at: tokio::time::Instant::now(),
        own,
    })
}

impl Started {
    /// Closes the lifeline, waits up to `grace` for the member to end, then SIGKILLs
    /// its process group (the entry member: its process) and reaps it. Returns the
    /// exit status.
    pub async fn stop(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        self.lifeline.close();
        self.reap(grace).await
    }

    /// Waits for the member to end on its own, up to `grace` (its lifeline already
    /// closed or never to be closed), then kills it.
    pub async fn reap(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        if let Ok(status) = tokio::time::timeout(grace, self.child.wait()).await {
            // Reaped: its group id may be reused now, so no group signal after this.
            return status.ok();
        }
        // Kill the group before reaping the leader: a zombie leader keeps the group
        // id reserved, so the signal cannot reach another group.
        self.kill_group();
        let _ = self.child.start_kill();
        self.child.wait().await.ok()
    }

    /// SIGKILL to the member's process group, if it has one and anything of it is left.
    fn kill_group(&self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

/// The tasks forwarding each peer's stderr: awaited at the end, so a peer's last lines
/// (`status: ok`) are out before the launcher exits.
pub type Forwarders = std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>;

/// A peer's diagnostics go to the launcher's stderr behind its `[<member>]` prefix.
pub fn forward_stderr(peer: &mut Started, forwarders: &Forwarders) {
    let Some(stderr) = peer.child.stderr.take() else {
        return;
    };
    let prefix = format!("[{}] ", peer.name);
    let forwarder = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        // Through the one output path, so a progress line stays below it.
        while let Ok(Some(line)) = lines.next_line().await {
            stderr_line(format_args!("{prefix}{line}"));
        }
    });
    forwarders
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(forwarder);
}

/// Keeps reading a ready peer's stdout so it never blocks on a full pipe.
pub fn drain(peer: &mut Started) {
    if let Some(mut stdout) = peer.child.stdout.take() {
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut stdout, &mut tokio::io::sink()).await;
        });
    }
}

/// Closes every lifeline at once, then waits for each member, SIGKILLing a member's
/// process group 25 s after its lifeline closed. Returns each exit status in order
/// (a member already reaped gives the status it ended with).
pub async fn stop_all(members: &mut [Started]) -> Vec<Option<std::process::ExitStatus>> {
    for m in members.iter_mut() {
        m.lifeline.close();
    }
    let grace = crate::timing::scaled(crate::timing::WIND_DOWN_KILL);
    let stops = members.iter_mut().map(|m| m.reap(grace));
    futures_util::future::join_all(stops).await
}

/// The first of `members` not yet `reported` whose process ended: its index and
/// status. Never resolves while none has. Cancel-safe: a status is kept by its child.
pub async fn next_exit(
    members: &mut [Started],
    reported: &[bool],
) -> (usize, Option<std::process::ExitStatus>) {
    use futures_util::StreamExt;
    let mut waits: futures_util::stream::FuturesUnordered<_> = members
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| !reported.get(*i).copied().unwrap_or(true))
        .map(|(i, m)| async move { (i, m.child.wait().await.ok()) })
        .collect();
    match waits.next().await {
        Some(ended) => ended,
        None => std::future::pending().await,
    }
}

/// Reads a peer's readiness (its stderr is already forwarded).
pub(crate) async fn wait_ready(
    peer: &mut Started,
    formation: &str,
    until: tokio::time::Instant,
    http: &reqwest::Client,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<crate::readiness::Ready, crate::readiness::NotReady> {
    let Some(stdout) = peer.child.stdout.take() else {
        return Err(crate::readiness::NotReady::ExitedBeforeReport(
            "no stdout".into(),
        ));
    };
    let mut stdout = tokio::io::BufReader::new(stdout);
    let started = peer.started_at;
    let result = tokio::select! {
        r = crate::readiness::wait(&mut peer.child, &mut stdout, formation, started, until, http) => r,
        _ = cancel.cancelled() => Err(crate::readiness::NotReady::NoReport(until.saturating_duration_since(started))),
    };
    peer.child.stdout = Some(stdout.into_inner());
    result
}
