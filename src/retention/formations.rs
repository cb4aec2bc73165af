//! `trace.retain` for formation directories: the entry member's `trace.retain` bounds its
//! roster's formation directories. The pass runs at the end of every
//! `mur run --roster`, after every member of that launch has stopped.
//!
//! A directory is removed only when its `formation.json` proves it belongs to this
//! project and nothing of it can still be running; see `protected`.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{Removal, Removed, Retain, set_aside, set_aside_before};
use crate::ids::FormationId;
use crate::paths;
use crate::retention::marker::Marker;

/// The two roots a pass works in.
#[derive(Debug, Clone)]
pub struct Dirs {
    /// `~/.murmur/formations/`
    pub formations: PathBuf,
    /// `~/.murmur/records/`
    pub records: PathBuf,
}

impl Dirs {
    pub fn from_home() -> Dirs {
        Dirs {
            formations: paths::formations_dir(),
            records: paths::records_root(),
        }
    }

    /// Where a formation's members' records live:
    /// `~/.murmur/records/<home>/.murmur/formations/<frm_id>/`.
    pub fn records_of(&self, formation: &str) -> PathBuf {
        self.records
            .join(paths::strip_root(&self.formations))
            .join(formation)
    }
}

/// What the pass needs to know about live sessions: the formation ids that a running
/// record names with its member still running, or the error reading
/// `~/.murmur/running/` (then every formation counts as running).
pub type Running = io::Result<HashSet<String>>;

/// Runs one pass over `dirs` for the project `project_dir`, after the launch of
/// `current`. Removes what the policy bounds out and returns the removals newest first.
pub fn pass(
    dirs: &Dirs,
    project_dir: &Path,
    current: &str,
    policy: &Retain,
    running: &Running,
    now: SystemTime,
) -> Vec<Removal> {
    if policy.is_unbounded() {
        return Vec::new();
    }
    sweep_trash(dirs);
    let project = project_dir
        .canonicalize()
        .unwrap_or_else(|_| project_dir.to_path_buf());
    let Ok(entries) = std::fs::read_dir(&dirs.formations) else {
        return Vec::new();
    };

    // The project's formation directories: those whose marker names this project.
    let mut ours: Vec<(FormationId, Marker)> = entries
        .flatten()
        .filter_map(|entry| {
            let id: FormationId = entry.file_name().to_str()?.parse().ok()?;
            let marker = Marker::read(&entry.path())?;
            (marker.project_dir == project).then_some((id, marker))
        })
        .collect();
    ours.sort_by(|a, b| b.0.cmp(&a.0)); // newest first: UUIDv7 hex sorts by time

    let mut removed = Vec::new();
    for (rank, (formation, marker)) in ours.iter().enumerate() {
        let Some(reason) = policy.reason(rank, formation.minted_at(), now) else {
            continue;
        };
        if protected(formation.as_str(), current, marker, running) {
            continue;
        }
        if remove(dirs, formation.as_str()).is_ok() {
            removed.push(Removal {
                removed: Removed::Formation(formation.clone()),
                reason,
            });
        }
    }
    removed
}

/// The spec's never-remove cases that remain once the marker names this project: the
/// current formation or one minted after it; a launcher still running; a running
/// record naming the formation; an unreadable `~/.murmur/running/`.
fn protected(formation: &str, current: &str, marker: &Marker, running: &Running) -> bool {
    formation >= current
        || marker.launcher_running()
        || match running {
            Ok(live) => live.contains(formation),
            Err(_) => true,
        }
}

/// Removes a formation directory and its members' records. The directory is set
/// aside first, so a pass killed midway leaves an entry the next pass finishes, never
/// a half-removed directory that has lost its marker.
fn remove(dirs: &Dirs, formation: &str) -> io::Result<()> {
    let aside = set_aside(&dirs.formations.join(formation))?;
    match std::fs::remove_dir_all(dirs.records_of(formation)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::remove_dir_all(&aside)
}

fn sweep_trash(dirs: &Dirs) {
    for (aside, formation) in set_aside_before(&dirs.formations) {
        let _ = std::fs::remove_dir_all(dirs.records_of(&formation));
        let _ = std::fs::remove_dir_all(aside);
    }
}

#[cfg(test)]
mod tests;
