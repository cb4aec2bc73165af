//! `mur logs <member|ses_id|frm_id> [-f]`: what a session wrote to stderr (its
//! records' `logs/stderr.log`, `output::set_logs`) and what its process harness
//! wrote to its stderr (`logs/harness.log`, behind `[harness] `). A member name is
//! looked up in the formation running in the current project, or, when none runs, in
//! the last one launched there. `-f` keeps printing lines as they are written, until
//! every session named has ended.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::ops::{sessions_of, start_of};
use super::ps::this_project;
use crate::catalogue::{E_RUN_003, E_RUN_009};
use crate::diag::{Diagnostic, Result};
use crate::records::{self, Records};
use crate::retention::marker::live_formations;
use crate::running::{RunningDir, RunningRecord};
use crate::{output, paths};

// `mur logs` (a doc comment here would replace the command's sentence in its --help).
#[derive(Debug, Clone, Args)]
pub struct LogsArgs {
    /// A member of the formation running in this project (or, when none runs, of the
    /// last one launched here), a session id (`ses_…`), a formation id (`frm_…`: every
    /// member's), or a prefix of an id that no other id shares.
    pub target: String,
    /// Keep printing lines as they are written, until the session ends (for a
    /// formation, every member's, each line behind `[member] `).
    #[arg(short, long)]
    pub follow: bool,
}

/// How often `-f` looks for new lines.
const POLL: Duration = Duration::from_millis(100);

/// The harness's stderr, in the records' logs/ (`session::serve`, `transport`).
const HARNESS_LOG: &str = "harness.log";

/// One log file, read from where the last read stopped.
struct Tail {
    path: PathBuf,
    prefix: String,
    read: u64,
    /// The start of a line not yet ended.
    partial: Vec<u8>,
}

impl Tail {
    /// Prints the whole lines written since the last call; with `last`, the
    /// unfinished one too. False once stdout is gone.
    fn print_new(&mut self, last: bool) -> bool {
        if let Ok(mut file) = std::fs::File::open(&self.path)
            && file.seek(SeekFrom::Start(self.read)).is_ok()
        {
            let mut bytes = Vec::new();
            if let Ok(n) = file.read_to_end(&mut bytes) {
                self.read += n as u64;
                self.partial.extend_from_slice(&bytes);
            }
        }
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..end]);
            if !output::stdout_line(format_args!("{}{text}", self.prefix)) {
                return false;
            }
        }
        if last && !self.partial.is_empty() {
            let text = String::from_utf8_lossy(&self.partial).into_owned();
            self.partial.clear();
            return output::stdout_line(format_args!("{}{text}", self.prefix));
        }
        true
    }
}

/// `mur logs`.
pub(crate) fn logs(args: &LogsArgs) -> Result<i32> {
    let sessions = resolve(&args.target)?;
    let many = sessions.len() > 1;
    let live = RunningDir::default().list()?;
    let mut tails = Vec::new();
    let mut running: Vec<RunningRecord> = Vec::new();
    for r in &sessions {
        let who = match start_of(r).and_then(|s| s.member) {
            Some(member) if many => format!("[{member}] "),
            _ if many => format!("[{}] ", r.session_id),
            _ => String::new(),
        };
        for (file, prefix) in [
            (output::STDERR_LOG, who.clone()),
            (HARNESS_LOG, format!("{who}[harness] ")),
        ] {
            tails.push(Tail {
                path: r.logs_dir().join(file),
                prefix,
                read: 0,
                partial: Vec::new(),
            });
        }
        running.extend(live.iter().find(|l| l.session_id == r.session_id).cloned());
    }
    loop {
        // Whether they ran before the read: lines written before an end are all read.
        let ended = !args.follow || running.iter().all(|r| !r.is_alive());
        for tail in &mut tails {
            if !tail.print_new(ended) {
                return Ok(0);
            }
        }
        if ended {
            return Ok(0);
        }
        std::thread::sleep(POLL);
    }
}

/// The sessions `typed` names: a member of this project's formation, else an id.
fn resolve(typed: &str) -> Result<Vec<Records>> {
    let looks_like_id = typed.starts_with("ses_")
        || typed.starts_with("frm_")
        || (!typed.is_empty() && typed.bytes().all(|b| b.is_ascii_hexdigit()));
    if looks_like_id {
        return Ok(sessions_of(typed)?.1);
    }
    member(typed).map(|r| vec![r])
}

/// The session of member `name` in the formation running in this project, or when
/// none runs, in the last one launched here.
fn member(name: &str) -> Result<Records> {
    let here = this_project();
    let live = RunningDir::default().list()?;
    let running: Vec<String> = live_formations(&live)
        .into_iter()
        .filter(|(_, p)| {
            p.as_deref()
                .is_some_and(|p| super::ps::project_is(p, &here))
        })
        .map(|(f, _)| f)
        .collect();
    if running.len() > 1 {
        return Err(Diagnostic::new(
            E_RUN_009,
            format!(
                "{} formations run in {}: {}",
                running.len(),
                here.display(),
                running.join(", ")
            ),
        )
        .hint("Name the member's session instead: `mur ps` lists them; `mur logs <ses_id>`."));
    }
    // Live members first: their running records name their records directories.
    if let [frm] = running.as_slice()
        && let Some(r) = live.iter().find(|r| {
            r.formation_id.as_deref() == Some(frm.as_str())
                && r.formation_member
                    .as_ref()
                    .is_some_and(|m| m.as_str() == name)
        })
    {
        return Ok(Records::open(r.records_dir.clone()));
    }
    let formations = paths::formations_dir();
    let all: Vec<(Records, super::ops::Start)> = records::find_sessions(&paths::records_root())
        .into_iter()
        .filter_map(|r| start_of(&r).map(|s| (r, s)))
        .filter(|(_, s)| s.formation_id.is_some())
        .collect();
    let frm = match running.into_iter().next() {
        Some(frm) => frm,
        // The last formation launched here: its entry member works in the project.
        None => all
            .iter()
            .filter(|(_, s)| {
                let frm = s.formation_id.as_deref().unwrap_or_default();
                !s.workdir.starts_with(formations.join(frm))
                    && super::ps::project_is(&s.workdir, &here)
            })
            .max_by(|a, b| a.0.session_id.cmp(&b.0.session_id))
            .and_then(|(_, s)| s.formation_id.clone())
            .ok_or_else(|| {
                Diagnostic::new(
                    E_RUN_003,
                    format!(
                        "no formation was launched in {}, so no member is named {name}",
                        here.display()
                    ),
                )
                .hint("Name a session: `mur ps -a` lists every session; `mur logs <ses_id>`.")
            })?,
    };
    let members: Vec<&(Records, super::ops::Start)> = all
        .iter()
        .filter(|(_, s)| s.formation_id.as_deref() == Some(frm.as_str()))
        .collect();
    if let Some((r, _)) = members
        .iter()
        .filter(|(_, s)| s.member.as_deref() == Some(name))
        .max_by(|a, b| a.0.session_id.cmp(&b.0.session_id))
    {
        return Ok(r.clone());
    }
    let mut names: Vec<&str> = members
        .iter()
        .filter_map(|(_, s)| s.member.as_deref())
        .collect();
    names.sort_unstable();
    names.dedup();
    Err(Diagnostic::new(
        E_RUN_003,
        format!("formation {frm} has no member named {name}"),
    )
    .hint(format!("Its members: {}.", names.join(", "))))
}
