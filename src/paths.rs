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
