//! `mur ps`: the live sessions of the current project (as `docker compose ps` lists
//! its folder's), or with `-a` every session the records hold, of every project.
//! A session is the project's when its work folder is in it (`paths::project_root`),
//! or when it is a member of a formation launched there (a peer works under
//! `~/.murmur/formations/`). The table fits 100 columns (`table`); ids are shown as
//! their shortest prefix that `mur stop`, `mur send` and `mur trace show` take.

use std::path::{Path, PathBuf};

use clap::Args;

use super::ops::Start;
use super::pick::{short, short_len};
use crate::diag::Result;
use crate::records::{self, Records};
use crate::retention::marker::live_formations;
use crate::running::{RunningDir, RunningRecord};
use crate::table::{self, Column};
use crate::trace::{self, Event};
use crate::{output, paths};

// `mur ps`
#[derive(Debug, Clone, Args)]
pub struct PsArgs {
    /// One JSON array of the running records (with --all, of every session listed).
    #[arg(long)]
    pub json: bool,
    /// Every session the records hold, of every project, ended ones too, newest first.
    #[arg(short, long)]
    pub all: bool,
    /// Show ids whole and cells uncut, however wide the lines get.
    #[arg(long)]
    pub no_trunc: bool,
}

/// Lists the project's live sessions, oldest first; with `--all` every session of
/// every project, newest first.
pub(crate) fn ps(args: &PsArgs) -> Result<i32> {
    let live = RunningDir::default().list()?;
    if args.all {
        return ps_all(args, &live);
    }
    let here = this_project();
    let formations = live_formations(&live);
    let (mine, others): (Vec<&RunningRecord>, Vec<&RunningRecord>) = live
        .iter()
        .partition(|r| project_is(folder_of(r, &formations), &here));
    let exited = exited_members(&mine);
    if args.json {
        let mut listed: Vec<serde_json::Value> = mine
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
    if mine.is_empty() {
        if others.is_empty() {
            output::stderr_line("no running sessions");
        } else {
            output::stderr_line(format_args!(
                "no running sessions in {}; {} in other projects (`mur ps -a` lists every project's)",
                here.display(),
                others.len()
            ));
        }
        return Ok(0);
    }
    // Short ids are told apart from every live id, as `mur stop` picks among them.
    let known = live
        .iter()
        .map(|r| r.session_id.as_str())
        .chain(formations.iter().map(|(f, _)| f.as_str()));
    let n = if args.no_trunc {
        usize::MAX
    } else {
        short_len(known)
    };
    let rows: Vec<Vec<String>> = mine
        .iter()
        .map(|r| {
            vec![
                short(&r.session_id, n).to_string(),
                r.pid.to_string(),
                format!("{} {}", r.capsule, r.version),
                door(r.door_url.as_deref(), args.no_trunc),
                r.formation_id
                    .as_deref()
                    .map_or("-", |f| short(f, n))
                    .to_string(),
                member(
                    r.formation_id.as_deref(),
                    r.formation_member.as_ref().map(|m| m.as_str()),
                ),
            ]
        })
        .chain(exited.iter().map(|(frm, e)| {
            vec![
                short(&e.session_id, n).to_string(),
                e.pid.to_string(),
                format!("{} {}", e.capsule, e.version),
                format!("exited, {}", e.how()),
                short(frm, n).to_string(),
                e.member.to_string(),
            ]
        }))
        .collect();
    let columns = [
        Column::keep("SESSION"),
        Column::keep("PID"),
        Column::cut("CAPSULE"),
        Column::keep("DOOR"),
        Column::keep("FORMATION"),
        Column::cut("MEMBER"),
    ];
    print(&columns, &rows, args.no_trunc);
    Ok(0)
}

/// The members of the listed sessions' formations that exited while their formation
/// runs, as their launchers recorded them (`formation::exits`), with the formation's id.
fn exited_members(live: &[&RunningRecord]) -> Vec<(String, crate::formation::exits::ExitRecord)> {
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

/// The current folder's project, symlinks resolved.
pub(super) fn this_project() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    canonical(&paths::project_root(&cwd))
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Whether `folder` is in the project `here` (as [`this_project`] gives it).
pub(super) fn project_is(folder: &Path, here: &Path) -> bool {
    canonical(&paths::project_root(folder)) == here
}

/// The folder whose project a live session belongs to: its formation's, else its
/// work folder.
fn folder_of<'a>(r: &'a RunningRecord, formations: &'a [(String, Option<PathBuf>)]) -> &'a Path {
    let formation = r.formation_id.as_ref().and_then(|frm| {
        formations
            .iter()
            .find(|(f, _)| f == frm)
            .and_then(|(_, p)| p.as_deref())
    });
    formation.unwrap_or(&r.workdir)
}

/// A door as a table shows it: `127.0.0.1:<port>` (`--json` has the URL).
fn door(url: Option<&str>, whole: bool) -> String {
    match url {
        None => "-".into(),
        Some(u) if whole => u.to_string(),
        Some(u) => u
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string(),
    }
}

fn member(formation: Option<&str>, member: Option<&str>) -> String {
    match (formation, member) {
        (_, Some(m)) => m.to_string(),
        (Some(_), None) => "(by hand)".into(),
        _ => "-".into(),
    }
}

fn print(columns: &[Column], rows: &[Vec<String>], whole: bool) {
    let lines = if whole {
        let keep: Vec<Column> = columns.iter().map(|c| Column::keep(c.head)).collect();
        table::lines(&keep, rows)
    } else {
        table::lines(columns, rows)
    };
    for line in lines {
        if !output::stdout_line(line) {
            break;
        }
    }
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
    records_dir: PathBuf,
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
    let known = listed
        .iter()
        .flat_map(|l| std::iter::once(l.session_id.as_str()).chain(l.formation_id.as_deref()));
    let n = if args.no_trunc {
        usize::MAX
    } else {
        short_len(known)
    };
    let rows: Vec<Vec<String>> = listed
        .iter()
        .map(|l| {
            vec![
                short(&l.session_id, n).to_string(),
                started(&l.started_at, args.no_trunc),
                format!("{} {}", l.capsule, l.version),
                l.status.clone(),
                l.formation_id
                    .as_deref()
                    .map_or("-", |f| short(f, n))
                    .to_string(),
                member(l.formation_id.as_deref(), l.formation_member.as_deref()),
            ]
        })
        .collect();
    let columns = [
        Column::keep("SESSION"),
        Column::keep("STARTED"),
        Column::cut("CAPSULE"),
        Column::cut("STATUS"),
        Column::keep("FORMATION"),
        Column::cut("MEMBER"),
    ];
    print(&columns, &rows, args.no_trunc);
    Ok(0)
}

/// `2026-12-08T00:13:15.123Z` as `2026-12-08 00:13:15` (UTC; `--json` has it whole).
fn started(ts: &str, whole: bool) -> String {
    match ts.get(..19) {
        Some(cut) if !whole => cut.replacen('T', " ", 1),
        _ => ts.to_string(),
    }
}

/// A session from its trace; `None` for one that does not read, or whose formation
/// directory took it (see `Start::lost_with`).
fn listed(r: &Records, live: &[RunningRecord], formations: &Path) -> Option<Listed> {
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
