//! `mur run --roster`: launching an admitted roster, step by step as the spec's
//! "Launching a formation" gives them, and ending it as "How a formation ends" does.
//!
//! Admit → mint → start the peers → wait for each door → hand out addresses → start
//! the entry member → end. The signing key lives only in this process's memory and
//! is dropped with it; every member holds the read end of a lifeline whose write end
//! only this process holds.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::catalogue::{E_RUN_045, E_RUN_053};
use crate::channel::{Credentials, Line};
use crate::credential::FormationKey;
use crate::diag::Diagnostic;
pub use crate::formation::announce::Voice;
use crate::formation::exits::{self, ExitRecord};
use crate::formation::member::{self, Forwarders, Spec, Started, drain, forward_stderr};
use crate::formation::root::Root;
use crate::formation::{announce, dirs, failures};
use crate::ids::{MemberName, Sha256};
use crate::manifest::Retain;
use crate::output::stderr_line;
use crate::readiness::{NotReady, Ready};
use crate::retention;
use crate::signals::{Signal, Signals};
use crate::timing;

/// An admitted roster, reduced to what launching it needs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The roster's project directory, symlinks resolved.
    pub project_dir: PathBuf,
    /// In roster order.
    pub members: Vec<PlanMember>,
    /// The entry member's `trace.retain`.
    pub retain: Retain,
}

#[derive(Debug, Clone)]
pub struct PlanMember {
    pub name: MemberName,
    pub capsule: String,
    pub version: String,
    pub sha256: Sha256,
    pub entry: bool,
    /// The members it may call, in roster order.
    pub callees: Vec<MemberName>,
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--task`: the entry member runs that one task and the formation ends with it.
    pub task: Option<String>,
    /// `--deadline`: one moment, counted from the launcher's start.
    pub deadline: Option<Duration>,
    /// When the launcher started (before admission); `None`: when `launch` is called.
    pub started: Option<(std::time::Instant, SystemTime)>,
    /// `--json`, `-q`, or neither.
    pub voice: announce::Voice,
    /// Live trace export: each member's, on its channel (docs/trace.md, Live export).
    pub otlp: Option<crate::trace::live::Target>,
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

/// [`launch`] as the `mur run --roster` process does it: a subreaper that kills what
/// a dead member left behind (its strays) while the formation runs, and every
/// descendant once every member stopped (docs/design/descendants.md). Only for a process
/// that is the launcher: it kills every child it does not own.
pub async fn launch_as_process(plan: &Plan, options: &Options, places: &Places) -> i32 {
    let key = match FormationKey::mint() {
        Ok(key) => key,
        Err(e) => {
            stderr_line(format!("[mur run] error: cannot mint a formation key: {e}"));
            return 1;
        }
    };
    // Before any member starts, so all of them and theirs are started in it.
    let cgroup = match crate::cgroup::FormationCgroup::make(key.formation_id().as_str()) {
        Ok(cgroup) => {
            tracing::info!("the formation's cgroup: {}", cgroup.dir().display());
            Some(cgroup)
        }
        Err(why) => {
            tracing::info!(
                "no formation cgroup ({why}): a grandchild that escaped the entry member's harness outlives a kill of the launcher's group (docs/design/descendants.md)"
            );
            None
        }
    };
    crate::descendants::become_subreaper();
    // A stray gets what a member gets: SIGTERM, then SIGKILL 25 s later.
    let grace = timing::scaled(timing::WIND_DOWN_KILL);
    let strays = crate::descendants::watch_strays(STRAY_WATCH, Some(grace));
    let status = launch(plan, options, places, key, cgroup.as_ref()).await;
    strays.abort();
    let last = timing::scaled(LAST_STRAY_WAIT);
    let _ = tokio::task::spawn_blocking(move || {
        crate::descendants::end_strays_then_sweep(grace, last);
        if let Some(cgroup) = cgroup {
            cgroup.end();
        }
    })
    .await;
    status
}

/// How often the launcher looks for what a dead member left behind.
const STRAY_WATCH: Duration = Duration::from_millis(500);
/// How long, at most, the launcher's end waits for strays to end on their SIGTERM.
const LAST_STRAY_WAIT: Duration = Duration::from_secs(2);

/// Launches `plan` as formation `key`, every member in `cgroup` when there is one, and
/// returns the launcher's exit status once every member stopped. The key is dropped
/// with the launch.
pub async fn launch(
    plan: &Plan,
    options: &Options,
    places: &Places,
    key: FormationKey,
    cgroup: Option<&crate::cgroup::FormationCgroup>,
) -> i32 {
    let (started, wall) = options
        .started
        .unwrap_or_else(|| (std::time::Instant::now(), SystemTime::now()));
    let started = Instant::from_std(started);
    let deadline = options.deadline.map(|d| (started + d, wall + d));
    let formation = key.formation_id().to_string();
    let launch = Launch {
        plan,
        options,
        places,
        key: &key,
        cgroup,
        deadline,
        signals: Signals::new(&[Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP]),
        cwd: std::env::current_dir().unwrap_or_else(|_| plan.project_dir.clone()),
        peers: plan.members.iter().filter(|m| !m.entry).collect(),
        workdirs: Vec::new(),
        started: Vec::new(),
        doors: Vec::new(),
        up: Vec::new(),
        launched_at: started,
        ended: Vec::new(),
        formation_dir: None,
        exits: Vec::new(),
        signalled: false,
        forwarders: Forwarders::default(),
        root: None,
        progress: announce::Progress::start(
            plan.members.iter().map(|m| m.name.to_string()).collect(),
            started,
        ),
    };
    let status = launch.run().await;
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

/// One launch, as its steps leave it.
struct Launch<'a> {
    plan: &'a Plan,
    options: &'a Options,
    places: &'a Places,
    key: &'a FormationKey,
    /// The formation's cgroup, every member started in it.
    cgroup: Option<&'a crate::cgroup::FormationCgroup>,
    /// The formation's `--deadline`, as an instant and as the moment members are told.
    deadline: Option<(Instant, SystemTime)>,
    signals: Signals,
    /// The launcher's folder: every member starts in it.
    cwd: PathBuf,
    /// The members other than the entry, in roster order.
    peers: Vec<&'a PlanMember>,
    /// Each peer's folder (`make_dirs`), in `peers` order.
    workdirs: Vec<PathBuf>,
    /// Every member started and not yet stopped. After `await_doors`, the peers in
    /// `peers` order.
    started: Vec<Started>,
    /// Each peer's door URL (`await_doors`), in `peers` order.
    doors: Vec<String>,
    /// Each peer as it came up (`await_doors`), in `peers` order.
    up: Vec<announce::MemberUp>,
    /// When the launcher started.
    launched_at: Instant,
    /// Each member's end as the launcher saw it, for the termination message.
    ended: Vec<(MemberName, Option<std::process::ExitStatus>)>,
    /// `~/.murmur/formations/<frm_id>/`, once made (a formation with peers).
    formation_dir: Option<PathBuf>,
    /// The peers that exited while the formation ran, in the order they did.
    exits: Vec<ExitRecord>,
    /// The formation ended on a signal to the launcher.
    signalled: bool,
    /// The progress line while members come up (a terminal only).
    progress: announce::Progress,
    /// The tasks forwarding each peer's stderr: awaited at the end, so a peer's last
    /// lines (`status: ok`) are out before the launcher exits.
    forwarders: Forwarders,
    /// With `--task`: the trace root, the entry task's parent, once the entry started.
    root: Option<Root>,
}

/// A launch that stops before its entry member ends: the line to print, if any, and
/// the launcher's exit status. Every member started so far is then stopped.
struct Halt {
    line: Option<String>,
    status: i32,
}

impl Halt {
    fn with(line: Diagnostic) -> Halt {
        Halt {
            line: Some(line.to_string()),
            status: 1,
        }
    }
}

/// Why the formation ended.
enum End {
    EntryEnded(Option<std::process::ExitStatus>),
    Signalled,
}

impl Launch<'_> {
    async fn run(mut self) -> i32 {
        let status = match self.steps().await {
            Ok(status) => status,
            Err(halt) => {
                self.progress.finish();
                if let Some(line) = &halt.line {
                    stderr_line(line);
                }
                self.stop_all().await;
                halt.status
            }
        };
        self.write_verdict(status);
        // Every member has stopped: its stderr reaches its end soon; not waited on
        // for long if something it left behind holds it open.
        let forwarders: Vec<_> =
            std::mem::take(&mut *self.forwarders.lock().unwrap_or_else(|p| p.into_inner()));
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            futures_util::future::join_all(forwarders),
        )
        .await;
        status
    }

    /// The spec's "Launching a formation", in order.
    async fn steps(&mut self) -> Result<i32, Halt> {
        self.make_dirs()?;
        self.start_peers()?;
        let plan = self.plan;
        let Some(entry) = plan.members.iter().find(|m| m.entry) else {
            return Err(Halt {
                line: None,
                status: 1,
            });
        };
        // Signed while the peers come up: a token per callee is an ed25519 signature
        // (17 µs here), which would otherwise delay the entry member's start.
        let credentials = self.credentials(entry, &plan.project_dir);
        self.await_doors().await?;
        self.hand_out_doors();
        let mut entry = self.start_entry(entry, credentials)?;
        let formation = self.announced();
        let relay = entry
            .child
            .stdout
            .take()
            .map(|out| announce::relay(out, formation.clone()));
        crate::testing::launcher_balloon();
        let status = self.await_end(entry).await;
        let relayed = match relay {
            Some(relay) => announce::relayed(relay).await,
            None => announce::Relayed::default(),
        };
        let entry_session = relayed.entry.as_ref().map(|r| r.session_id.clone());
        let failed = self.failed(entry_session);
        for f in &failed {
            stderr_line(f.line());
        }
        let task = self.options.task.is_some();
        let how = (task, self.signalled, status);
        announce::finish(relayed, &formation, how, &failed, &self.exits);
        if let Some(root) = self.root.take() {
            let (id, target) = (formation.id.clone(), self.options.otlp.clone());
            let _ = tokio::task::spawn_blocking(move || root.close(&id, target.as_ref())).await;
        }
        Ok(status)
    }

    /// The formation as `announce` names it: every member in roster order, the
    /// entry member's session and door to come from its readiness line.
    fn announced(&self) -> announce::Formation {
        let members = self
            .plan
            .members
            .iter()
            .map(|m| {
                self.up
                    .iter()
                    .find(|u| u.name == m.name)
                    .cloned()
                    .unwrap_or_else(|| announce::MemberUp {
                        name: m.name.clone(),
                        entry: m.entry,
                        session_id: String::new(),
                        door: String::new(),
                    })
            })
            .collect();
        announce::Formation {
            id: self.key.formation_id().to_string(),
            voice: self.options.voice,
            started: self.launched_at,
            members,
            progress: self.progress.clone(),
        }
    }

    /// The formation directory's marker first, then every peer's folder, before any
    /// member starts. A formation of the entry member alone has none.
    fn make_dirs(&mut self) -> Result<(), Halt> {
        if self.peers.is_empty() {
            return Ok(());
        }
        let formation = self.key.formation_id();
        let dir = dirs::create(
            &self.places.retention.formations,
            formation,
            &self.plan.project_dir,
        )
        .map_err(Halt::with)?;
        if let Some(line) = &dir.marker_warning {
            stderr_line(line);
        }
        for peer in &self.peers {
            self.workdirs
                .push(dirs::create_peer(&dir.path, peer.name.as_str()).map_err(Halt::with)?);
        }
        self.formation_dir = Some(dir.path);
        Ok(())
    }

    /// Starts every peer at once, each with its credentials on its channel: every one
    /// is cloned before the launcher waits for the first to run its program.
    fn start_peers(&mut self) -> Result<(), Halt> {
        let mut starting = Vec::new();
        let mut failure = None;
        for (peer, workdir) in self.peers.iter().zip(&self.workdirs) {
            let spec = spec_for(peer, Vec::new());
            tracing::debug!(
                "starting peer `{}` ({} {}) in {}",
                peer.name,
                peer.capsule,
                peer.version,
                workdir.display()
            );
            let lines = [self.credentials(peer, workdir)];
            match member::start(
                &self.places.program,
                &spec,
                self.key.formation_id(),
                &lines,
                &self.cwd,
                self.cgroup.map(|c| c.fd()),
            ) {
                Ok(s) => starting.push((peer.name.clone(), s)),
                Err(e) => {
                    failure = Some((peer.name.clone(), e));
                    break;
                }
            }
        }
        // Each one started is the launcher's to stop, whatever became of the others.
        for (name, s) in starting {
            match s.started() {
                Ok(s) => self.started.push(s),
                Err(e) => failure = failure.or(Some((name, e))),
            }
        }
        match failure {
            None => Ok(()),
            Some((name, e)) => Err(Halt::with(Diagnostic::new(
                E_RUN_045,
                format!("peer `{name}` could not start: {e}"),
            ))),
        }
    }

    /// Waits for each peer's readiness (its door), all at once. The first peer that
    /// does not come up, or a signal, stops the wait for all.
    async fn await_doors(&mut self) -> Result<(), Halt> {
        let formation = self.key.formation_id();
        let deadline = self.deadline;
        let cancel = CancellationToken::new();
        let mut waits = JoinSet::new();
        let http = crate::door::client().build().map_err(|e| {
            Halt::with(Diagnostic::new(
                E_RUN_045,
                format!("cannot make the HTTP client that probes doors: {e}"),
            ))
        })?;
        for (index, mut peer) in self.started.drain(..).enumerate() {
            let (formation, cancel, http) = (formation.to_string(), cancel.clone(), http.clone());
            let forwarders = self.forwarders.clone();
            let own = peer.started_at + timing::scaled(timing::READINESS);
            let until = deadline.map_or(own, |(d, _)| own.min(d));
            waits.spawn(async move {
                forward_stderr(&mut peer, &forwarders);
                let result = member::wait_ready(&mut peer, &formation, until, &http, &cancel).await;
                (index, peer, result)
            });
        }
        let mut ready: Vec<Option<(Started, Ready)>> =
            (0..self.peers.len()).map(|_| None).collect();
        let mut failure: Option<Diagnostic> = None;
        let mut interrupted: Option<Signal> = None;
        let mut pending = Vec::new();
        while !waits.is_empty() {
            tokio::select! {
                joined = waits.join_next() => {
                    let Some(Ok((index, peer, result))) = joined else { continue };
                    match result {
                        Ok(r) => {
                            tracing::info!("peer `{}` is up: session {} at {}", self.peers[index].name, r.session_id, r.door);
                            self.progress.up(self.peers[index].name.as_str());
                            ready[index] = Some((peer, r));
                        }
                        Err(why) => {
                            if failure.is_none() && interrupted.is_none() {
                                let fell = deadline.is_some_and(|(d, _)| Instant::now() >= d);
                                failure = Some(not_ready(self.peers[index].name.as_str(), &why, fell));
                                cancel.cancel();
                            }
                            pending.push(peer);
                        }
                    }
                }
                sig = self.signals.next(), if interrupted.is_none() && failure.is_none() => {
                    interrupted = Some(sig);
                    cancel.cancel();
                }
            }
        }
        if failure.is_some() || interrupted.is_some() {
            self.started = pending;
            self.started
                .extend(ready.into_iter().flatten().map(|(s, _)| s));
            return Err(Halt {
                line: failure.map(|d| d.to_string()),
                status: interrupted.map_or(1, crate::signals::exit_code),
            });
        }
        let (started, ready): (Vec<Started>, Vec<Ready>) = ready.into_iter().flatten().unzip();
        self.started = started;
        self.doors = ready.iter().map(|r| r.door.clone()).collect();
        self.up = self
            .peers
            .iter()
            .zip(ready)
            .map(|(p, r)| announce::MemberUp {
                name: p.name.clone(),
                entry: false,
                session_id: r.session_id,
                door: r.door,
            })
            .collect();
        Ok(())
    }

    /// Each peer that may call others gets its callees' doors; then every peer's
    /// stdout is drained so it never blocks on a full pipe.
    fn hand_out_doors(&mut self) {
        for (i, peer) in self.peers.iter().enumerate() {
            if !peer.callees.is_empty() {
                let line = self.doors_line(&peer.callees);
                let _ = self.started[i].channel.send(&line);
            }
        }
        for started in self.started.iter_mut() {
            drain(started);
        }
    }

    /// Starts the entry member last, its channel already holding its credentials and
    /// its callees' doors.
    fn start_entry(&mut self, entry: &PlanMember, credentials: Line) -> Result<Started, Halt> {
        if let Some((at, _)) = self.deadline
            && Instant::now() >= at
        {
            return Err(Halt::with(Diagnostic::new(
                E_RUN_053,
                "the formation's deadline fell before its entry member started",
            )));
        }
        let root = self.options.task.is_some().then(Root::open);
        let traceparent = root.as_ref().map(Root::traceparent);
        let spec = spec_for(
            entry,
            entry_lifecycle(self.options.task.as_deref(), traceparent),
        );
        tracing::info!(
            "starting the entry member `{}` ({} {})",
            entry.name,
            entry.capsule,
            entry.version
        );
        let mut lines = vec![credentials];
        if !entry.callees.is_empty() {
            lines.push(self.doors_line(&entry.callees));
        }
        let started = member::start(
            &self.places.program,
            &spec,
            self.key.formation_id(),
            &lines,
            &self.cwd,
            self.cgroup.map(|c| c.fd()),
        )
        .and_then(member::Starting::started)
        .map_err(|e| Halt {
            line: Some(format!(
                "[mur run] error: the entry member `{}` could not start: {e}",
                entry.name
            )),
            status: 1,
        })?;
        self.root = root;
        Ok(started)
    }

    /// The end: the entry member's end, or a signal to the launcher. Either way every
    /// member is stopped; the entry member's status is the launcher's.
    async fn await_end(&mut self, mut entry: Started) -> i32 {
        // A peer that exits meanwhile is reported, and the formation goes on.
        let mut reported = vec![false; self.started.len()];
        let end = loop {
            tokio::select! {
                status = entry.child.wait() => break End::EntryEnded(status.ok()),
                _ = self.signals.next() => break End::Signalled,
                (i, status) = member::next_exit(&mut self.started, &reported) => {
                    reported[i] = true;
                    self.peer_exited(i, status, &mut entry);
                }
            }
        };
        let entry_status = match end {
            End::EntryEnded(status) => {
                self.ended.push((entry.name.clone(), status));
                self.stop_all().await;
                status
            }
            End::Signalled => {
                self.signalled = true;
                self.started.push(entry);
                let statuses = self.stop_all().await;
                statuses.last().copied().flatten()
            }
        };
        exit_code(entry_status)
    }

    /// Peer `i` (in `peers` order) exited while the formation runs: said on stderr,
    /// recorded in the formation's directory, and told to every member that may call
    /// it, so that its calls fail at once (`formation::exits`).
    fn peer_exited(
        &mut self,
        i: usize,
        status: Option<std::process::ExitStatus>,
        entry: &mut Started,
    ) {
        let (Some(peer), Some(up)) = (self.peers.get(i), self.up.get(i)) else {
            return;
        };
        let (code, signal) = exits::status_of(status);
        let record = ExitRecord {
            member: peer.name.clone(),
            session_id: up.session_id.clone(),
            capsule: peer.capsule.clone(),
            version: peer.version.clone(),
            pid: self.started[i].pid,
            exited_at: crate::a2a::time::now(),
            status: code,
            signal,
        };
        stderr_line(record.line());
        if let Some(dir) = &self.formation_dir
            && let Err(e) = exits::append(dir, &record)
        {
            tracing::warn!("cannot record that `{}` exited: {e}", record.member);
        }
        let line = record.channel_line();
        let callers = self
            .plan
            .members
            .iter()
            .filter(|m| m.callees.contains(&peer.name));
        for caller in callers {
            let channel = if caller.entry {
                Some(&mut entry.channel)
            } else {
                let j = self.peers.iter().position(|p| p.name == caller.name);
                j.and_then(|j| self.started.get_mut(j))
                    .map(|s| &mut s.channel)
            };
            // A caller that has exited too reads nothing: its pipe's error is no news.
            if let Some(channel) = channel {
                let _ = channel.send(&line);
            }
        }
        self.exits.push(record);
    }

    /// The members whose tasks failed, from their traces, every member stopped.
    fn failed(&self, entry_session: Option<String>) -> Vec<failures::Failed> {
        let members: Vec<(MemberName, String)> = self
            .plan
            .members
            .iter()
            .filter_map(|m| {
                let session = match m.entry {
                    true => entry_session.clone(),
                    false => self
                        .up
                        .iter()
                        .find(|u| u.name == m.name)
                        .map(|u| u.session_id.clone()),
                };
                Some((m.name.clone(), session?))
            })
            .collect();
        failures::of(&crate::paths::records_root(), &members, &self.exits)
    }

    /// [`stop_all`], each end kept for the termination message.
    async fn stop_all(&mut self) -> Vec<Option<std::process::ExitStatus>> {
        let statuses = member::stop_all(&mut self.started).await;
        let names = self.started.iter().map(|m| m.name.clone());
        self.ended.extend(names.zip(statuses.iter().copied()));
        statuses
    }

    /// The termination message, in a pod (docs/kubernetes.md): every roster member,
    /// in roster order, with its end.
    fn write_verdict(&self, status: i32) {
        use crate::kube::verdict::{Outcome, write};
        let outcomes: Vec<Outcome> = self
            .plan
            .members
            .iter()
            .map(|m| Outcome {
                member: m.name.to_string(),
                entry: m.entry,
                status: self
                    .ended
                    .iter()
                    .find(|(n, _)| n == &m.name)
                    .and_then(|(_, s)| *s),
            })
            .collect();
        write(
            self.key.formation_id().as_str(),
            &outcomes,
            status,
            self.signalled,
        );
    }

    /// A member's channel's first line: who it is, and a token per callee.
    fn credentials(&self, m: &PlanMember, workdir: &Path) -> Line {
        Line::Credentials(Credentials {
            formation: self.key.formation_id().clone(),
            member: m.name.clone(),
            entry: m.entry,
            verify_key: self.key.verify_key().key_text(),
            tokens: m
                .callees
                .iter()
                .map(|to| (to.clone(), self.key.issue(m.name.as_str(), to.as_str())))
                .collect(),
            project_dir: self.plan.project_dir.clone(),
            workdir: workdir.to_path_buf(),
            artifact_sha256: m.sha256.clone(),
            deadline_unix_ms: self.deadline.map(|(_, at)| unix_ms(at)),
            otlp: self.options.otlp.clone().map(Box::new),
        })
    }

    /// A `doors` line: each callee's door URL (the callees are peers, never the entry).
    fn doors_line(&self, callees: &[MemberName]) -> Line {
        Line::Doors {
            doors: callees
                .iter()
                .filter_map(|c| {
                    let i = self.peers.iter().position(|p| &p.name == c)?;
                    Some((c.clone(), self.doors.get(i)?.clone()))
                })
                .collect(),
        }
    }
}

/// The entry member's lifecycle flags: `--task` runs one task and ends the formation
/// with it, under the trace root `traceparent`; otherwise it queues tasks and sleeps,
/// with no idle timeout.
fn entry_lifecycle(task: Option<&str>, traceparent: Option<String>) -> Vec<String> {
    let flags: &[&str] = match task {
        Some(_) => &[
            "--lifecycle-task-acceptance",
            "single",
            "--lifecycle-after-task",
            "exit",
            "--task",
        ],
        None => &[
            "--lifecycle-task-acceptance",
            "queue",
            "--lifecycle-after-task",
            "sleep",
            "--lifecycle-idle-timeout",
            "none",
        ],
    };
    let mut args: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    if let Some(task) = task {
        args.push(task.into());
    }
    // The launcher opens the formation task's trace: its root span is the entry
    // task's parent (docs/trace.md, Trace context).
    if let Some(traceparent) = traceparent {
        args.extend(["--trace-parent".into(), traceparent]);
    }
    args
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

fn not_ready(name: &str, why: &NotReady, deadline_fell: bool) -> Diagnostic {
    if deadline_fell {
        return Diagnostic::new(
            E_RUN_053,
            format!("the formation's deadline fell while peer `{name}` was coming up"),
        );
    }
    Diagnostic::new(E_RUN_045, format!("peer `{name}` did not come up: {why}"))
}

/// The entry member's status as the launcher's: its code, or 128 + the signal.
fn exit_code(status: Option<std::process::ExitStatus>) -> i32 {
    exits::status_of(status).0
}

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
