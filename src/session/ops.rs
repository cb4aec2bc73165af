//! `mur stop`, `mur ps` and `mur trace show`: the commands that find sessions through
//! their running records (`~/.murmur/running/`) and their records directories.

use clap::{Args, Subcommand};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::catalogue::{E_RUN_003, E_RUN_004};
use crate::diag::{Diagnostic, Result};
use crate::records::{self, Records};
use crate::retention::marker::{Marker, live_formations};
use crate::running::{RunningDir, RunningRecord};
use crate::trace::{self, Event};
use crate::{output, paths};

// `mur stop <ses_id|frm_id>` (a doc comment here would replace the command's
// sentence in its --help: clap reads it when the command is the one typed).
#[derive(Debug, Clone, Args)]
pub struct StopArgs {
    /// A session id (`ses_…`) or a formation id (`frm_…`), or a prefix of one that no
    /// other id shares. Without it: the one formation running in this folder.
    pub id: Option<String>,
}

// `mur ps`
#[derive(Debug, Clone, Args)]
pub struct PsArgs {
    /// One JSON array of the running records (with --all, of every session listed).
    #[arg(long)]
    pub json: bool,
    /// Every session the records hold, ended ones too, newest first.
    #[arg(short, long)]
    pub all: bool,
}

// `mur trace …`
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum TraceCommand {
    /// Print a session's trace, readable; for a formation id, every member's session.
    #[command(
        after_help = "Examples:\n  mur trace show frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071\n  mur trace show frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071 --html -o timeline.html\n  mur trace show ses_0199d5a0c3b47c1e9a2b3c4d5e6f7081 --follow\n  mur trace show ses_0199d5a0c3b47c1e9a2b3c4d5e6f7081 --json | jq -c 'select(.type == \"tool_call\")'"
    )]
    Show {
        /// A session id (`ses_…`) or a formation id (`frm_…`), or a prefix of one
        /// that no other id in the records shares.
        id: String,
        /// The records as JSON Lines, as trace.jsonl holds them (a formation's
        /// sessions one after another, each from its session_start).
        #[arg(long)]
        json: bool,
        /// Keep printing records as they are written, to the session's session_end
        /// (for a formation, every member's at once, each line behind `[member] `).
        #[arg(long, short, conflicts_with = "html")]
        follow: bool,
        /// A timeline instead: one self-contained HTML page, a lane per member
        /// (docs/trace.md, The timeline).
        #[arg(long, conflicts_with = "json")]
        html: bool,
        /// With --html: write the page to this file (replaced whole) instead of stdout.
        #[arg(short, long, value_name = "FILE", requires = "html")]
        output: Option<std::path::PathBuf>,
    },
    /// Write a session's or a formation's trace as OpenTelemetry spans: OTLP/JSON, one
    /// `TracesData` a line (docs/trace.md, OpenTelemetry export).
    #[command(
        after_help = "Examples:\n  mur trace export frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071 -o traces.jsonl\n  mur trace export ses_0199d5a0c3b47c1e9a2b3c4d5e6f7081 | curl -H 'Content-Type: application/json' --data-binary @- http://127.0.0.1:4318/v1/traces"
    )]
    Export {
        /// A session id (`ses_…`) or a formation id (`frm_…`).
        id: String,
        /// Write to this file (replaced whole) instead of stdout.
        #[arg(short, long, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
}

/// Sends SIGTERM to a session, or to a formation's launcher and to its members
/// started by hand (running records naming the formation without a member name: no
/// launcher ends them).
pub(crate) fn stop(args: &StopArgs) -> Result<i32> {
    let running = RunningDir::default();
    let live = running.list()?;
    let id = match &args.id {
        Some(typed) => {
            let formations = live_formations(&live);
            let known = live
                .iter()
                .map(|r| r.session_id.as_str())
                .chain(formations.iter().map(|(f, _)| f.as_str()));
            match super::pick::pick(typed, known)? {
                Some(id) => id,
                None => return already_ended(typed),
            }
        }
        None => this_folder_s_formation(&live)?,
    };
    let mut targets: Vec<(String, u32)> = Vec::new();
    if id.starts_with("frm_") {
        let dir = paths::formations_dir().join(&id);
        let launcher = format!("the launcher of {id}");
        if let Some(marker) = Marker::read(&dir)
            && marker.launcher_running()
        {
            targets.push((launcher.clone(), marker.launcher_pid));
        }
        for r in &live {
            if r.formation_id.as_deref() != Some(id.as_str()) {
                continue;
            }
            match (&r.formation_member, &r.launcher) {
                // Started by hand: no launcher ends it.
                (None, _) => targets.push((r.session_id.clone(), r.pid)),
                // A formation with no formation.json (no peers, or a marker that could
                // not be written): its members' records name the launcher.
                (Some(_), Some(l)) if l.is_alive() && !targets.iter().any(|t| t.1 == l.pid) => {
                    targets.push((launcher.clone(), l.pid));
                }
                _ => {}
            }
        }
    } else if let Some(r) = live.iter().find(|r| r.session_id == id) {
        targets.push((r.session_id.clone(), r.pid));
    }
    if targets.is_empty() {
        // It ended between the listing and now.
        return already_ended(&id);
    }
    for (what, pid) in targets {
        kill(Pid::from_raw(pid as i32), Signal::SIGTERM).map_err(|e| {
            Diagnostic::new(
                E_RUN_004,
                format!("cannot send SIGTERM to {what} (pid {pid}): {e}"),
            )
        })?;
        output::stderr_line(format_args!(
            "[mur stop] sent SIGTERM to {what} (pid {pid})"
        ));
    }
    Ok(0)
}

/// `mur stop` with no id: the one formation running in the current folder.
fn this_folder_s_formation(live: &[RunningRecord]) -> Result<String> {
    let here = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| Diagnostic::new(E_RUN_003, format!("cannot read the current folder: {e}")))?;
    let mine: Vec<String> = live_formations(live)
        .into_iter()
        .filter(|(_, project)| project.as_deref() == Some(here.as_path()))
        .map(|(f, _)| f)
        .collect();
    match mine.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Diagnostic::new(
            E_RUN_003,
            format!("no formation runs in {}", here.display()),
        )
        .hint("Name what to stop: `mur stop <ses_id|frm_id>`; `mur ps` lists what runs.")),
        many => Err(Diagnostic::new(
            crate::catalogue::E_RUN_009,
            format!(
                "{} formations run in {}: {}",
                many.len(),
                here.display(),
                many.join(", ")
            ),
        )),
    }
}

/// `mur stop` of a session or formation that no longer runs: says how it ended and
/// succeeds, since what was asked for holds; E-RUN-003 when no records name it.
fn already_ended(typed: &str) -> Result<i32> {
    let sessions = records::find_sessions(&paths::records_root());
    let starts: Vec<(&Records, Option<Start>)> =
        sessions.iter().map(|r| (r, start_of(r))).collect();
    let known = starts.iter().flat_map(|(r, s)| {
        std::iter::once(r.session_id.as_str())
            .chain(s.as_ref().and_then(|s| s.formation_id.as_deref()))
    });
    let Some(id) = super::pick::pick(typed, known)? else {
        return Err(Diagnostic::new(
            E_RUN_003,
            format!("no running session or formation is named {typed}"),
        ));
    };
    let formations = paths::formations_dir();
    let how = if id.starts_with("frm_") {
        // Its entry member's end is the formation's: the one member not working in a
        // peer's directory under the formation's.
        let entry = starts.iter().find(|(_, s)| {
            s.as_ref().is_some_and(|s| {
                s.formation_id.as_deref() == Some(id.as_str())
                    && !s.workdir.starts_with(formations.join(&id))
            })
        });
        match entry {
            Some((r, s)) => {
                let member = s
                    .as_ref()
                    .and_then(|s| s.member.clone())
                    .unwrap_or_default();
                format!("its entry member {member} {}", ending(r))
            }
            None => "its entry member's records are gone".to_string(),
        }
    } else {
        let r = starts
            .iter()
            .find(|(r, _)| r.session_id == id)
            .map(|(r, _)| *r);
        r.map_or_else(|| "its records are gone".to_string(), ending)
    };
    output::stderr_line(format_args!("[mur stop] {id} already ended: {how}"));
    Ok(0)
}

/// How a session ended, from its trace's last record.
fn ending(records: &Records) -> String {
    let text = std::fs::read_to_string(records.trace_path()).unwrap_or_default();
    let last = text
        .lines()
        .last()
        .and_then(|l| serde_json::from_str::<trace::Record>(l).ok());
    match last.map(|r| r.event) {
        Some(Event::SessionEnd {
            exit_status,
            exit_code,
            error_code,
            ..
        }) => {
            let status = serde_json::to_value(exit_status)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            let code = error_code.map(|c| format!(", {c}")).unwrap_or_default();
            format!("ended {status} (exit code {exit_code}{code})")
        }
        _ => "ended without a session_end: its process was killed".to_string(),
    }
}

/// Lists live sessions, oldest first; with `--all` every session, newest first.
pub(crate) fn ps(args: &PsArgs) -> Result<i32> {
    let live = RunningDir::default().list()?;
    if args.all {
        return ps_all(args, &live);
    }
    let exited = exited_members(&live);
    if args.json {
        let mut listed: Vec<serde_json::Value> = live
            .iter()
            .filter_map(|r| {
                let mut v = serde_json::to_value(r).ok()?;
                v["status"] = "running".into();
                Some(v)
            })
            .collect();
        listed.extend(exited.iter().map(|(frm, e)| {
            serde_json::json!({
                "session_id": e.session_id, "pid": e.pid, "capsule": e.capsule,
                "version": e.version, "formation_id": frm, "formation_member": e.member,
                "status": "exited", "exit_status": e.status, "signal": e.signal,
                "exited_at": e.exited_at,
            })
        }));
        let text = serde_json::to_string_pretty(&listed).unwrap_or_else(|_| "[]".into());
        output::stdout_line(text);
        return Ok(0);
    }
    if live.is_empty() {
        output::stderr_line("no running sessions");
        return Ok(0);
    }
    output::stdout_line(format_args!(
        "{:<40} {:>7}  {:<28} {:<24} FORMATION",
        "SESSION", "PID", "CAPSULE", "DOOR"
    ));
    let exited_lines = exited.iter().map(|(frm, e)| {
        format!(
            "{:<40} {:>7}  {:<28} {:<24} {frm} ({})",
            e.session_id,
            e.pid,
            format!("{} {}", e.capsule, e.version),
            format!("exited, {}", e.how()),
            e.member
        )
    });
    for line in live.iter().map(ps_line).chain(exited_lines) {
        if !output::stdout_line(line) {
            break;
        }
    }
    Ok(0)
}

/// The members of running formations that exited while their formation runs, as
/// their launchers recorded them (`formation::exits`), with their formation's id.
fn exited_members(live: &[RunningRecord]) -> Vec<(String, crate::formation::exits::ExitRecord)> {
    // A formation id names a folder: only one that reads as one.
    let mut formations: Vec<&String> = live
        .iter()
        .filter_map(|r| r.formation_id.as_ref())
        .filter(|f| f.parse::<crate::ids::FormationId>().is_ok())
        .collect();
    formations.sort();
    formations.dedup();
    let dir = paths::formations_dir();
    formations
        .into_iter()
        .flat_map(|frm| {
            crate::formation::exits::read(&dir.join(frm))
                .into_iter()
                .map(move |e| (frm.clone(), e))
        })
        .collect()
}

fn ps_line(r: &RunningRecord) -> String {
    let formation = match (&r.formation_id, &r.formation_member) {
        (Some(f), Some(m)) => format!("{f} ({m})"),
        (Some(f), None) => format!("{f} (by hand)"),
        _ => "-".to_string(),
    };
    format!(
        "{:<40} {:>7}  {:<28} {:<24} {formation}",
        r.session_id,
        r.pid,
        format!("{} {}", r.capsule, r.version),
        r.door_url.as_deref().unwrap_or("-"),
    )
}

/// One session as its records tell it, for `mur ps --all`.
#[derive(Debug, Clone, serde::Serialize)]
struct Listed {
    session_id: String,
    /// When its first `session_start` was written.
    started_at: String,
    capsule: String,
    version: String,
    /// `running`, the word of its last `session_end` (`ok`, `failed`, …), or `killed`
    /// for a trace that ends without one.
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    formation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    formation_member: Option<String>,
    records_dir: std::path::PathBuf,
}

fn ps_all(args: &PsArgs, live: &[RunningRecord]) -> Result<i32> {
    let formations = paths::formations_dir();
    let mut listed: Vec<Listed> = records::find_sessions(&paths::records_root())
        .iter()
        .filter_map(|r| listed(r, live, &formations))
        .collect();
    // Session ids sort by time.
    listed.sort_by(|a, b| b.session_id.cmp(&a.session_id));
    if args.json {
        let text = serde_json::to_string_pretty(&listed).unwrap_or_else(|_| "[]".into());
        output::stdout_line(text);
        return Ok(0);
    }
    if listed.is_empty() {
        output::stderr_line("no sessions recorded");
        return Ok(0);
    }
    output::stdout_line(format_args!(
        "{:<40} {:<24} {:<28} {:<16} FORMATION",
        "SESSION", "STARTED", "CAPSULE", "STATUS"
    ));
    for l in &listed {
        let formation = match (&l.formation_id, &l.formation_member) {
            (Some(f), Some(m)) => format!("{f} ({m})"),
            _ => "-".into(),
        };
        let line = format!(
            "{:<40} {:<24} {:<28} {:<16} {formation}",
            l.session_id,
            l.started_at,
            format!("{} {}", l.capsule, l.version),
            l.status
        );
        if !output::stdout_line(line) {
            break;
        }
    }
    Ok(0)
}

/// A session from its trace; `None` for one that does not read, or whose formation
/// directory took it (see `Start::lost_with`).
fn listed(r: &Records, live: &[RunningRecord], formations: &std::path::Path) -> Option<Listed> {
    let read = trace::read(&r.trace_path()).ok()?;
    let first = read.records.first()?;
    let Event::SessionStart {
        session_id,
        capsule,
        workdir,
        formation_id,
        formation_member,
        ..
    } = &first.event
    else {
        return None;
    };
    let start = Start {
        formation_id: formation_id.clone(),
        member: formation_member.clone(),
        workdir: workdir.clone(),
    };
    if start.lost_with(formations) {
        return None;
    }
    let status = if live.iter().any(|l| &l.session_id == session_id) {
        "running".to_string()
    } else {
        match read.records.last().map(|r| &r.event) {
            Some(Event::SessionEnd { exit_status, .. }) => {
                crate::session::ends::status_word(*exit_status).to_string()
            }
            _ => "killed".to_string(),
        }
    };
    Some(Listed {
        session_id: session_id.clone(),
        started_at: first.ts.clone(),
        capsule: capsule.name.clone(),
        version: capsule.version.clone(),
        status,
        formation_id: formation_id.clone(),
        formation_member: formation_member.clone(),
        records_dir: r.dir.clone(),
    })
}

/// `mur trace show`.
pub(crate) fn trace(args: &TraceArgs) -> Result<i32> {
    match &args.command {
        TraceCommand::Show {
            id,
            html: true,
            output,
            ..
        } => timeline(id, output.as_deref()),
        TraceCommand::Show {
            id, json, follow, ..
        } => show(id, *json, *follow),
        TraceCommand::Export { id, output } => export(id, output.as_deref()),
    }
}

/// The export's spans of every session `id` names.
fn spans_of(typed: &str) -> Result<Vec<trace::otlp::TracesData>> {
    let (id, sessions) = sessions_of(typed)?;
    let mut traces = Vec::with_capacity(sessions.len());
    for r in &sessions {
        traces.push(trace::read(&r.trace_path())?.records);
    }
    let members: Vec<trace::export::Session<'_>> = traces
        .iter()
        .map(|records| trace::export::Session { records })
        .collect();
    let frm = id.starts_with("frm_").then_some(id.as_str());
    Ok(trace::export::export(&members, frm))
}

/// `text` to stdout, or to `output` replaced whole through a rename (a symlink at
/// that name is replaced, never followed).
fn deliver(text: &str, output: Option<&std::path::Path>) -> Result<i32> {
    match output {
        None => {
            output::stdout_text(text);
        }
        Some(path) => crate::fsutil::write_atomic(
            path,
            text.as_bytes(),
            0o644,
            crate::fsutil::Durability::File,
        )
        .map_err(|e| crate::fsutil::write_failed(crate::catalogue::E_REC_001, path, &e))?,
    }
    Ok(0)
}

/// `mur trace show --html`: the timeline page (`trace::html`).
fn timeline(id: &str, output: Option<&std::path::Path>) -> Result<i32> {
    let traces = spans_of(id)?;
    deliver(&trace::html::page(id, &traces), output)
}

/// `mur trace export`: every session's records, transformed (`trace::export`).
fn export(id: &str, output: Option<&std::path::Path>) -> Result<i32> {
    let mut text = String::new();
    for data in spans_of(id)? {
        text.push_str(&serde_json::to_string(&data).unwrap_or_default());
        text.push('\n');
    }
    deliver(&text, output)
}

/// The sessions `typed` names (a whole id or a unique prefix, `session::pick`): one
/// session, or every member session of a formation; with the id it named.
fn sessions_of(typed: &str) -> Result<(String, Vec<Records>)> {
    let root = paths::records_root();
    let formations = paths::formations_dir();
    let all: Vec<(Records, Option<Start>)> = records::find_sessions(&root)
        .into_iter()
        .map(|r| {
            let start = start_of(&r);
            (r, start)
        })
        .filter(|(_, s)| !s.as_ref().is_some_and(|s| s.lost_with(&formations)))
        .collect();
    let known = all.iter().flat_map(|(r, s)| {
        std::iter::once(r.session_id.as_str())
            .chain(s.as_ref().and_then(|s| s.formation_id.as_deref()))
    });
    let id = super::pick::pick(typed, known)?.unwrap_or_else(|| typed.to_string());
    let sessions: Vec<Records> = all
        .into_iter()
        .filter(|(r, s)| {
            if id.starts_with("frm_") {
                s.as_ref().and_then(|s| s.formation_id.as_deref()) == Some(id.as_str())
            } else {
                r.session_id == id
            }
        })
        .map(|(r, _)| r)
        .collect();
    if sessions.is_empty() {
        return Err(Diagnostic::new(
            E_RUN_003,
            format!(
                "no session or formation named {id} under {}",
                root.display()
            ),
        ));
    }
    Ok((id, sessions))
}

fn show(typed: &str, json: bool, follow: bool) -> Result<i32> {
    let (id, sessions) = sessions_of(typed)?;
    let (json, follow) = (&json, &follow);
    let many = sessions.len() > 1;
    if *follow {
        let followed = sessions
            .into_iter()
            .map(|records| {
                let prefix = match start_of(&records).and_then(|s| s.member) {
                    Some(member) if many => format!("[{member}] "),
                    _ if many => format!("[{}] ", records.session_id),
                    _ => String::new(),
                };
                crate::session::follow::Followed { records, prefix }
            })
            .collect();
        return crate::session::follow::follow(followed, *json);
    }
    for (i, r) in sessions.iter().enumerate() {
        let read = trace::read(&r.trace_path())?;
        if *json {
            for record in &read.records {
                let line = serde_json::to_string(record).unwrap_or_default();
                if !output::stdout_line(line) {
                    return Ok(0);
                }
            }
            continue;
        }
        if many {
            if i > 0 {
                output::stdout_line("");
            }
            output::stdout_line(format_args!("== {} ({})", r.session_id, r.dir.display()));
        }
        for record in &read.records {
            if !output::stdout_line(record) {
                return Ok(0);
            }
        }
        if read.partial_tail {
            output::stdout_line("(the last record was cut short)");
        }
    }
    // From a member's session to its formation's trace.
    if !id.starts_with("frm_")
        && let Some(start) = sessions.first().and_then(start_of)
        && let Some(frm) = start.formation_id
    {
        output::banner_line(format_args!(
            "[mur trace] {id} is a member of formation {frm}: `mur trace show {frm}` shows every member"
        ));
    }
    Ok(0)
}

/// What `mur trace show` needs of a session's `session_start`.
struct Start {
    formation_id: Option<String>,
    member: Option<String>,
    workdir: std::path::PathBuf,
}

impl Start {
    /// A peer's work folder is `<formations>/<frm_id>/<member>/`. Once that formation's
    /// directory is removed by hand, the peer's trace went with it (the spec: `mur
    /// trace show frm_<id>` then finds only the entry member's session), even though
    /// its records live under ~/.murmur/records/.
    fn lost_with(&self, formations: &std::path::Path) -> bool {
        let Some(frm) = &self.formation_id else {
            return false;
        };
        let dir = formations.join(frm);
        self.workdir.starts_with(&dir) && !dir.exists()
    }
}

/// The session_start a session's trace begins with.
fn start_of(records: &Records) -> Option<Start> {
    let text = std::fs::read_to_string(records.trace_path()).ok()?;
    let first = text.lines().next()?;
    match serde_json::from_str::<trace::Record>(first).ok()?.event {
        Event::SessionStart {
            formation_id,
            formation_member,
            workdir,
            ..
        } => Some(Start {
            formation_id,
            member: formation_member,
            workdir,
        }),
        _ => None,
    }
}
