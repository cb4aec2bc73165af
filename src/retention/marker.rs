//! `formation.json`, a formation's ownership marker in `~/.murmur/formations/<frm_id>/`.
//! Retention removes a formation directory only when this marker proves the
//! directory belongs to the current project and its launcher is gone.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const FILE_NAME: &str = "formation.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// The roster's project directory, with symlinks resolved.
    pub project_dir: PathBuf,
    pub launcher_pid: u32,
    /// When the launcher's process started, as the host reports it (the start time
    /// in clock ticks after boot from /proc/<pid>/stat); empty when unreadable.
    pub launcher_start: String,
}

impl Marker {
    /// The marker for this process as launcher of a formation of `project_dir`.
    pub fn for_this_launcher(project_dir: &Path) -> Marker {
        let pid = std::process::id();
        Marker {
            project_dir: project_dir
                .canonicalize()
                .unwrap_or_else(|_| project_dir.to_path_buf()),
            launcher_pid: pid,
            launcher_start: crate::proc::start_time(pid)
                .map(|t| t.to_string())
                .unwrap_or_default(),
        }
    }

    /// Writes the marker at mode 0600 into `dir`; fails if one is already there.
    ///
    /// Not synced: waiting for the disk held every launch back by 0.4–2 ms, and a
    /// marker a power cut leaves empty is one that does not parse, so its directory
    /// is kept, never removed by mistake (docs/formation.md).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join(FILE_NAME))?;
        let mut text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        text.push(b'\n');
        file.write_all(&text)
    }

    /// The marker in `dir`; `None` when it is missing or does not parse.
    pub fn read(dir: &Path) -> Option<Marker> {
        let text = std::fs::read(dir.join(FILE_NAME)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Whether the launcher this marker names is still running: the same pid with the
    /// same start time (a reused pid has another). A marker without a start time counts
    /// as running while its pid exists.
    pub fn launcher_running(&self) -> bool {
        match crate::proc::start_time(self.launcher_pid).map(|t| t.to_string()) {
            None => false,
            Some(start) => self.launcher_start.is_empty() || start == self.launcher_start,
        }
    }
}

/// The formations that run: those whose formation.json names a running launcher, and
/// those a live member's running record names; each with the project it runs in,
/// when known.
pub fn live_formations(
    live: &[crate::running::RunningRecord],
) -> Vec<(String, Option<std::path::PathBuf>)> {
    let mut found: Vec<(String, Option<std::path::PathBuf>)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(crate::paths::formations_dir()) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("frm_")
                && let Some(marker) = Marker::read(&entry.path())
                && marker.launcher_running()
            {
                found.push((name, Some(marker.project_dir)));
            }
        }
    }
    for r in live {
        let Some(frm) = &r.formation_id else { continue };
        // The entry member works in its roster's project folder.
        let project = r.formation_entry.then(|| r.workdir.clone());
        match found.iter_mut().find(|(f, _)| f == frm) {
            Some((_, known @ None)) => *known = project,
            Some(_) => {}
            None => found.push((frm.clone(), project)),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_0600_once_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let marker = Marker::for_this_launcher(dir.path());
        marker.write(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(FILE_NAME))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(Marker::read(dir.path()), Some(marker.clone()));
        assert!(
            marker.write(dir.path()).is_err(),
            "a second write must not replace the marker"
        );
        assert!(marker.launcher_running());
        assert!(!marker.launcher_start.is_empty());
    }

    #[test]
    fn unparseable_or_missing_marker_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Marker::read(dir.path()), None);
        std::fs::write(dir.path().join(FILE_NAME), "{not json").unwrap();
        assert_eq!(Marker::read(dir.path()), None);
    }

    #[test]
    fn a_dead_or_reused_pid_is_not_running() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = Marker {
            project_dir: "/".into(),
            launcher_pid: pid,
            launcher_start: "1".into(),
        };
        assert!(!gone.launcher_running());
        let reused = Marker {
            project_dir: "/".into(),
            launcher_pid: std::process::id(),
            launcher_start: "1".into(),
        };
        assert!(
            !reused.launcher_running(),
            "another start time means another process"
        );
    }
}
