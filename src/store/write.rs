//! Writing into a store, atomically: the bytes go to a temporary file in the
//! artifact's own folder (same file system), are fsynced, and are renamed into place;
//! the folder is fsynced after. An error or a kill before the rename leaves at most a
//! `.…partial` file, which look-ups ignore; folders made for a failed install are
//! removed again.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use super::{Installed, StoreKind, Stores};
use crate::artifact::artifact_path_or_refuse;
use crate::catalogue::{E_STO_001, E_STO_002, E_STO_003};
use crate::diag::{Diagnostic, Result};
use crate::fsutil::{self, Durability};

/// What `put` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Newly installed.
    Installed(Installed),
    /// The same bytes were already installed; nothing was written.
    Unchanged(Installed),
    /// Other bytes of the same name and version were replaced (`--force`).
    Replaced {
        installed: Installed,
        old_sha256: crate::ids::Sha256,
    },
}

/// Installs `bytes` as `name` `version` into one store. Refuses other bytes under the
/// same name and version with E-STO-003 unless `force`.
pub fn put(
    stores: &Stores,
    kind: StoreKind,
    name: &str,
    version: &str,
    bytes: &[u8],
    force: bool,
) -> Result<Outcome> {
    let root = stores.root(kind).to_path_buf();
    let path = artifact_path_or_refuse(&root, name, version)?;
    let sha256 = crate::ids::Sha256::of(bytes);
    let existing = stores.find_in(kind, name, version)?;
    if let Some(old) = existing.clone() {
        if old.sha256 == sha256 {
            return Ok(Outcome::Unchanged(old));
        }
        if !force {
            return Err(conflict(&old, &sha256));
        }
    }
    // The store and its `.murmur` are made as needed, never the folder holding them
    // (the project, or $HOME).
    if let Some(base) = root.parent().and_then(Path::parent)
        && !base.is_dir()
    {
        return Err(Diagnostic::new(
            E_STO_001,
            format!(
                "the {kind} store {} cannot be made: {} is not a folder",
                root.display(),
                base.display()
            ),
        )
        .hint("Point HOME (for --global) or the current folder at an existing folder."));
    }
    let dir = path.parent().unwrap_or(&root).to_path_buf();
    let created = make_dirs(&dir).map_err(|e| store_error(&dir, &e))?;
    // Other commands and formations bind to what is installed: the rename is made
    // durable too.
    let written = if force || existing.is_some() {
        fsutil::write_atomic(&path, bytes, 0o600, Durability::Folder).map(|()| true)
    } else {
        fsutil::create_atomic(&path, bytes, 0o600, Durability::Folder)
    };
    let installed = Installed {
        name: name.to_string(),
        version: version.to_string(),
        sha256,
        store: kind,
        path: path.clone(),
    };
    if written.is_ok() {
        sweep_leftovers(&dir);
    }
    match written {
        Ok(true) => Ok(match existing {
            Some(old) => Outcome::Replaced {
                installed,
                old_sha256: old.sha256,
            },
            None => Outcome::Installed(installed),
        }),
        // Another install put this name and version in place first.
        Ok(false) => match stores.find_in(kind, name, version)? {
            Some(now) if now.sha256 == installed.sha256 => Ok(Outcome::Unchanged(now)),
            Some(now) => Err(conflict(&now, &installed.sha256)),
            None => Err(store_error(
                &path,
                &io::Error::other("the artifact vanished while installing"),
            )),
        },
        Err(e) => {
            for made in created.iter().rev() {
                let _ = std::fs::remove_dir(made);
            }
            Err(store_error(&path, &e))
        }
    }
}

/// E-STO-003 naming both sha256s.
pub(super) fn conflict(old: &Installed, new_sha256: &crate::ids::Sha256) -> Diagnostic {
    Diagnostic::new(
        E_STO_003,
        format!(
            "{} {} is already installed in the {} store with other bytes: installed sha256 {}, this one sha256 {new_sha256}",
            old.name, old.version, old.store, old.sha256
        ),
    )
    .in_file(&old.path)
    .hint(
        "Give the capsule a new version, or replace the installed one with `mur install --force`.",
    )
}

/// Temporary files older than this are leftovers of killed installs; no install
/// takes this long.
const LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Removes the leftovers of killed installs from an artifact's folder. Best effort:
/// look-ups ignore them anyway.
fn sweep_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > LEFTOVER_AGE);
        if name.starts_with('.') && name.ends_with(".partial") && stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// `create_dir_all` that returns the folders it made, top first, so a failed install
/// can take them away again.
fn make_dirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(p) = at {
        if p.is_dir() {
            break;
        }
        missing.push(p.to_path_buf());
        at = p.parent();
    }
    missing.reverse();
    let mut made = Vec::new();
    for p in missing {
        // Owner-only, as everything mur makes under .murmur (docs/store.md).
        match std::fs::DirBuilder::new().mode(0o700).create(&p) {
            Ok(()) => made.push(p),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && p.is_dir() => {}
            Err(e) => {
                for m in made.iter().rev() {
                    let _ = std::fs::remove_dir(m);
                }
                return Err(e);
            }
        }
    }
    Ok(made)
}

/// E-STO-001 when a path in the store is not a folder or the store cannot be made
/// for want of a parent; E-STO-002 for every other write failure.
fn store_error(path: &Path, e: &io::Error) -> Diagnostic {
    let (code, what) = match e.kind() {
        io::ErrorKind::NotADirectory | io::ErrorKind::AlreadyExists | io::ErrorKind::NotFound => {
            (E_STO_001, "the store cannot be used")
        }
        _ => (E_STO_002, "cannot write to the store"),
    };
    Diagnostic::new(code, format!("{what}: {}: {e}", path.display()))
        .in_file(path)
        .hint(match code {
            c if c == E_STO_001 => {
                "Check that .murmur/ and .murmur/artifacts/ are folders (not files) you own."
            }
            _ => "Make the store writable (or free space), then install again; nothing was installed.",
        })
}
