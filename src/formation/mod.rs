//! Formations: `mur run --roster` and what it leaves on disk.

use std::path::PathBuf;
use std::time::Duration;

use crate::admission::{self, Admitted};
use crate::catalogue::{E_RUN_002, E_RUN_046};
use crate::diag::{Diagnostic, Result};
use crate::output::stderr_line;

pub mod announce;
pub mod dirs;
pub mod exits;
pub mod failures;
pub mod launch;
pub mod member;
pub mod root;

/// What `mur run --roster` was asked to do.
#[derive(Debug, Clone)]
pub struct RosterLaunch {
    /// roster.yaml, or the project directory holding it.
    pub roster: PathBuf,
    /// `--task`: the one task of the entry member; the formation ends with it.
    pub task: Option<String>,
    /// `--deadline` in seconds from the launcher's start.
    pub deadline: Option<u64>,
    /// `--json`: the readiness object (and with `--task` the outcome) on stdout.
    pub json: bool,
    /// Live trace export (`--otlp-endpoint`, `OTEL_EXPORTER_OTLP_*`), for every member.
    pub otlp: Option<crate::trace::live::Target>,
}

/// What [`refuse_inside`] is asked to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// `mur run`: may be a member (`MURMUR_FORMATION_ID`), never holds
    /// `MURMUR_FORMATION_PEERS`, which the runtime sets for components only.
    Session,
    /// `mur run --roster`: no formation is launched from inside one.
    Launcher,
}

/// E-RUN-046 for a start that the formation environment it finds rules out: the one
/// check, for both `mur run` and `mur run --roster`.
pub fn refuse_inside(start: Start) -> Result<()> {
    let set = |var: &str| std::env::var_os(var).is_some();
    let peers = crate::call_member::PEERS_ENV;
    if set(peers) {
        return Err(Diagnostic::new(
            E_RUN_046,
            match start {
                Start::Session => format!(
                    "{peers} is set in mur run's own environment; the runtime sets it for components only"
                ),
                Start::Launcher => format!(
                    "`mur run --roster` refuses to launch a formation from inside one ({peers} is set)"
                ),
            },
        ));
    }
    if start == Start::Launcher && set(member::FORMATION_ID_ENV) {
        return Err(Diagnostic::new(
            E_RUN_046,
            format!(
                "`mur run --roster` refuses to launch a formation from inside one ({} is set)",
                member::FORMATION_ID_ENV
            ),
        ));
    }
    Ok(())
}

/// `mur run --roster`: admits the roster, launches it, and returns the exit status.
/// A refusal starts nothing.
///
/// `approved` holds the admitted roster against what the user approved (the caller's
/// `crate::approve`, which this module does not reach: the stores below it record into
/// approvals); its refusal starts nothing either.
pub fn run_roster(
    request: &RosterLaunch,
    approved: &dyn Fn(&Admitted) -> Result<()>,
) -> Result<i32> {
    refuse_inside(Start::Launcher)?;
    // admit resolves a folder to its roster.yaml.
    let admitted = admission::admit(&request.roster)?;
    approved(&admitted)?;
    let checked = crate::preflight::roster_launch(&admitted).map_err(Diagnostic::from)?;
    for warning in admitted.warnings.iter().chain(&checked) {
        stderr_line(warning);
    }
    for warning in crate::host::warnings() {
        stderr_line(&warning);
    }
    let plan = plan(&admitted);
    let options = launch::Options {
        task: request.task.clone(),
        deadline: request.deadline.map(Duration::from_secs),
        otlp: request.otlp.clone(),
        // Counted from the launcher's start, not the end of admission (hashing a
        // large member takes time).
        started: Some(crate::timing::process_start()),
        voice: if request.json {
            launch::Voice::Json
        } else {
            launch::Voice::Human
        },
    };
    // One thread, as a session has: the launcher only waits (members' lines, doors,
    // signals, timers), and two workers cost 0.6 MiB for the formation's whole life
    // and their wakes a core its starting members need (docs/benchmarks.md).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Diagnostic::new(E_RUN_002, format!("cannot start the runtime: {e}")))?;
    Ok(runtime.block_on(launch::launch_as_process(
        &plan,
        &options,
        &launch::Places::from_home(),
    )))
}

/// An admitted roster as the launcher needs it.
pub fn plan(admitted: &Admitted) -> launch::Plan {
    let retain = &admitted.entry().manifest.trace.retain;
    launch::Plan {
        project_dir: admitted.project_dir.clone(),
        members: admitted
            .members
            .iter()
            .map(|m| launch::PlanMember {
                name: m.name.clone(),
                capsule: m.installed.name.clone(),
                version: m.installed.version.clone(),
                sha256: m.installed.sha256.clone(),
                entry: m.entry,
                callees: admitted.callees(&m.name).into_iter().cloned().collect(),
            })
            .collect(),
        retain: *retain,
    }
}
