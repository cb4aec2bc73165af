//! `mur run --resume <ses_id>`: the same session id, records directory and trace,
//! the same capsule, and what was said before, handed to the agent. Nothing of a
//! formation is resumed: a session belongs to a formation only when its own
//! environment places it in one.

use std::path::PathBuf;

use crate::catalogue::{E_RUN_002, E_RUN_003};
use crate::diag::{Diagnostic, Result};
use crate::paths;
use crate::records::{self, Records};
use crate::retention::marker::Marker;
use crate::running::RunningDir;
use crate::session::capsule::{self, Capsule};
use crate::trace::{self, Event};

/// A session to continue.
#[derive(Debug, Clone)]
pub(crate) struct Resumed {
    pub session_id: String,
    pub records_dir: PathBuf,
    pub workdir: PathBuf,
    capsule_name: String,
    capsule_version: String,
    installed: bool,
    /// Where the capsule was resolved from: the roster's project for a formation
    /// member (its marker names it), else the work folder.
    pub project: PathBuf,
    /// The earlier tasks and their answers, for the system prompt.
    pub earlier: String,
}

/// Finds session `id`'s records; refuses a session that is still running.
pub(crate) fn find(id: &str) -> Result<Resumed> {
    let records = records::find_session(&paths::records_root(), id).ok_or_else(|| {
        Diagnostic::new(
            E_RUN_003,
            format!("no session {id} in {}", paths::records_root().display()),
        )
    })?;
    if RunningDir::default().get(id).ok().flatten().is_some() {
        return Err(Diagnostic::new(
            E_RUN_002,
            format!("session {id} is still running; stop it with `mur stop {id}` first"),
        ));
    }
    from_records(&records)
}

fn from_records(records: &Records) -> Result<Resumed> {
    let read = trace::read(&records.trace_path())?;
    let start = read.records.iter().find_map(|r| match &r.event {
        Event::SessionStart {
            capsule,
            workdir,
            formation_id,
            ..
        } => Some((capsule.clone(), workdir.clone(), formation_id.clone())),
        _ => None,
    });
    let Some((capsule, workdir, formation_id)) = start else {
        return Err(Diagnostic::new(
            E_RUN_003,
            format!("{} has no session_start", records.trace_path().display()),
        ));
    };
    let project = formation_id
        .and_then(|frm| Marker::read(&paths::formations_dir().join(frm)))
        .map_or_else(|| workdir.clone(), |m| m.project_dir);
    Ok(Resumed {
        project,
        session_id: records.session_id.clone(),
        records_dir: records.dir.clone(),
        workdir,
        installed: capsule.sha256.is_some(),
        capsule_name: capsule.name,
        capsule_version: capsule.version,
        earlier: transcript(&read.records),
    })
}

impl Resumed {
    /// The capsule the session ran: the installed one by name and version, or the
    /// murmur.yaml of its work folder.
    pub(crate) fn capsule(&self) -> Result<Capsule> {
        if self.installed {
            capsule::installed(
                &self.project,
                &self.capsule_name,
                &self.capsule_version,
                None,
            )
        } else {
            capsule::from_folder(&self.workdir)
        }
    }
}

/// Each earlier task and its last answer, in order.
fn transcript(records: &[trace::Record]) -> String {
    let mut text = String::new();
    for r in records {
        match &r.event {
            Event::A2aTaskReceived {
                text: Some(task), ..
            } => text.push_str(&format!("Task: {}\n", task.trim_end())),
            Event::InferenceTurn {
                reply: trace::ReplyKind::Answer,
                text: Some(answer),
                ..
            } => text.push_str(&format!("Answer: {}\n\n", answer.trim_end())),
            _ => {}
        }
    }
    text
}
