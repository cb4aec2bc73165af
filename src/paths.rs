//! Where mur keeps its state: `~/.murmur/` (the global store, records, running
//! sessions, formations) and a project's `.murmur/` (the project store).

use std::path::{Path, PathBuf};

/// The user's home, from `$HOME`. Tests point it at a temporary folder.
pub fn home() -> PathBuf {
    std::env::var_os(crate::env::HOME)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// `~/.murmur/`
pub fn murmur_home() -> PathBuf {
    home().join(".murmur")
}

/// `~/.murmur/artifacts/`, the global store.
pub fn global_store() -> PathBuf {
    murmur_home().join("artifacts")
}

/// `<project>/.murmur/artifacts/`, the project store.
pub fn project_store(project: &Path) -> PathBuf {
    project.join(".murmur").join("artifacts")
}

/// `~/.murmur/records/`
pub fn records_root() -> PathBuf {
    murmur_home().join("records")
}

/// `~/.murmur/running/`
pub fn running_dir() -> PathBuf {
    murmur_home().join("running")
}

/// `~/.murmur/formations/`
pub fn formations_dir() -> PathBuf {
    murmur_home().join("formations")
}

/// An absolute path without its leading `/`, as records directories name projects.
pub fn strip_root(path: &Path) -> PathBuf {
    path.strip_prefix("/")
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}
