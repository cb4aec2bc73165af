//! `mur run --roster`: launching an admitted roster, step by step as the spec's
//! "Launching a formation" gives them, and ending it as "How a formation ends" does.
//!
//! Admit → mint → start the peers → wait for each door → hand out addresses → start
//! the entry member → end. The signing key lives only in this process's memory and
//! is dropped with it; every member holds the read end of a lifeline whose write end
//! only this process holds.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::catalogue::{E_RUN_045, E_RUN_053};
use crate::channel::{Credentials, Line};
use crate::credential::FormationKey;
use crate::diag::Diagnostic;
use crate::formation::dirs;
use crate::formation::member::{self, Spec, Started};
use crate::output::stderr_line;
use crate::readiness::{self, NotReady, Ready};
use crate::retention::{self, Policy};
use crate::timing;

/// An admitted roster, reduced to what launching it needs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The roster's project directory, symlinks resolved.
    pub project_dir: PathBuf,
    /// In roster order.
    pub members: Vec<PlanMember>,
    /// The entry member's `trace.retain`.
    pub retain: Policy,
}

#[derive(Debug, Clone)]
pub struct PlanMember {
    pub name: String,
    pub capsule: String,
    pub version: String,
    pub sha256: String,
    pub entry: bool,
    /// The members it may call, in roster order.
    pub callees: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--task`: the entry member runs that one task and the formation ends with it.
    pub task: Option<String>,
    /// `--deadline`: one moment, counted from the launcher's start.
    pub deadline: Option<Duration>,
}

/// Where the launch keeps its state (`~/.murmur/...` outside tests).
#[derive(Debug, Clone)]
pub struct Places {
    pub retention: retention::Dirs,
    pub running: PathBuf,
    /// The program members are started from: this `mur`, or the test setting's.
    pub program: PathBuf,
}

impl Places {
    pub fn from_home() -> Places {
        Places {
            retention: retention::Dirs::from_home(),
            running: crate::paths::running_dir(),
            program: member::program(),
        }
    }
}

/// Why the formation ended.
enum End {
    EntryEnded(Option<std::process::ExitStatus>),
    Signalled,
}

/// Launches `plan` and returns the launcher's exit status once every member stopped.
pub async fn launch(plan: &Plan, options: &Options, places: &Places) -> i32 {
    let started = Instant::now();
    let deadline = options
        .deadline
        .map(|d| (started + d, SystemTime::now() + d));
    let key = match FormationKey::mint() {
        Ok(key) => key,
        Err(e) => {
            stderr_line(format!("[mur run] error: cannot mint a formation key: {e}"));
            return 1;
        }
    };
    let formation = key.formation_id().to_string();
    let mut signals = Signals::new();
    let status = run(plan, options, places, &key, deadline, &mut signals).await;
    drop(key);
    let removed = retention::pass(
        &places.retention,
        &plan.project_dir,
        &formation,
        &plan.retain,
        &crate::running::RunningDir::new(&places.running).live_formations(),
        SystemTime::now(),
    );
    for removal in removed {
        stderr_line(removal.line());
    }
    status
}

async fn run(
    plan: &Plan,
    options: &Options,
    places: &Places,
    key: &FormationKey,
    deadline: Option<(Instant, SystemTime)>,
    signals: &mut Signals,
) -> i32 {
    let formation = key.formation_id();
    let verify_key = key.verify_key().key_text();
    let deadline_ms = deadline.map(|(_, at)| unix_ms(at));
    let cwd = std::env::current_dir().unwrap_or_else(|_| plan.project_dir.clone());
    let credentials = |m: &PlanMember, workdir: &Path| {
        Line::Credentials(Credentials {
            formation: formation.to_string(),
            member: m.name.clone(),
            entry: m.entry,
            verify_key: verify_key.clone(),
            tokens: m
                .callees
                .iter()
                .map(|to| (to.clone(), key.issue(&m.name, to)))
                .collect(),
            project_dir: plan.project_dir.clone(),
            workdir: workdir.to_path_buf(),
            artifact_sha256: m.sha256.clone(),
            deadline_unix_ms: deadline_ms,
        })
    };

    // Member directories: the marker first, then every peer's folder, before any start.
    let peers: Vec<&PlanMember> = plan.members.iter().filter(|m| !m.entry).collect();
    let mut workdirs = Vec::new();
    if !peers.is_empty() {
        let dir = match dirs::create(&places.retention.formations, formation, &plan.project_dir) {
            Ok(dir) => dir,
            Err(d) => return refuse(&d),
        };
        if let Some(line) = &dir.marker_warning {
            stderr_line(line);
        }
        for peer in &peers {
            match dirs::create_peer(&dir.path, &peer.name) {
                Ok(path) => workdirs.push(path),
                Err(d) => return refuse(&d),
            }
        }
    }

    // Start every peer at once, then wait for each door.
    let mut started: Vec<Started> = Vec::new();
    for (peer, workdir) in peers.iter().zip(&workdirs) {
        let spec = spec_for(peer, Vec::new());
        match member::start(
            &places.program,
            &spec,
            formation,
            &[credentials(peer, workdir)],
            &cwd,
        ) {
            Ok(s) => started.push(s),
            Err(e) => {
                let d = Diagnostic::new(
                    E_RUN_045,
                    format!("peer `{}` could not start: {e}", peer.name),
                );
                stderr_line(&d);
                stop_all(&mut started).await;
                return 1;
            }
        }
    }
    let readiness_deadline = |s: &Started| {
        let own = s.started_at + timing::scaled(timing::READINESS);
        deadline.map_or(own, |(d, _)| own.min(d))
    };
    let cancel = CancellationToken::new();
    let mut waits = JoinSet::new();
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap_or_default();
    for (index, mut peer) in started.drain(..).enumerate() {
        let (formation, cancel, http) = (formation.to_string(), cancel.clone(), http.clone());
        let until = readiness_deadline(&peer);
        waits.spawn(async move {
            let result = wait_ready(&mut peer, &formation, until, &http, &cancel).await;
            (index, peer, result)
        });
    }
    let mut ready: Vec<Option<(Started, Ready)>> = (0..peers.len()).map(|_| None).collect();
    let mut failure: Option<Diagnostic> = None;
    let mut interrupted: Option<i32> = None;
    let mut pending = Vec::new();
    while !waits.is_empty() {
        tokio::select! {
            joined = waits.join_next() => {
                let Some(Ok((index, peer, result))) = joined else { continue };
                match result {
                    Ok(r) => ready[index] = Some((peer, r)),
                    Err(why) => {
                        if failure.is_none() && interrupted.is_none() {
                            failure = Some(not_ready(&peers[index].name, &why, deadline.is_some_and(|(d, _)| Instant::now() >= d)));
                            cancel.cancel();
                        }
                        pending.push(peer);
                    }
                }
            }
            signo = signals.next(), if interrupted.is_none() && failure.is_none() => {
                interrupted = Some(signo);
                cancel.cancel();
            }
        }
    }
    if failure.is_some() || interrupted.is_some() {
        let mut all: Vec<Started> = pending;
        all.extend(ready.into_iter().flatten().map(|(s, _)| s));
        if let Some(d) = &failure {
            stderr_line(d);
        }
        stop_all(&mut all).await;
        return interrupted.map_or(1, |s| 128 + s);
    }
    let (mut peers_started, doors): (Vec<Started>, Vec<Ready>) =
        ready.into_iter().flatten().unzip();
    let door_of = |name: &str| -> Option<String> {
        peers
            .iter()
            .position(|p| p.name == name)
            .map(|i| doors[i].door.clone())
    };

    // Hand out addresses: each peer that may call others gets its callees' doors.
    for (peer, started) in peers.iter().zip(peers_started.iter_mut()) {
        if peer.callees.is_empty() {
            continue;
        }
        let line = doors_line(&peer.callees, &door_of);
        let _ = started.channel.send(&line);
    }
    for started in peers_started.iter_mut() {
        drain(started);
    }

    // Start the entry member last, its channel already holding credentials and doors.
    let Some(entry) = plan.members.iter().find(|m| m.entry) else {
        stop_all(&mut peers_started).await;
        return 1;
    };
    if let Some((at, _)) = deadline
        && Instant::now() >= at
    {
        stderr_line(Diagnostic::new(
            E_RUN_053,
            "the formation's deadline fell before its entry member started",
        ));
        stop_all(&mut peers_started).await;
        return 1;
    }
    let lifecycle = match &options.task {
        Some(task) => vec![
            "--lifecycle-task-acceptance".into(),
            "single".into(),
            "--lifecycle-after-task".into(),
            "exit".into(),
            "--task".into(),
            task.clone(),
        ],
        None => vec![
            "--lifecycle-task-acceptance".into(),
            "queue".into(),
            "--lifecycle-after-task".into(),
            "sleep".into(),
            "--lifecycle-idle-timeout".into(),
            "none".into(),
        ],
    };
    let spec = spec_for(entry, lifecycle);
    let mut lines = vec![credentials(entry, &plan.project_dir)];
    if !entry.callees.is_empty() {
        lines.push(doors_line(&entry.callees, &door_of));
    }
    let mut entry_started = match member::start(&places.program, &spec, formation, &lines, &cwd) {
        Ok(s) => s,
        Err(e) => {
            stderr_line(format!(
                "[mur run] error: the entry member `{}` could not start: {e}",
                entry.name
            ));
            stop_all(&mut peers_started).await;
            return 1;
        }
    };

    if let Some(after) = balloon_requested() {
        start_balloon(after);
    }

    // End: the entry member's end, or a signal to the launcher.
    let end = tokio::select! {
        status = entry_started.child.wait() => End::EntryEnded(status.ok()),
        _ = signals.next() => End::Signalled,
    };
    let entry_status = match end {
        End::EntryEnded(status) => {
            stop_all(&mut peers_started).await;
            status
        }
        End::Signalled => {
            peers_started.push(entry_started);
            let statuses = stop_all(&mut peers_started).await;
            statuses.last().copied().flatten()
        }
    };
    exit_code(entry_status)
}

fn spec_for(m: &PlanMember, extra_args: Vec<String>) -> Spec {
    Spec {
        name: m.name.clone(),
        capsule: m.capsule.clone(),
        version: m.version.clone(),
        entry: m.entry,
        extra_args,
        own_group: !m.entry,
    }
}

fn doors_line(callees: &[String], door_of: &dyn Fn(&str) -> Option<String>) -> Line {
    Line::Doors {
        doors: callees
            .iter()
            .filter_map(|c| door_of(c).map(|d| (c.clone(), d)))
            .collect(),
    }
}

/// Reads a peer's readiness, forwarding its stderr behind `[<member>] ` from the start.
async fn wait_ready(
    peer: &mut Started,
    formation: &str,
    until: Instant,
    http: &reqwest::Client,
    cancel: &CancellationToken,
) -> Result<Ready, NotReady> {
    forward_stderr(peer);
    let Some(stdout) = peer.child.stdout.take() else {
        return Err(NotReady::ExitedBeforeReport("no stdout".into()));
    };
    let mut stdout = BufReader::new(stdout);
    let started = peer.started_at;
    let result = tokio::select! {
        r = readiness::wait(&mut peer.child, &mut stdout, formation, started, until, http) => r,
        _ = cancel.cancelled() => Err(NotReady::NoReport(until.saturating_duration_since(started))),
    };
    peer.child.stdout = Some(stdout.into_inner());
    result
}

/// A peer's diagnostics go to the launcher's stderr behind its `[<member>]` prefix.
fn forward_stderr(peer: &mut Started) {
    let Some(stderr) = peer.child.stderr.take() else {
        return;
    };
    let prefix = format!("[{}] ", peer.name);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut out = tokio::io::stderr();
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = out.write_all(format!("{prefix}{line}\n").as_bytes()).await;
        }
    });
}

/// Keeps reading a ready peer's stdout so it never blocks on a full pipe.
fn drain(peer: &mut Started) {
    if let Some(mut stdout) = peer.child.stdout.take() {
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut stdout, &mut tokio::io::sink()).await;
        });
    }
}

fn not_ready(name: &str, why: &NotReady, deadline_fell: bool) -> Diagnostic {
    if deadline_fell {
        return Diagnostic::new(
            E_RUN_053,
            format!("the formation's deadline fell while peer `{name}` was coming up"),
        );
    }
    Diagnostic::new(E_RUN_045, format!("peer `{name}` did not come up: {why}"))
}

fn refuse(d: &Diagnostic) -> i32 {
    stderr_line(d);
    1
}

/// Closes every lifeline at once, then waits for each member, SIGKILLing a member's
/// process group 25 s after its lifeline closed. Returns each exit status in order.
async fn stop_all(members: &mut [Started]) -> Vec<Option<std::process::ExitStatus>> {
    for m in members.iter_mut() {
        m.lifeline.close();
    }
    let grace = timing::scaled(timing::WIND_DOWN_KILL);
    let stops = members.iter_mut().map(|m| m.reap(grace));
    futures_util::future::join_all(stops).await
}

/// The entry member's status as the launcher's: its code, or 128 + the signal.
fn exit_code(status: Option<std::process::ExitStatus>) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => s
            .code()
            .or_else(|| s.signal().map(|sig| 128 + sig))
            .unwrap_or(1),
        None => 1,
    }
}

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The documented test setting (docs/testing.md) that makes the launcher itself grow
/// until the OOM killer ends it, `<seconds>` after the entry member has started. Off
/// unless set to a whole number of seconds.
pub const BALLOON_ENV: &str = crate::env::MUR_TEST_LAUNCHER_BALLOON;

fn balloon_requested() -> Option<Duration> {
    parse_balloon(std::env::var(BALLOON_ENV).ok().as_deref())
}

fn parse_balloon(value: Option<&str>) -> Option<Duration> {
    value?.trim().parse().ok().map(Duration::from_secs)
}

/// Test-only: the e2e suite's OOM scenario needs the kernel to pick the launcher, not
/// a member, as its victim. A container's memory limit alone does not make that
/// certain (oom_badness rounds oom_score_adj), so the launcher makes itself the
/// largest process by far: it raises its own oom_score_adj to 1000 (raising needs no
/// privilege; members started earlier keep theirs) and, on a thread of its own,
/// allocates and touches memory in 1 MiB steps, forever. Nothing frees it: only the
/// OOM killer ends this process, which is the point. The delay lets a test see the
/// formation up, then stay still while the kernel acts.
fn start_balloon(after: Duration) {
    use std::io::Write;
    let _ = std::fs::write("/proc/self/oom_score_adj", "1000");
    // Never a panic on a closed stderr.
    let _ = writeln!(
        std::io::stderr(),
        "[mur run] test setting {BALLOON_ENV}: the launcher allocates until killed, from {after:?} on"
    );
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let mut held: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut chunk = vec![0u8; 1 << 20];
            // Touch every page so the memory is really charged to the cgroup.
            for page in chunk.iter_mut().step_by(4096) {
                *page = 1;
            }
            held.push(std::hint::black_box(chunk));
        }
    });
}

/// SIGINT, SIGTERM and SIGHUP to the launcher, as one stream of signal numbers.
struct Signals {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
    hup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Signals {
        Signals {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
            hup: signal(SignalKind::hangup()).ok(),
        }
    }

    async fn next(&mut self) -> i32 {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = recv(&mut self.int) => libc::SIGINT,
            _ = recv(&mut self.term) => libc::SIGTERM,
            _ = recv(&mut self.hup) => libc::SIGHUP,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_balloon_is_off_unless_given_whole_seconds() {
        assert_eq!(parse_balloon(None), None);
        assert_eq!(parse_balloon(Some("0")), Some(Duration::ZERO));
        assert_eq!(parse_balloon(Some(" 6 ")), Some(Duration::from_secs(6)));
        for off in ["", "yes", "-1", "1.5", "6s"] {
            assert_eq!(parse_balloon(Some(off)), None, "{off}");
        }
    }
}
