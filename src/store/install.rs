//! `mur install`: .mur.zip files and capsule source folders into the project store
//! (or `--global`, the global store). Every argument is read and checked before
//! anything is written; each artifact then goes in atomically (see `write`).

use std::path::{Path, PathBuf};

use clap::Args;

use super::{Outcome, StoreKind, Stores, put, write::conflict};
use crate::approval::{self, Wrote};
use crate::artifact::LOCAL_SCOPE;
use crate::catalogue::{E_PAK_001, E_PAK_004, E_PAK_006, E_STO_001, E_STO_003};
use crate::diag::{Diagnostic, Result};
use crate::{output, pack};

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// .mur.zip files or capsule source folders (a folder is packed in memory first).
    #[arg(required = true, value_name = "FILE_OR_DIR")]
    pub paths: Vec<PathBuf>,
    /// Install into the global store ~/.murmur/artifacts/ instead of the project store.
    #[arg(long)]
    pub global: bool,
    /// Replace an installed artifact of the same name and version that has other bytes.
    #[arg(long)]
    pub force: bool,
}

/// An artifact read and checked, ready to install.
#[derive(Debug, Clone)]
pub struct Ready {
    /// `local/<name>`
    pub name: String,
    pub version: String,
    pub bytes: Vec<u8>,
    pub sha256: crate::ids::Sha256,
    pub from: PathBuf,
}

pub fn run(args: &InstallArgs) -> Result<i32> {
    let project = std::env::current_dir()
        .map(|cwd| crate::paths::project_root(&cwd))
        .map_err(|e| Diagnostic::new(E_STO_001, format!("cannot read the current folder: {e}")))?;
    let stores = Stores::of(&project);
    let kind = if args.global {
        StoreKind::Global
    } else {
        StoreKind::Project
    };
    let ready = args
        .paths
        .iter()
        .map(|p| prepare(p))
        .collect::<Result<Vec<_>>>()?;
    // Refuse every conflict before writing anything.
    for (i, one) in ready.iter().enumerate() {
        if let Some(twin) = ready[..i]
            .iter()
            .find(|o| o.name == one.name && o.version == one.version && o.sha256 != one.sha256)
        {
            return Err(Diagnostic::new(
                E_STO_003,
                format!(
                    "{} and {} are both {} {} but differ: sha256 {} and {}",
                    twin.from.display(),
                    one.from.display(),
                    one.name,
                    one.version,
                    twin.sha256,
                    one.sha256
                ),
            )
            .hint("Install one of them, or give one a new version."));
        }
        if !args.force
            && let Some(old) = stores.find_in(kind, &one.name, &one.version)?
            && old.sha256 != one.sha256
        {
            return Err(conflict(&old, &one.sha256));
        }
    }
    let mut wrote = Vec::new();
    for one in &ready {
        let outcome = put(
            &stores,
            kind,
            &one.name,
            &one.version,
            &one.bytes,
            args.force,
        )?;
        // Every artifact is installed whether or not anyone still reads the report.
        output::stdout_line(report(&outcome));
        wrote.push(one);
    }
    // What the user installed into the project store is approved; nothing else is.
    if kind == StoreKind::Project {
        let wrote: Vec<Wrote> = wrote
            .iter()
            .map(|one| Wrote::Artifact(&one.name, &one.version, one.sha256.clone()))
            .collect();
        approval::record_written(&project, &wrote)?;
    }
    Ok(0)
}

/// What `mur install` says about one artifact.
fn report(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Installed(i) => format!(
            "installed {} {} into the {} store: {}\n  sha256 {}",
            i.name,
            i.version,
            i.store,
            i.path.display(),
            i.sha256
        ),
        Outcome::Unchanged(i) => format!(
            "{} {} is already installed in the {} store with the same bytes (sha256 {}); nothing to do",
            i.name, i.version, i.store, i.sha256
        ),
        Outcome::Replaced {
            installed: i,
            old_sha256,
        } => format!(
            "replaced {} {} in the {} store: {}\n  sha256 {} (was {})",
            i.name,
            i.version,
            i.store,
            i.path.display(),
            i.sha256,
            old_sha256
        ),
    }
}

/// Reads a .mur.zip or packs a source folder, and checks the result.
pub fn prepare(path: &Path) -> Result<Ready> {
    let meta = std::fs::metadata(path).map_err(|e| {
        Diagnostic::new(E_PAK_001, format!("cannot install {}: {e}", path.display())).in_file(path)
    })?;
    let (bytes, manifest) = if meta.is_dir() {
        let packed = pack::pack_dir(path)?;
        (packed.bytes, packed.manifest)
    } else {
        // A packed archive is never larger than what it unpacks to, plus headers.
        if meta.len() > pack::LIMITS.max_unpacked + (16 << 20) {
            return Err(Diagnostic::new(
                E_PAK_006,
                format!(
                    "{} is {} bytes, over the cap of {} bytes",
                    path.display(),
                    meta.len(),
                    pack::LIMITS.max_unpacked
                ),
            )
            .in_file(path));
        }
        let bytes = std::fs::read(path).map_err(|e| {
            Diagnostic::new(E_PAK_004, format!("cannot read {}: {e}", path.display())).in_file(path)
        })?;
        let checked = pack::check(&bytes, path)?;
        (bytes, checked.manifest)
    };
    let name = format!("{LOCAL_SCOPE}/{}", manifest.name);
    crate::artifact::artifact_path_or_refuse(Path::new(""), &name, &manifest.version)
        .map_err(|d| d.in_file(path))?;
    Ok(Ready {
        sha256: crate::ids::Sha256::of(&bytes),
        name,
        version: manifest.version,
        bytes,
        from: path.to_path_buf(),
    })
}
