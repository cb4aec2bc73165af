//! Where mur keeps its state: `~/.murmur/` (the global store, records, running
//! sessions, formations) and a project's `.murmur/` (the project store).

use std::path::{Path, PathBuf};

/// The user's home, from `$HOME`. Tests point it at a temporary folder.
pub(crate) fn home() -> PathBuf {
    std::env::var_os(crate::env::HOME)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// `~/.murmur/`
pub(crate) fn murmur_home() -> PathBuf {
    home().join(".murmur")
}

/// `~/.murmur/artifacts/`, the global store.
pub(crate) fn global_store() -> PathBuf {
    murmur_home().join("artifacts")
}

/// `<project>/.murmur/artifacts/`, the project store.
pub(crate) fn project_store(project: &Path) -> PathBuf {
    project.join(".murmur").join("artifacts")
}

/// `~/.murmur/records/`
pub(crate) fn records_root() -> PathBuf {
    murmur_home().join("records")
}

/// `~/.murmur/running/`
pub(crate) fn running_dir() -> PathBuf {
    murmur_home().join("running")
}

/// `~/.murmur/formations/`
pub(crate) fn formations_dir() -> PathBuf {
    murmur_home().join("formations")
}

/// An absolute path without its leading `/`, as records directories name projects.
pub(crate) fn strip_root(path: &Path) -> PathBuf {
    path.strip_prefix("/")
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

/// What marks a project folder: its roster, its lock, or its project store's `.murmur/`.
const PROJECT_MARKERS: [&str; 3] = ["roster.yaml", "murmur.lock", ".murmur"];

/// The project `start` (the current folder) is in, as cargo finds its workspace: the
/// nearest folder, `start` included, that holds `roster.yaml`, `murmur.lock` or
/// `.murmur/`; `start` itself when none does. The search stops below the home folder
/// (whose `.murmur/` is the global store, not a project) and at a filesystem boundary.
pub(crate) fn project_root(start: &Path) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
    let home = std::fs::canonicalize(home()).unwrap_or_else(|_| home());
    let device = std::fs::metadata(&start).map(|m| m.dev()).ok();
    for dir in start.ancestors() {
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if real == home || std::fs::metadata(dir).map(|m| m.dev()).ok() != device {
            break;
        }
        if PROJECT_MARKERS.iter().any(|m| dir.join(m).exists()) {
            return dir.to_path_buf();
        }
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_is_the_nearest_folder_with_a_marker() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let member = root.join("team/lead/docs");
        std::fs::create_dir_all(&member).unwrap();
        // No marker anywhere: the folder itself.
        assert_eq!(project_root(&member), member);
        std::fs::write(root.join("team/roster.yaml"), "").unwrap();
        assert_eq!(project_root(&member), root.join("team"));
        // A nearer marker wins.
        std::fs::create_dir_all(root.join("team/lead/.murmur")).unwrap();
        assert_eq!(project_root(&member), root.join("team/lead"));
    }
}
