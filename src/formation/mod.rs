//! Formations: `mur run --roster` and what it leaves on disk.

use std::path::PathBuf;
use std::time::Duration;

use crate::admission::{self, Admitted};
use crate::catalogue::E_RUN_046;
use crate::diag::{Diagnostic, Result};
use crate::retention::Policy;

pub mod dirs;
pub mod launch;
pub mod marker;
pub mod member;

/// What `mur run --roster` was asked to do.
#[derive(Debug, Clone)]
pub struct RosterLaunch {
    /// roster.yaml, or the project directory holding it.
    pub roster: PathBuf,
    /// `--task`: the one task of the entry member; the formation ends with it.
    pub task: Option<String>,
    /// `--deadline` in seconds from the launcher's start.
    pub deadline: Option<u64>,
}

/// `mur run --roster`: admits the roster, launches it, and returns the exit status.
/// A refusal starts nothing.
pub fn run_roster(request: &RosterLaunch) -> Result<i32> {
    for var in [member::FORMATION_ID_ENV, member::PEERS_ENV] {
        if std::env::var_os(var).is_some() {
            return Err(Diagnostic::new(
                E_RUN_046,
                format!(
                    "`mur run --roster` refuses to launch a formation from inside one ({var} is set)"
                ),
            ));
        }
    }
    let roster = if request.roster.is_dir() {
        request.roster.join(crate::roster::FILE_NAME)
    } else {
        request.roster.clone()
    };
    let admitted = admission::admit(&roster)?;
    for warning in &admitted.warnings {
        eprintln!("{warning}");
    }
    for warning in crate::host::warnings() {
        eprintln!("{warning}");
    }
    let plan = plan(&admitted);
    let options = launch::Options {
        task: request.task.clone(),
        deadline: request.deadline.map(Duration::from_secs),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Diagnostic::new(E_RUN_046, format!("cannot start the runtime: {e}")))?;
    Ok(runtime.block_on(launch::launch(
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
                callees: admitted
                    .callees(&m.name)
                    .into_iter()
                    .map(String::from)
                    .collect(),
            })
            .collect(),
        retain: Policy {
            max_sessions: retain.max_sessions,
            max_age: retain.max_age,
        },
    }
}

/// `mur run --roster` flags, until `mur run` itself (src/session/) takes them over.
#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    /// Launch the formation of roster.yaml (or of the roster in PATH).
    #[arg(long, num_args = 0..=1, default_missing_value = ".", value_name = "PATH")]
    pub roster: Option<PathBuf>,
    /// The entry member's one task; the formation ends with it.
    #[arg(long)]
    pub task: Option<String>,
    /// End every member at this many seconds after the launcher's start.
    #[arg(long, value_name = "SECONDS")]
    pub deadline: Option<u64>,
    /// Resume a session (refused with --roster).
    #[arg(long, conflicts_with = "roster", value_name = "SES_ID")]
    pub resume: Option<String>,
}

pub fn run_launch_args(args: &LaunchArgs) -> Result<i32> {
    let roster = args.roster.clone().unwrap_or_else(|| PathBuf::from("."));
    run_roster(&RosterLaunch {
        roster,
        task: args.task.clone(),
        deadline: args.deadline,
    })
}
