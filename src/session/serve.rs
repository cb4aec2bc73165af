//! The session: stage it (formation environment, capsule, records, door, running
//! record), announce it, run the tasks its door accepts one after another, and end it
//! as `ends` says.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::RunArgs;
use super::capsule::{self, Capsule};
use super::ends::{self};
use super::formation::{self, Membership, Place};
use super::lifecycle::LifecycleInForce;
use super::live::{Live, Report, Watch};
use super::resume::{self, Resumed};
use super::task::TaskEnv;
use crate::agent::{PromptParts, TransportConfig};
use crate::catalogue::{self, E_RUN_002};
use crate::diag::{Diagnostic, Result};
use crate::door::{self, Door, DoorConfig, WorkReceiver};
use crate::manifest::{HookEvent, Transport};
use crate::readiness::ReadinessLine;
use crate::records::{self, Identity, Records, StartInfo};
use crate::running::{self, RunningDir, RunningRecord};
use crate::signals::{Signal, Signals};
use crate::trace::{self, Event, ExitStatus, TraceWriter};
use crate::{output, paths};

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
    let (spawner, tree) = match &resumed {
        Some(_) => (None, None),
        None => crate::delegation::spawner_lifeline()?.unzip(),
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
    // A formation's member runs exactly the bytes its launcher's admission bound and
    // approved; any other run holds its project against its approval first.
    if member.is_none() {
        let project = match (&resumed, &capsule.installed) {
            (_, None) => crate::paths::project_root(&capsule.root),
            (Some(r), Some(_)) => r.project.clone(),
            (None, Some(_)) => crate::paths::project_root(&cwd),
        };
        crate::approve::check_launch(&crate::approve::Launch {
            project,
            capsule: capsule.installed.is_none().then(|| capsule.root.clone()),
            roster: None,
            artifacts: capsule.installed.iter().collect(),
        })?;
    }
    let workdir = match (&resumed, &member) {
        (Some(r), _) => r.workdir.clone(),
        (None, Some(m)) => m.workdir.clone(),
        (None, None) => cwd.clone(),
    };
    if let Some(m) = &member {
        m.peers
            .set_allow(capsule.manifest.capabilities.network.allow.clone());
        if let Some(w) = m.peers.network_warning(m.name.as_str()) {
            output::stderr_line(&w);
        }
    }
    // Read and checked now (a core module or another world refuses the start);
    // compiled only when a call needs it.
    let components = crate::component::Catalog::open(&capsule.root, &capsule.manifest)?;
    if let Some(w) = capsule::instructions_missing(&capsule) {
        output::stderr_line(&w);
    }
    let tree = delegation_tree(&capsule, args, tree)?;
    // E-RUN-054 where native processes cannot be confined; an opt-out printed once.
    let kernel = crate::confine::net::Kernel::probe();
    let unconfined =
        crate::confine::start::check(&capsule.name, &capsule.manifest, args.unconfined, &kernel)?
            .map(|(how, w)| {
                output::stderr_line(&w);
                how
            });
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
        tree,
        components: Some(components),
        unconfined,
        kernel,
        confined: None,
    };
    stage.run().await
}

/// The delegation tree of a capsule that may delegate: a child's inherited one, its
/// own limits lowering it, or a root's (docs/delegation.md).
fn delegation_tree(
    capsule: &Capsule,
    args: &RunArgs,
    inherited: Option<crate::delegation::tree::Inherited>,
) -> Result<Option<Arc<crate::delegation::tree::Tree>>> {
    use crate::delegation::tree::{Asked, Tree};
    let spawn = &capsule.manifest.capabilities.spawn;
    if spawn.allow.is_empty() {
        return Ok(None);
    }
    let asked = Asked::of(args.delegation_limits(), spawn);
    let tree = Tree::new(inherited, asked).map_err(|e| {
        Diagnostic::new(E_RUN_002, format!("cannot make the delegation tokens: {e}"))
    })?;
    Ok(Some(Arc::new(tree)))
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
    /// A capsule that may delegate: its place in its delegation tree.
    tree: Option<Arc<crate::delegation::tree::Tree>>,
    /// The capsule's tools and hooks, until the session's records exist.
    components: Option<crate::component::Catalog>,
    /// How the user opted out of confinement, recorded in `session_start`.
    unconfined: Option<&'static str>,
    /// What this kernel can confine (probed once, at start).
    kernel: crate::confine::net::Kernel,
    /// The confinement of the native processes, once the records exist.
    confined: Option<crate::confine::Confined>,
}

impl Stage<'_> {
    async fn run(mut self) -> Result<i32> {
        let session_id = match &self.resumed {
            Some(r) => r.session_id.clone(),
            None => crate::ids::SessionId::mint().to_string(),
        };
        let formation_id = self.member.as_ref().map(|m| m.formation_id.clone());
        let (records, trace, murmur_md) = self.records(&session_id)?;
        output::set_logs(&records.logs_dir());
        let token = running::new_token();
        trace.forbid(&token);
        if let Err(d) = self.live_export(&trace, formation_id.as_deref()) {
            return Ok(fail_early(&trace, &d));
        }
        self.confined = match super::confined::start(
            &self.capsule,
            &self.workdir,
            &records,
            &trace,
            self.unconfined,
            &self.kernel,
        )
        .await
        {
            Ok(c) => c,
            Err(d) => return Ok(fail_early(&trace, &d)),
        };
        if let Some(w) = self
            .confined
            .as_ref()
            .and_then(|_| super::confined::tier_warning(&self.capsule, &self.kernel))
        {
            output::stderr_line(&w);
        }
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
            started_at: crate::a2a::time::now(),
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
            Arc::new(crate::shell::ShellConfig {
                workdir: self.workdir.clone(),
                env: crate::grant::env(
                    crate::grant::Executor::Shell,
                    &sh.baseline_env,
                    &self.capsule.manifest.credentials(),
                    Some(&self.folders(&records)),
                    &crate::grant::mur_vars(),
                ),
                confine: self.confined.clone(),
            })
        });
        let spawn = &self.capsule.manifest.capabilities.spawn.allow;
        let delegation = self.tree.take().map(|tree| {
            Arc::new(crate::delegation::DelegationConfig {
                program: crate::delegation::DelegationConfig::program(),
                project_dir: self.member.as_ref().map_or_else(
                    || std::env::current_dir().unwrap_or_else(|_| self.workdir.clone()),
                    |m| m.project_dir.clone(),
                ),
                allow: spawn.clone(),
                formation_id: formation_id.clone().or(self.unbound_formation.clone()),
                logs: records.logs_dir(),
                runtime: records.runtime_dir(),
                tree,
                env: crate::grant::env(
                    crate::grant::Executor::Delegate,
                    &[],
                    &self.capsule.manifest.credentials(),
                    None,
                    &crate::grant::mur_vars(),
                ),
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
                    roster_name: self.member.as_ref().map(|m| m.name.to_string()),
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
            parallel_tools: self.capsule.manifest.inference.parallel_tools,
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
        if let Some(member) = &self.member {
            crate::testing::member_balloon(member.name.as_str());
        }
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
                task_parent: self.args.trace_parent,
                signals: self
                    .signals
                    .take()
                    .unwrap_or_else(|| Signals::new(&ends::SIGNALS)),
            })
            .await;
        Ok(code)
    }

    /// The records directory with its trace (session_start written) and MURMUR.md.
    /// Live export (docs/trace.md): a member's as its launcher resolved it, else
    /// `--otlp-endpoint` and the `OTEL_EXPORTER_OTLP_*` variables.
    fn live_export(&self, trace: &TraceWriter, formation_id: Option<&str>) -> Result<()> {
        let target = match &self.member {
            Some(m) => m.otlp.clone(),
            None => trace::live::Target::resolve(self.args.otlp_endpoint.as_deref())?,
        };
        let Some(target) = target else {
            return Ok(());
        };
        for header in &target.headers {
            trace.forbid(&header.1);
        }
        let earlier = trace::read(trace.path())?.records;
        let live = trace::live::Live::start(target, formation_id.map(str::to_string), &earlier)?;
        trace.live(live);
        Ok(())
    }

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
                unconfined: self.unconfined.map(str::to_string),
            })?;
            let md = records.write_murmur_md(&identity, &self.workdir)?;
            return Ok((records, Arc::new(trace), md));
        }
        let info = StartInfo {
            sha256: self.capsule.sha256(),
            callees: self.member.as_ref().map(|m| m.peers.callees().to_vec()),
            unconfined: self.unconfined.map(str::to_string),
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
            skills: m.card_skills(),
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
    /// (`grant::env`: its folders and `capabilities.env.allow`, no credential).
    fn transport(&self, records: &Records) -> TransportConfig {
        let m = &self.capsule.manifest;
        let env = crate::grant::env(
            crate::grant::Executor::Harness,
            &m.capabilities.env.allow,
            &m.credentials(),
            Some(&self.folders(records)),
            &crate::grant::mur_vars(),
        );
        TransportConfig::from_manifest(
            &m.agent.transport,
            &self.capsule.root,
            env,
            Some(records.logs_dir().join("harness.log")),
            self.confined.clone(),
        )
    }

    /// The folders and id a session's harness and shell commands are given
    /// (`grant::env`), and its proxy when they are confined.
    fn folders(&self, records: &Records) -> crate::grant::Session {
        crate::grant::Session {
            id: records.session_id.clone(),
            workdir: self.workdir.clone(),
            home: records.home_dir(),
            out: records.out_dir(),
            tmp: records.tmp_dir(),
            proxy: self.confined.as_ref().map(|c| c.proxy_url()),
        }
    }

    /// The readiness line (`--json`), or a line for people on stderr. Printed once the
    /// door serves: `Door::start` returns with its listener bound and accepting.
    fn announce(&self, session_id: &str, door: &Door, formation_id: Option<String>) {
        let url = door_base(door);
        tracing::info!(
            "session {session_id} ({} {}) serving at {url}",
            self.capsule.name,
            self.capsule.version
        );
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
pub(super) fn fail_early(trace: &TraceWriter, d: &Diagnostic) -> i32 {
    output::stderr_line(d);
    trace.record(Event::SessionEnd {
        exit_status: ExitStatus::Failed,
        exit_code: 1,
        error_code: Some(d.code.as_str().to_string()),
        usage: None,
        otlp_dropped_spans: None,
    });
    output::stderr_line("status: failed");
    1
}
