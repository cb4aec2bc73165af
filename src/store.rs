//! The artifact stores: the project store `<project>/.murmur/artifacts/` and the global
//! store `~/.murmur/artifacts/`. Look-up is always project store, then global store.
//!
//! Layout (docs/store.md): `<store>/<scope>/<name>/<version>.mur.zip`, nothing else.
//! The archive is the only record: its sha256 is computed from its bytes at every
//! look-up, so no side file can go stale or be half-written. Files whose name starts
//! with `.` are temporary files of an install in progress (or killed) and are ignored.

use std::cmp::Ordering;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::artifact::{EXTENSION, artifact_path, split_name, valid_version};
use crate::catalogue::{E_RUN_047, E_STO_001};
use crate::diag::{Diagnostic, Result};
use crate::paths;

pub mod install;
pub mod ls;
mod write;

pub use write::{Outcome, put};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StoreKind {
    Project,
    Global,
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreKind::Project => "project",
            StoreKind::Global => "global",
        })
    }
}

impl StoreKind {
    /// Look-up order: project store first.
    pub const ORDER: [StoreKind; 2] = [StoreKind::Project, StoreKind::Global];
}

/// One artifact found in a store, bound to the sha256 of its bytes when found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Full name, `<scope>/<name>`, e.g. `local/coder`.
    pub name: String,
    pub version: String,
    /// Of the .mur.zip bytes.
    pub sha256: crate::ids::Sha256,
    pub store: StoreKind,
    /// The .mur.zip inside the store.
    pub path: PathBuf,
}

impl Installed {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "store": self.store.to_string(),
            "name": self.name,
            "version": self.version,
            "sha256": self.sha256,
            "path": self.path.display().to_string(),
        })
    }
}

/// The two stores a project looks in. `Stores::of` is what every command uses; tests
/// point both anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stores {
    pub project: PathBuf,
    pub global: PathBuf,
}

impl Stores {
    /// `<project>/.murmur/artifacts/` and `~/.murmur/artifacts/`.
    pub fn of(project: &Path) -> Self {
        Stores {
            project: paths::project_store(project),
            global: paths::global_store(),
        }
    }

    pub fn root(&self, kind: StoreKind) -> &Path {
        match kind {
            StoreKind::Project => &self.project,
            StoreKind::Global => &self.global,
        }
    }

    /// Project store, then global store; Ok(None) when in neither.
    pub fn find(&self, name: &str, version: &str) -> Result<Option<Installed>> {
        for kind in StoreKind::ORDER {
            if let Some(found) = self.find_in(kind, name, version)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// One store only. A name or version no store could hold is never found.
    pub fn find_in(&self, kind: StoreKind, name: &str, version: &str) -> Result<Option<Installed>> {
        let Some(path) = artifact_path(self.root(kind), name, version) else {
            return Ok(None);
        };
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => return Err(not_a_file(&path)),
            Err(e) if is_absent(&e) => return Ok(None),
            Err(e) => return Err(unreadable(&path, &e)),
        }
        let sha256 = sha256_file(&path).map_err(|e| unreadable(&path, &e))?;
        Ok(Some(Installed {
            name: name.to_string(),
            version: version.to_string(),
            sha256,
            store: kind,
            path,
        }))
    }

    /// The project store's artifacts, then the global store's.
    pub fn list(&self) -> Result<Vec<Installed>> {
        let mut all = self.list_store(StoreKind::Project)?;
        all.extend(self.list_store(StoreKind::Global)?);
        Ok(all)
    }

    /// One store's artifacts, sorted by name then version. A missing store is empty.
    pub fn list_store(&self, kind: StoreKind) -> Result<Vec<Installed>> {
        let mut found = Vec::new();
        for (name, version) in self.names_in(kind)? {
            if let Some(one) = self.find_in(kind, &name, &version)? {
                found.push(one);
            }
        }
        Ok(found)
    }

    /// The name and version of each artifact of one store, sorted as `list_store`
    /// sorts them, without hashing any.
    pub fn names_in(&self, kind: StoreKind) -> Result<Vec<(String, String)>> {
        let root = self.root(kind);
        let mut found = Vec::new();
        for scope in subdirs(root)? {
            for name in subdirs(&root.join(&scope))? {
                let full = format!("{scope}/{name}");
                if split_name(&full).is_none() {
                    continue;
                }
                for version in versions_in(&root.join(&scope).join(&name))? {
                    found.push((full.clone(), version));
                }
            }
        }
        found.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| compare_versions(&a.1, &b.1)));
        Ok(found)
    }
}

/// Project store, then global store; Ok(None) when in neither.
pub fn find(project: &Path, name: &str, version: &str) -> Result<Option<Installed>> {
    Stores::of(project).find(name, version)
}

/// Every artifact installed: the project store's, then the global store's, each sorted
/// by name then version.
pub fn list(project: &Path) -> Result<Vec<Installed>> {
    Stores::of(project).list()
}

/// Recomputes the sha256 of `installed.path` and refuses with E-RUN-047 if it changed.
pub fn verify(installed: &Installed) -> Result<()> {
    let now = sha256_file(&installed.path);
    match now {
        Ok(sha) if sha == installed.sha256 => Ok(()),
        Ok(sha) => Err(Diagnostic::new(
            E_RUN_047,
            format!(
                "{} {} changed since it was found: sha256 {} then, {sha} now",
                installed.name, installed.version, installed.sha256
            ),
        )
        .in_file(&installed.path)),
        Err(e) => Err(Diagnostic::new(
            E_RUN_047,
            format!(
                "{} {} (sha256 {}) cannot be read any more: {e}",
                installed.name, installed.version, installed.sha256
            ),
        )
        .in_file(&installed.path)),
    }
}

/// Orders versions as semver does where it can: dot-separated parts, numbers as
/// numbers (1.9 < 1.10), a pre-release before its release (1.0.0-rc.1 < 1.0.0);
/// any other tie is broken by the text.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    fn split(v: &str) -> (&str, Option<&str>) {
        let core = v.split('+').next().unwrap_or(v);
        match core.split_once('-') {
            Some((c, pre)) => (c, Some(pre)),
            None => (core, None),
        }
    }
    fn parts(a: &str, b: &str) -> Ordering {
        let mut left = a.split(['.', '-']);
        let mut right = b.split(['.', '-']);
        loop {
            let order = match (left.next(), right.next()) {
                (None, None) => return Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(x), Some(y)) => match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => x.cmp(y),
                },
            };
            if order != Ordering::Equal {
                return order;
            }
        }
    }
    let ((core_a, pre_a), (core_b, pre_b)) = (split(a), split(b));
    parts(core_a, core_b)
        .then_with(|| match (pre_a, pre_b) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) => parts(x, y),
        })
        .then_with(|| a.cmp(b))
}

/// The sha256 of a file's bytes, read in chunks. The buffer is on the stack: a session
/// hashes its artifact at every start, and a fresh heap buffer is pages the idle session
/// would keep resident.
pub fn sha256_file(path: &Path) -> io::Result<crate::ids::Sha256> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = [0u8; 8 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(crate::ids::Sha256::from_hasher(hasher))
}

fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn unreadable(path: &Path, e: &io::Error) -> Diagnostic {
    Diagnostic::new(E_STO_001, format!("cannot read {}: {e}", path.display())).in_file(path)
}

fn not_a_file(path: &Path) -> Diagnostic {
    Diagnostic::new(
        E_STO_001,
        format!("{} is in the store but is not a file", path.display()),
    )
    .in_file(path)
}

/// The names of the folders in `dir` that could be store keys (no dot files); none
/// when `dir` is missing.
fn subdirs(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in read_dir(dir)? {
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        if entry.path().is_dir() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// The versions stored in a `<scope>/<name>/` folder. Temporary files (`.…`) and
/// anything else that is not `<version>.mur.zip` are ignored.
fn versions_in(dir: &Path) -> Result<Vec<String>> {
    let mut versions = Vec::new();
    for entry in read_dir(dir)? {
        let Some(file) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if let Some(version) = file.strip_suffix(EXTENSION)
            && valid_version(version)
        {
            versions.push(version.to_string());
        }
    }
    Ok(versions)
}

fn read_dir(dir: &Path) -> Result<Vec<std::fs::DirEntry>> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .collect::<io::Result<Vec<_>>>()
            .map_err(|e| unreadable(dir, &e)),
        Err(e) if is_absent(&e) => Ok(Vec::new()),
        Err(e) => Err(unreadable(dir, &e)),
    }
}

#[cfg(test)]
mod tests;
