//! `mur run`: one capsule running as one session. It serves its door, runs the tasks
//! the door accepts through the agent loop, records everything, and ends as the
//! spec's tables say. docs/run.md describes the flags, the readiness line, the exit
//! codes and the wind-down.
//!
//! The pieces, in the order a session uses them:
//! - [`capsule`]: what to run (the current folder's murmur.yaml, or an installed capsule
//!   unpacked to `~/.murmur/cache/<sha256>/`);
//! - [`formation`]: the formation environment (channel, lifeline, W-RUN-007), read
//!   before anything is staged;
//! - [`serve`]: the session itself (records, door, running record, the main loop);
//! - [`task`]: one task through the agent loop;
//! - [`ends`]: how a session ends (signals, lifeline, deadline) and what it exits with;
//! - [`retain`]: `trace.retain` over the capsule's earlier sessions;
//! - [`ops`]: `mur stop` and `mur trace show`; [`ps`]: `mur ps`; [`logs`]: `mur logs`;
//!   [`complete`]: the live ids shell completion offers; [`cache`]: `mur cache prune`.

pub(crate) mod cache;
pub(crate) mod capsule;
pub(crate) mod complete;
pub(crate) mod confined;
pub(crate) mod ends;
pub(crate) mod follow;
pub(crate) mod formation;
pub(crate) mod lifecycle;
pub(crate) mod live;
pub(crate) mod logs;
pub(crate) mod ops;
pub(crate) mod pick;
pub(crate) mod ps;
pub(crate) mod resume;
pub(crate) mod send;
pub(crate) mod serve;
pub(crate) mod task;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::catalogue::{E_RUN_002, E_RUN_005, E_RUN_006};
use crate::diag::{Diagnostic, Result};

// `mur run`: run a capsule as a session, or with `--roster` launch a formation.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Run this installed capsule (`<scope>/<name>`) instead of the current folder's
    /// murmur.yaml.
    #[arg(long, value_name = "NAME")]
    pub capsule: Option<String>,
    /// The exact version of --capsule. May be left out when murmur.lock pins the
    /// capsule, or only one version of it is installed.
    #[arg(long, value_name = "V", requires = "capsule")]
    pub capsule_version: Option<String>,
    /// Run one task. A value that names an existing file stands for its content.
    #[arg(long, value_name = "TEXT")]
    pub task: Option<String>,
    /// Print the readiness line (one JSON object) as the first line on stdout.
    #[arg(long)]
    pub json: bool,
    /// End the session this many seconds after it starts (E-RUN-053).
    #[arg(long, value_name = "SECONDS")]
    pub deadline: Option<u64>,
    /// Override lifecycle.task_acceptance.
    #[arg(long, value_enum, value_name = "single|queue")]
    pub lifecycle_task_acceptance: Option<AcceptanceFlag>,
    /// Override lifecycle.after_task.
    #[arg(long, value_enum, value_name = "exit|sleep")]
    pub lifecycle_after_task: Option<AfterTaskFlag>,
    /// Override lifecycle.idle_timeout: seconds, or `none`.
    #[arg(long, value_name = "SECONDS|none", value_parser = parse_idle)]
    pub lifecycle_idle_timeout: Option<IdleTimeout>,
    /// Continue that session's conversation.
    #[arg(long, value_name = "SES_ID", conflicts_with_all = ["roster", "capsule"])]
    pub resume: Option<String>,
    /// How deep this session's delegations may nest (its children are at depth 1).
    /// Over capabilities.spawn.max_depth; a delegated child's can only lower its
    /// tree's.
    #[arg(long, value_name = "N", value_parser = parse_limit)]
    pub max_delegation_depth: Option<u32>,
    /// How many delegated sessions this session's tree may run at once. Over
    /// capabilities.spawn.max_live; a delegated child's can only lower its tree's.
    #[arg(long, value_name = "N", value_parser = parse_limit)]
    pub max_live_delegations: Option<u32>,
    /// Run the capsule's native processes (harness, shell commands) without
    /// confinement (W-RUN-011; docs/confinement.md). For a roster, set
    /// MURMUR_UNCONFINED=1, which members inherit.
    #[arg(long, conflicts_with = "roster")]
    pub unconfined: bool,
    /// Launch the formation of this roster.yaml (default: ./roster.yaml).
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = ".")]
    pub roster: Option<PathBuf>,
    /// The span that asked for --task, as a W3C `traceparent`: the launcher gives its
    /// entry member the formation's, a delegating session its child the delegating
    /// task's (docs/trace.md, Trace context). Mur's own, so hidden.
    #[arg(long, value_name = "TRACEPARENT", hide = true, requires = "task",
          conflicts_with = "roster", value_parser = parse_traceparent)]
    pub trace_parent: Option<crate::trace::context::SpanContext>,
    /// Send the spans to this OpenTelemetry collector as they end, over OTLP/HTTP
    /// JSON: its base URL (`http://localhost:4318`; `/v1/traces` is added). Wins over
    /// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; with
    /// --roster, every member's (docs/trace.md, Live export).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

fn parse_traceparent(
    value: &str,
) -> std::result::Result<crate::trace::context::SpanContext, String> {
    crate::trace::context::SpanContext::parse(value)
        .ok_or_else(|| format!("`{value}` is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AcceptanceFlag {
    Single,
    Queue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AfterTaskFlag {
    Exit,
    Sleep,
}

/// `--lifecycle-idle-timeout`: a number of seconds, or `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleTimeout {
    None,
    Seconds(u64),
}

fn parse_limit(value: &str) -> std::result::Result<u32, String> {
    let max = crate::manifest::SPAWN_LIMIT_MAX;
    value
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("`{value}` is not a whole number from 1 to {max}"))
}

fn parse_idle(value: &str) -> std::result::Result<IdleTimeout, String> {
    if value == "none" {
        return Ok(IdleTimeout::None);
    }
    value
        .parse::<u64>()
        .map(IdleTimeout::Seconds)
        .map_err(|_| format!("`{value}` is neither a number of seconds nor `none`"))
}

impl RunArgs {
    /// The task text: the named file's content when the value names an existing file.
    pub fn task_text(&self) -> Result<Option<String>> {
        let Some(task) = &self.task else {
            return Ok(None);
        };
        let path = std::path::Path::new(task);
        if !task.is_empty() && !task.contains('\n') && path.is_file() {
            return std::fs::read_to_string(path).map(Some).map_err(|e| {
                Diagnostic::new(
                    E_RUN_005,
                    format!("--task names {}, which cannot be read: {e}", path.display()),
                )
                .in_file(path)
            });
        }
        Ok(Some(task.clone()))
    }

    /// `--max-delegation-depth` and `--max-live-delegations`.
    pub fn delegation_limits(&self) -> crate::delegation::tree::Asked {
        crate::delegation::tree::Asked {
            max_depth: self.max_delegation_depth,
            max_live: self.max_live_delegations,
        }
    }

    /// `--deadline` as a duration.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline.map(Duration::from_secs)
    }
}

/// Runs `mur run`; returns the exit status.
pub(crate) fn run(args: &RunArgs) -> Result<i32> {
    if args.roster.is_some() {
        return run_roster(args);
    }
    // A member of a formation leaves this to its launcher (MURMUR_HOST_WARNINGS_REPORTED).
    crate::host::report_unless_reported();
    // Orphans below the session reparent to it, so its end can sweep them.
    crate::descendants::become_subreaper();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Diagnostic::new(E_RUN_002, format!("cannot start a runtime: {e}")))?;
    runtime.block_on(serve::session(args))
}

/// `mur run --roster`: the formation launcher lives in `crate::formation`.
fn run_roster(args: &RunArgs) -> Result<i32> {
    refuse_with_roster(args)?;
    crate::formation::run_roster(
        &crate::formation::RosterLaunch {
            roster: roster_path(args.roster.as_deref()),
            // As given: the entry member shares the launcher's folder and reads a file there.
            task: args.task.clone(),
            deadline: args.deadline,
            json: args.json,
            otlp: crate::trace::live::Target::resolve(args.otlp_endpoint.as_deref())?,
        },
        &|admitted| crate::approve::check_launch(&crate::approve::Launch::roster(admitted)),
    )
}

/// `--roster PATH`, or without a PATH (`.`) the project's roster, found from any folder
/// in it (`paths::project_root`).
fn roster_path(given: Option<&std::path::Path>) -> PathBuf {
    match given {
        Some(p) if p != std::path::Path::new(".") => p.to_path_buf(),
        _ => match std::env::current_dir() {
            Ok(cwd) if crate::paths::project_root(&cwd) != cwd => crate::paths::project_root(&cwd),
            _ => PathBuf::from("."),
        },
    }
}

/// E-RUN-006 for a flag `--roster` cannot honour: the roster names each member's
/// capsule, and the launch sets the entry member's lifecycle; each member's
/// delegation limits are its manifest's (docs/delegation.md).
fn refuse_with_roster(args: &RunArgs) -> Result<()> {
    let given = [
        ("--capsule", args.capsule.is_some()),
        ("--capsule-version", args.capsule_version.is_some()),
        (
            "--lifecycle-task-acceptance",
            args.lifecycle_task_acceptance.is_some(),
        ),
        (
            "--lifecycle-after-task",
            args.lifecycle_after_task.is_some(),
        ),
        (
            "--lifecycle-idle-timeout",
            args.lifecycle_idle_timeout.is_some(),
        ),
        (
            "--max-delegation-depth",
            args.max_delegation_depth.is_some(),
        ),
        (
            "--max-live-delegations",
            args.max_live_delegations.is_some(),
        ),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(Diagnostic::new(
            E_RUN_006,
            format!(
                "{flag} cannot be honoured with --roster: the roster names each member's capsule, the launch sets the entry member's lifecycle, and each member's manifest its delegation limits (--task runs one task; without it the formation serves until stopped)"
            ),
        )),
        None => Ok(()),
    }
}
