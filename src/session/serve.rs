//! The session: stage it (formation environment, capsule, records, door, running
//! record), announce it, run the tasks its door accepts one after another, and end it
//! as `ends` says.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::capsule::{self, Capsule};
use super::ends::{self, Cause};
use super::formation::{self, Membership, Place};
use super::resume::{self, Resumed};
use super::task::{self, TaskEnv};
use super::{AcceptanceFlag, AfterTaskFlag, IdleTimeout, RunArgs};
use crate::a2a::{self, Message, Role};
use crate::agent::{PromptParts, TransportConfig};
use crate::catalogue::{self, E_RUN_002};
use crate::diag::{Diagnostic, Result};
use crate::door::{self, Credential, Door, DoorConfig, Work, WorkReceiver};
use crate::manifest::{self, HookEvent, Transport};
use crate::readiness::ReadinessLine;
use crate::records::{self, Identity, Records, StartInfo};
use crate::running::{self, RunningDir, RunningRecord};
use crate::signals::{Signal, Signals};
use crate::trace::{self, Event, ExitStatus, RecordedState, TraceWriter};
use crate::{output, paths, timing};

/// The lifecycle in force: the manifest's, with the flags laid over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LifecycleInForce {
    pub acceptance: door::Acceptance,
    pub exit_after_task: bool,
    pub idle_timeout: Option<Duration>,
}

impl LifecycleInForce {
    pub(crate) fn of(m: &manifest::Lifecycle, args: &RunArgs) -> LifecycleInForce {
        let queue = match args.lifecycle_task_acceptance {
            Some(a) => a == AcceptanceFlag::Queue,
            None => m.task_acceptance == manifest::TaskAcceptance::Queue,
        };
        // `--task` runs one task: the session ends after it unless the flag says sleep.
        let exit_after_task = match args.lifecycle_after_task {
            Some(a) => a == AfterTaskFlag::Exit,
            None => args.task.is_some() || m.after_task == manifest::AfterTask::Exit,
        };
        let idle = match args.lifecycle_idle_timeout {
            Some(IdleTimeout::None) => None,
            Some(IdleTimeout::Seconds(s)) => Some(s),
            None => m.idle_timeout,
        };
        LifecycleInForce {
            acceptance: if queue {
                door::Acceptance::Queue {
                    depth: m.queue_depth,
                }
            } else {
                door::Acceptance::Single
            },
            exit_after_task,
            idle_timeout: idle.map(Duration::from_secs),
        }
    }
}

/// Runs `mur run` (not `--roster`). Refusals before the session exists are `Err`;
/// once its records exist every end is reported in them and the status returned.
pub(crate) async fn session(args: &RunArgs) -> Result<i32> {
    // Handlers first: a SIGTERM from the moment the readiness line is out (or before)
    // must wind the session down, never kill it with the default action.
    let mut signals = Signals::new(&ends::SIGNALS);
    let task_text = args.task_text()?;
    let resumed = match &args.resume {
        Some(id) => Some(resume::find(id)?),
        None => None,
    };
    let place = formation::read(resumed.is_some(), &|d| output::stderr_line(d)).await?;
    let (member, unbound_formation) = match place {
        Place::None => (None, None),
        Place::Unbound { formation_id } => (None, Some(formation_id)),
        Place::Member(m) => (Some(m), None),
    };
    if member.as_ref().is_some_and(|m| m.lifeline.is_some()) {
        signals.stop_watching(Signal::SIGINT);
    }
    // A delegated child's spawner lifeline: it ends the child as a lifeline ends a member.
    let spawner = match &resumed {
        Some(_) => None,
        None => crate::delegation::spawner_lifeline()?,
    };
    let cwd = std::env::current_dir()
        .map_err(|e| Diagnostic::new(E_RUN_002, format!("no current folder: {e}")))?;
    let capsule = match (&resumed, &args.capsule) {
        (Some(r), _) => r.capsule()?,
        (None, Some(name)) => {
            // A member resolves from its roster's project; any other run from the
            // project the current folder is in (its stores and murmur.lock).
            let here = crate::paths::project_root(&cwd);
            let project = member.as_ref().map_or(&here, |m| &m.project_dir);
            let bound = member.as_ref().map(|m| m.artifact_sha256.as_str());
            let version = match &args.capsule_version {
                Some(v) => v.clone(),
                None => capsule::version_for(project, name)?,
            };
            capsule::installed(project, name, &version, bound)?
        }
        _ => capsule::from_folder(&cwd)?,
    };
    let workdir = match (&resumed, &member) {
        (Some(r), _) => r.workdir.clone(),
        (None, Some(m)) => m.workdir.clone(),
        (None, None) => cwd.clone(),
    };
    if let Some(m) = &member {
        m.peers
            .set_allow(capsule.manifest.capabilities.network.allow.clone());
        if let Some(w) = m.peers.network_warning(&m.name) {
            output::stderr_line(&w);
        }
    }
    // Read and checked now (a core module or another world refuses the start);
    // compiled only when a call needs it.
    let components = crate::component::Catalog::open(&capsule.root, &capsule.manifest)?;
    if let Some(w) = capsule::harness_not_confined(&capsule) {
        output::stderr_line(&w);
    }
    let lifecycle = LifecycleInForce::of(&capsule.manifest.lifecycle, args);
    let deadline = earliest(
        args.deadline().map(|d| SystemTime::now() + d),
        member.as_ref().and_then(|m| m.deadline),
    );
    let stage = Stage {
        args,
        capsule,
        workdir,
        member,
        unbound_formation,
        resumed,
        lifecycle,
        deadline,
        task_text,
        signals: Some(signals),
        spawner,
        components: Some(components),
    };
    stage.run().await
}

fn earliest(a: Option<SystemTime>, b: Option<SystemTime>) -> Option<SystemTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A moment on the wall clock as a runtime instant.
fn instant_of(at: SystemTime) -> Instant {
    let left = at
        .duration_since(SystemTime::now())
        .unwrap_or(Duration::ZERO);
    Instant::now() + left
}

struct Stage<'a> {
    args: &'a RunArgs,
    capsule: Capsule,
    workdir: PathBuf,
    member: Option<Box<Membership>>,
    /// W-RUN-007: the formation id of a member started by hand (its running record
    /// names it, so `mur stop <frm_id>` reaches it; nothing else does).
    unbound_formation: Option<String>,
    resumed: Option<Resumed>,
    lifecycle: LifecycleInForce,
    deadline: Option<SystemTime>,
    task_text: Option<String>,
    signals: Option<Signals>,
    /// A delegated child's spawner lifeline.
    spawner: Option<std::os::fd::OwnedFd>,
    /// The capsule's tools and hooks, until the session's records exist.
    components: Option<crate::component::Catalog>,
}

/// A session whose records, door and running record exist.
struct Live {
    session_id: String,
    trace: Arc<TraceWriter>,
    door: Door,
    work: WorkReceiver,
    running: RunningDir,
    env: Arc<TaskEnv>,
    formation_id: Option<String>,
    /// `trace.retain`, applied to the project's sessions at the end.
    retain: crate::retention::Policy,
    /// How the `--task` task's end is reported on stdout.
    report: Report,
    /// The `--task` task, until its end was reported.
    first_task: Option<String>,
}

/// How the end of the `--task` task is reported on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Report {
    /// Its `out/result.txt`, as it is.
    Text,
    /// `--json`: one outcome line (`readiness::OutcomeLine`).
    Json,
}

impl Stage<'_> {
    async fn run(mut self) -> Result<i32> {
        let session_id = match &self.resumed {
            Some(r) => r.session_id.clone(),
            None => crate::ids::SessionId::mint().to_string(),
        };
        let formation_id = self.member.as_ref().map(|m| m.formation_id.clone());
        let (records, trace, murmur_md) = self.records(&session_id)?;
        output::set_bootstrap_log(records.logs_dir().join(output::BOOTSTRAP_LOG));
        let token = running::new_token();
        trace.forbid(&token);
        if let Err(d) = self.transport(&records).check() {
            return Ok(fail_early(&trace, &d));
        }
        let (door, work, on_stop) = match self.door(&session_id, &token, &records, &trace).await {
            Ok(d) => d,
            Err(d) => return Ok(fail_early(&trace, &d)),
        };
        let running = RunningDir::default();
        let record = RunningRecord {
            session_id: session_id.clone(),
            pid: std::process::id(),
            start_time: crate::proc::start_time(std::process::id()),
            started_at: trace::now(),
            capsule: self.capsule.name.clone(),
            version: self.capsule.version.clone(),
            door_url: Some(door_base(&door)),
            workdir: self.workdir.clone(),
            records_dir: records.dir.clone(),
            formation_id: formation_id.clone().or(self.unbound_formation.clone()),
            formation_member: self.member.as_ref().map(|m| m.name.clone()),
            formation_entry: self.member.as_ref().is_some_and(|m| m.entry),
            // A member holding a lifeline was started by its launcher, directly.
            launcher: self
                .member
                .as_ref()
                .filter(|m| m.lifeline.is_some())
                .and_then(|_| crate::running::Process::parent()),
        };
        let flusher = match records.flusher() {
            Ok(f) => f,
            Err(e) => {
                let d = Diagnostic::new(
                    catalogue::E_REC_001,
                    format!("cannot start the records' flush thread: {e}"),
                );
                return Ok(fail_early(&trace, &d));
            }
        };
        if let Err(d) = running.register(&record, &token) {
            return Ok(fail_early(&trace, &d));
        }
        // murmur.WatchSession: each record as it is written (a resumed session's
        // watchers get only its own).
        let events = door.events().clone();
        trace.tap(move |line| events.publish_json(line));
        let shell = self.capsule.manifest.capabilities.shell.as_ref().map(|sh| {
            Arc::new(crate::shell::ShellConfig::new(
                &records,
                self.workdir.clone(),
                &sh.baseline_env,
            ))
        });
        let spawn = &self.capsule.manifest.capabilities.spawn.allow;
        let delegation = (!spawn.is_empty()).then(|| {
            Arc::new(crate::delegation::DelegationConfig {
                program: crate::delegation::DelegationConfig::program(),
                project_dir: self.member.as_ref().map_or_else(
                    || std::env::current_dir().unwrap_or_else(|_| self.workdir.clone()),
                    |m| m.project_dir.clone(),
                ),
                allow: spawn.clone(),
                formation_id: formation_id.clone().or(self.unbound_formation.clone()),
                logs: records.logs_dir(),
                tmp: records.tmp_dir(),
            })
        });
        let components = self
            .components
            .take()
            .filter(|c| !c.is_empty())
            .map(|catalog| {
                let grants = crate::component::Grants::of(
                    &self.capsule.manifest,
                    &self.workdir,
                    Some(records.tmp_dir()),
                )
                .with_peers(self.member.as_ref().map(|m| m.peers.clone()));
                crate::component::Host::new(catalog, grants).with_trace(trace.clone())
            });
        let env = Arc::new(TaskEnv {
            components: components.clone(),
            trace: trace.clone(),
            transport: self.transport(&records),
            system: TaskEnv::system_prompt(
                &PromptParts {
                    capsule_name: self.capsule.manifest.name.clone(),
                    capsule_version: self.capsule.version.clone(),
                    description: self.capsule.manifest.description.clone(),
                    roster_name: self.member.as_ref().map(|m| m.name.clone()),
                    instructions: self.capsule.instructions(),
                    murmur_md: Some(murmur_md),
                    capsule_block: matches!(
                        self.capsule.manifest.agent.transport,
                        Transport::Http(_)
                    ),
                },
                self.resumed.as_ref().map(|r| r.earlier.as_str()),
            ),
            records,
            flusher,
            max_turns: self.capsule.manifest.inference.max_turns,
            peers: self.member.as_ref().map(|m| m.peers.clone()),
            deadline: self.deadline.map(instant_of),
            events: Some(door.events().clone()),
            shell,
            delegation,
        });
        if let Some(host) = &components {
            // Synchronous session_start hooks run before the session is announced.
            let _ = host
                .fire(
                    HookEvent::SessionStart,
                    serde_json::json!({"session_id": session_id, "capsule": self.capsule.name,
                        "version": self.capsule.version, "workdir": self.workdir}),
                )
                .await;
        }
        self.announce(&session_id, &door, formation_id.clone());
        let live = Live {
            session_id,
            trace,
            door,
            work,
            running,
            env,
            formation_id,
            retain: self.capsule.manifest.trace.retain,
            report: if self.args.json {
                Report::Json
            } else {
                Report::Text
            },
            first_task: None,
        };
        let lifeline = self
            .member
            .as_mut()
            .and_then(|m| m.lifeline.take())
            .or(self.spawner.take());
        let code = live
            .main_loop(Watch {
                lifecycle: self.lifecycle,
                deadline: self.deadline.map(instant_of),
                lifeline,
                on_stop,
                task_text: self.task_text.take(),
                signals: self
                    .signals
                    .take()
                    .unwrap_or_else(|| Signals::new(&ends::SIGNALS)),
            })
            .await;
        Ok(code)
    }

    /// The records directory with its trace (session_start written) and MURMUR.md.
    fn records(&self, session_id: &str) -> Result<(Records, Arc<TraceWriter>, String)> {
        let identity = Identity {
            session_id: session_id.to_string(),
            capsule: self.capsule.name.clone(),
            version: self.capsule.version.clone(),
            roster_name: self.member.as_ref().map(|m| m.name.clone()),
            formation_id: self.member.as_ref().map(|m| m.formation_id.clone()),
        };
        if let Some(r) = &self.resumed {
            let records = Records::open(r.records_dir.clone());
            let trace = TraceWriter::append(&records.trace_path())?;
            trace.write(Event::SessionStart {
                session_id: session_id.to_string(),
                capsule: trace::CapsuleRef {
                    name: self.capsule.name.clone(),
                    version: self.capsule.version.clone(),
                    sha256: self.capsule.sha256(),
                },
                mur_version: env!("CARGO_PKG_VERSION").to_string(),
                pid: std::process::id(),
                workdir: self.workdir.clone(),
                records_dir: records.dir.clone(),
                formation_id: None,
                formation_member: None,
                formation_callees: None,
            })?;
            let md = records.write_murmur_md(&identity, &self.workdir)?;
            return Ok((records, Arc::new(trace), md));
        }
        let info = StartInfo {
            sha256: self.capsule.sha256(),
            callees: self.member.as_ref().map(|m| m.peers.callees().to_vec()),
        };
        let started = records::start(&paths::records_root(), &self.workdir, &identity, &info)?;
        Ok((started.records, started.trace, started.murmur_md))
    }

    async fn door(
        &self,
        session_id: &str,
        token: &str,
        records: &Records,
        trace: &Arc<TraceWriter>,
    ) -> Result<(Door, WorkReceiver, tokio::sync::mpsc::UnboundedReceiver<()>)> {
        let m = &self.capsule.manifest;
        let mut config = DoorConfig::new(session_id, token);
        config.card = door::CardInfo {
            name: self.capsule.name.clone(),
            description: m.description.clone(),
            version: self.capsule.version.clone(),
            skills: door::card_skills(m),
        };
        config.public = m.network.authentication.is_none();
        if let Some(auth) = &m.network.authentication {
            for name in &auth.bearer_env {
                if let Ok(value) = std::env::var(name)
                    && !value.is_empty()
                {
                    trace.forbid(&value);
                    config.bearer_tokens.push(door::DeclaredToken {
                        env_name: name.clone(),
                        token: value,
                    });
                }
            }
        }
        config.accept_peer_tasks = m.exports.peer_tasks.accept;
        config.formation = self.member.as_ref().map(|mem| door::FormationMember {
            verify_key: mem.verify_key.clone(),
            member: mem.name.clone(),
        });
        config.acceptance = self.lifecycle.acceptance;
        config.files_root = Some(records.dir.clone());
        let (stop_tx, stop_rx) = tokio::sync::mpsc::unbounded_channel();
        config.on_stop = Some(Arc::new(move || {
            let _ = stop_tx.send(());
        }));
        let busy_trace = trace.clone();
        config.on_busy = Some(Arc::new(move |r: &door::BusyRefusal| {
            busy_trace.record(Event::A2aTaskRefused {
                credential: r.caller.to_string(),
                reason: "busy".into(),
                holds: r.holds,
            });
        }));
        let (door, work) = Door::start(config).await.map_err(|e| {
            Diagnostic::new(
                E_RUN_002,
                format!("cannot serve the door on 127.0.0.1: {e}"),
            )
        })?;
        Ok((door, work, stop_rx))
    }

    /// The agent's transport. A process harness sees only what the capsule may
    /// (`agent::harness_env`: its folders and `capabilities.env.allow`).
    fn transport(&self, records: &Records) -> TransportConfig {
        let m = &self.capsule.manifest;
        let env = crate::agent::harness_env(records, &self.workdir, &m.capabilities.env.allow);
        TransportConfig::from_manifest(
            &m.agent.transport,
            &self.capsule.root,
            env,
            Some(records.logs_dir().join("harness.log")),
        )
    }

    /// The readiness line (`--json`), or a line for people on stderr. Printed once the
    /// door serves: `Door::start` returns with its listener bound and accepting.
    fn announce(&self, session_id: &str, door: &Door, formation_id: Option<String>) {
        let url = door_base(door);
        if self.args.json {
            let line = ReadinessLine::new(session_id, Some(url), formation_id);
            if let Ok(text) = serde_json::to_string(&line) {
                output::stdout_line(&text);
            }
        } else {
            output::banner_line(format!(
                "[mur run] session {session_id} ({} {}) serving at {url}; operator token in {}",
                self.capsule.name,
                self.capsule.version,
                paths::running_dir()
                    .join(format!("{session_id}.token"))
                    .display()
            ));
        }
    }
}

/// `http://127.0.0.1:<port>`, as the readiness line and the running record give it.
fn door_base(door: &Door) -> String {
    door.url().trim_end_matches('/').to_string()
}

/// A session that could not go on after its records existed: session_end `failed`.
fn fail_early(trace: &TraceWriter, d: &Diagnostic) -> i32 {
    output::stderr_line(d);
    trace.record(Event::SessionEnd {
        exit_status: ExitStatus::Failed,
        exit_code: 1,
        error_code: Some(d.code.as_str().to_string()),
        usage: None,
    });
    output::stderr_line("status: failed");
    1
}

/// How often a session reaps the orphans it killed.
const STRAY_REAP: Duration = Duration::from_secs(5);

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What the main loop watches besides the door.
struct Watch {
    lifecycle: LifecycleInForce,
    deadline: Option<Instant>,
    lifeline: Option<std::os::fd::OwnedFd>,
    /// The operator's murmur.StopSession.
    on_stop: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// `--task`.
    task_text: Option<String>,
    signals: Signals,
}

impl Live {
    /// Runs tasks until something ends the session; returns the exit status.
    async fn main_loop(mut self, watch: Watch) -> i32 {
        let Watch {
            lifecycle,
            deadline,
            lifeline,
            mut on_stop,
            task_text,
            mut signals,
        } = watch;
        let mut lifeline = lifeline.map(|fd| Box::pin(crate::lifeline::closed(fd)));
        let mut running: Option<JoinHandle<RecordedState>> = None;
        let mut idle_since = Instant::now();
        if let Some(text) = task_text {
            match self.submit(text) {
                Ok(work) => {
                    self.first_task = Some(work.task_id.clone());
                    running = Some(tokio::spawn(task::run(self.env.clone(), work)));
                }
                Err(e) => output::stderr_line(format!("[mur run] error: {}", e.message)),
            }
        }
        // Orphans the session killed (a stopped harness's) are its to reap.
        let _strays = AbortOnDrop(crate::descendants::watch_strays(STRAY_REAP, None));
        let far = Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
        let store = self.door.store().clone();
        let cause = loop {
            let idle_at = match (&running, lifecycle.idle_timeout) {
                (None, Some(t)) => idle_since + t,
                _ => far,
            };
            // Busy means a task is live on the door, judged when the end arrives: a task
            // the door already reports ended is not running, even while its runner
            // still writes its last record.
            let busy = || store.live() > 0;
            tokio::select! {
                biased;
                _ = signals.next() => break Cause::Sigterm { busy: busy() },
                Some(()) = on_stop.recv() => break Cause::Sigterm { busy: busy() },
                _ = async { lifeline.as_mut().expect("guarded").await }, if lifeline.is_some() => {
                    lifeline = None;
                    break Cause::Lifeline { busy: busy() };
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {
                    break Cause::Deadline;
                }
                ended = async { running.as_mut().expect("guarded").await }, if running.is_some() => {
                    running = None;
                    idle_since = Instant::now();
                    let state = ended.unwrap_or(RecordedState::Failed);
                    self.report_first(state, true);
                    if lifecycle.exit_after_task {
                        break Cause::AfterTask(state);
                    }
                }
                work = self.work.next(), if running.is_none() => {
                    match work {
                        Some(work) => running = Some(tokio::spawn(task::run(self.env.clone(), work))),
                        None => break Cause::Sigterm { busy: false },
                    }
                }
                _ = tokio::time::sleep_until(idle_at), if idle_at < far => break Cause::IdleTimeout,
            }
        };
        self.wind_down(cause, running, lifeline, &mut signals).await
    }

    /// The `--task` task: a task on the door, started by the operator.
    fn submit(&self, text: String) -> std::result::Result<Work, a2a::RpcError> {
        let message = Message::text(Role::User, text);
        let created = self
            .door
            .store()
            .create(Credential::Operator, message.clone())?;
        let mut message = message;
        message.task_id = Some(created.snapshot.id.clone());
        message.context_id = Some(created.snapshot.context_id.clone());
        Ok(Work {
            task_id: created.snapshot.id.clone(),
            context_id: created.snapshot.context_id.clone(),
            message,
            caller: Credential::Operator,
            trust: door::trust::Trust::Trusted,
            cancel: created.handle.cancellation().clone(),
            handle: created.handle,
        })
    }

    /// Ends the session: formation_ended first when the lifeline closed, then every
    /// queued task refused, every live task canceled, session_end, the running record
    /// removed.
    async fn wind_down(
        mut self,
        cause: Cause,
        mut running: Option<JoinHandle<RecordedState>>,
        mut lifeline: Option<std::pin::Pin<Box<impl Future<Output = std::io::Result<()>>>>>,
        signals: &mut Signals,
    ) -> i32 {
        if let Cause::Lifeline { .. } = cause {
            if let Some(formation_id) = &self.formation_id {
                self.record(Event::FormationEnded {
                    formation_id: formation_id.clone(),
                });
            }
            ends::arm_wind_down_limit(
                timing::scaled(timing::WIND_DOWN_EXIT),
                self.running.clone(),
                self.session_id.clone(),
            );
        }
        let store = self.door.store().clone();
        store.close();
        while let Some(queued) = self.work.try_next() {
            let _ = queued
                .handle
                .reject("the session is ending and takes no more tasks");
            self.record(Event::TaskState {
                task_id: queued.task_id.clone(),
                from: Some(RecordedState::Submitted),
                to: RecordedState::Rejected,
                reason: Some("the session is ending".into()),
            });
        }
        store.cancel_all(cause.cancel_reason());
        // Wait for the task to wind down. A SIGTERM now is a second one (exit 143),
        // except after the lifeline closed; the lifeline closing now changes nothing.
        if let Some(task) = running.as_mut() {
            loop {
                tokio::select! {
                    ended = &mut *task => {
                        // Text mode prints a result only for a task that ended on its own.
                        self.report_first(ended.unwrap_or(RecordedState::Failed), false);
                        break;
                    }
                    _ = signals.next() => {
                        if cause.sigterm_exits_at_once() {
                            ends::exit_now(&self.running, &self.session_id);
                        }
                    }
                    _ = async { lifeline.as_mut().expect("guarded").await }, if lifeline.is_some() => {
                        lifeline = None;
                    }
                }
            }
        }
        // Nothing the session started outlives it: harnesses, shell commands and what
        // they started, setsid and double forks included (docs/descendants.md).
        let _ = tokio::task::spawn_blocking(crate::descendants::sweep_all).await;
        let exit = cause.exit();
        if let Some(code) = exit.error {
            let what = match cause {
                Cause::Deadline => "the session reached its deadline".to_string(),
                _ => "the session received SIGTERM while a task ran; the task was canceled"
                    .to_string(),
            };
            output::stderr_line(Diagnostic::new(code, what));
        }
        if let Some(host) = self.env.components.clone() {
            // session_end hooks, then the asynchronous hooks still running: bounded by
            // timing::HOOK_DRAIN, inside the wind-down's 20 s.
            let record = serde_json::json!({"session_id": self.session_id,
                "exit_status": exit.status, "exit_code": exit.code});
            host.end(record).await;
        }
        self.record(Event::SessionEnd {
            exit_status: exit.status,
            exit_code: exit.code,
            error_code: exit.error.map(|c| c.as_str().to_string()),
            usage: None,
        });
        // The records on disk before the session says it has ended.
        let env = self.env.clone();
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || env.flusher.flush()).await {
            output::stderr_line(Diagnostic::new(catalogue::E_REC_001, e));
        }
        let _ = self.running.remove(&self.session_id);
        // When ~/.murmur/running/ cannot be read every session counts as running:
        // nothing is removed.
        if let Ok(live) = self.running.list() {
            let live: Vec<String> = live.into_iter().map(|r| r.session_id).collect();
            for removed in crate::retention::sessions::pass(
                &self.env.records.dir,
                &self.retain,
                &live,
                SystemTime::now(),
            ) {
                output::stderr_line(removed.line());
            }
        }
        // Watchers have had every record, session_end included: the door lets their
        // streams drain before it closes.
        self.door.shutdown().await;
        output::stderr_line(format!("status: {}", ends::status_word(exit.status)));
        exit.code
    }

    fn record(&self, event: Event) {
        self.trace.record(event);
    }

    /// Reports the `--task` task's end on stdout, once: its result text, or with
    /// `--json` its outcome line. `on_its_own`: the task ended before any wind-down.
    fn report_first(&mut self, state: RecordedState, on_its_own: bool) {
        let Some(task_id) = self.first_task.take() else {
            return;
        };
        let text = std::fs::read_to_string(self.env.records.result_path()).unwrap_or_default();
        match self.report {
            Report::Text if on_its_own => {
                output::stdout_text(&text);
            }
            Report::Text => {}
            Report::Json => {
                let line =
                    crate::readiness::OutcomeLine::task(&self.session_id, &task_id, state, text);
                if let Ok(json) = serde_json::to_string(&line) {
                    output::stdout_line(json);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn lifecycle(manifest: manifest::Lifecycle, flags: &[&str]) -> LifecycleInForce {
        let cli = Cli::parse_from(std::iter::once("run").chain(flags.iter().copied()));
        LifecycleInForce::of(&manifest, &cli.run)
    }

    fn queue(depth: u32) -> manifest::Lifecycle {
        manifest::Lifecycle {
            task_acceptance: manifest::TaskAcceptance::Queue,
            after_task: manifest::AfterTask::Sleep,
            queue_depth: depth,
            idle_timeout: Some(60),
        }
    }

    #[test]
    fn flags_override_the_manifest() {
        let l = lifecycle(queue(2), &[]);
        assert_eq!(l.acceptance, door::Acceptance::Queue { depth: 2 });
        assert!(!l.exit_after_task);
        assert_eq!(l.idle_timeout, Some(Duration::from_secs(60)));
        let l = lifecycle(
            queue(2),
            &[
                "--lifecycle-task-acceptance",
                "single",
                "--lifecycle-after-task",
                "exit",
                "--lifecycle-idle-timeout",
                "none",
            ],
        );
        assert_eq!(l.acceptance, door::Acceptance::Single);
        assert!(l.exit_after_task);
        assert_eq!(l.idle_timeout, None);
        let l = lifecycle(
            manifest::Lifecycle::default(),
            &[
                "--lifecycle-task-acceptance",
                "queue",
                "--lifecycle-idle-timeout",
                "5",
            ],
        );
        assert_eq!(l.acceptance, door::Acceptance::Queue { depth: 0 });
        assert_eq!(l.idle_timeout, Some(Duration::from_secs(5)));
    }

    #[test]
    fn a_task_ends_the_session_unless_the_flag_says_sleep() {
        assert!(lifecycle(queue(0), &["--task", "x"]).exit_after_task);
        assert!(
            !lifecycle(
                queue(0),
                &["--task", "x", "--lifecycle-after-task", "sleep"]
            )
            .exit_after_task
        );
    }
}
