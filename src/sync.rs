//! `mur sync`: the edit loop in one command. In a roster project, each member whose
//! source folder beside the roster changed is packed and installed again into the
//! project store, and an existing murmur.lock is brought up to date for what it
//! pins. Admission itself still never writes the lock (docs/store.md).

use std::path::{Path, PathBuf};

use clap::Args;

use crate::approval::{self, Wrote};
use crate::diag::{Diagnostic, Result};
use crate::ids::Sha256;
use crate::store::install::{Ready, prepare};
use crate::store::{Outcome, StoreKind, Stores, put};
use crate::{lock, output, paths, roster};

// `mur sync`
#[derive(Debug, Clone, Args)]
pub struct SyncArgs {}

pub fn run(_args: &SyncArgs) -> Result<i32> {
    let cwd = std::env::current_dir().map_err(|e| {
        Diagnostic::new(
            crate::catalogue::E_STO_001,
            format!("cannot read the current folder: {e}"),
        )
    })?;
    let project = paths::project_root(&cwd);
    let roster = roster::load(&project.join(roster::FILE_NAME)).map_err(Diagnostic::from)?;
    let sources = sources_beside(&project)?;
    let stores = Stores::of(&project);
    let mut changed = 0;
    let mut wrote = Vec::new();
    for member in &roster.members {
        let Some(ready) = sources
            .iter()
            .find(|r| r.name == member.capsule && r.version == member.version)
        else {
            output::stdout_line(format_args!(
                "{}: no source folder beside the roster packs {} {}; left as installed",
                member.name, member.capsule, member.version
            ));
            continue;
        };
        let outcome = put(
            &stores,
            StoreKind::Project,
            &ready.name,
            &ready.version,
            &ready.bytes,
            true,
        )?;
        wrote.push(ready);
        let from = ready.from.display();
        match outcome {
            Outcome::Unchanged(_) => {}
            Outcome::Installed(i) => {
                changed += 1;
                output::stdout_line(format_args!(
                    "{}: installed {} {} from {from} (sha256 {})",
                    member.name, i.name, i.version, i.sha256
                ));
            }
            Outcome::Replaced {
                installed: i,
                old_sha256,
            } => {
                changed += 1;
                output::stdout_line(format_args!(
                    "{}: reinstalled {} {} from {from} (sha256 {} → {})",
                    member.name, i.name, i.version, old_sha256, i.sha256
                ));
            }
        }
    }
    let mut wrote: Vec<Wrote> = wrote
        .iter()
        .map(|r| Wrote::Artifact(&r.name, &r.version, r.sha256.clone()))
        .collect();
    let lock_file = project.join(lock::FILE_NAME);
    if lock_file.is_file() {
        let text = update_lock(&project)?;
        wrote.push(Wrote::File(&lock_file, Sha256::of(text.as_bytes())));
    }
    // What sync installed and pinned is approved; nothing else is (docs/approval.md).
    approval::record_written(&project, &wrote)?;
    if changed == 0 {
        output::stdout_line("every member's installed artifact matches its source folder");
    }
    Ok(0)
}

/// Every folder beside the roster that holds a murmur.yaml, packed in memory.
fn sources_beside(project: &Path) -> Result<Vec<Ready>> {
    source_dirs(project).iter().map(|d| prepare(d)).collect()
}

fn source_dirs(project: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(project)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("murmur.yaml").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// W-STO-001, for `mur run --roster` and `mur doctor`: each member whose source
/// folder beside the roster packs other bytes than admission bound it to, or no longer
/// packs at all (a folder is a member's when it packs its capsule and version, or is
/// named after the member or its capsule). The formation runs the installed bytes;
/// `mur sync` installs the folder's (docs/store.md, Source and installed bytes).
pub fn stale(admitted: &crate::admission::Admitted) -> Vec<Diagnostic> {
    let mut warnings = Vec::new();
    for dir in source_dirs(&admitted.project_dir) {
        let folder = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let packed = prepare(&dir);
        let member = admitted.members.iter().find(|m| match &packed {
            Ok(r) => r.name == m.installed.name && r.version == m.installed.version,
            Err(_) => m.name == folder.as_str() || m.installed.name == format!("local/{folder}"),
        });
        let Some(m) = member else { continue };
        let i = &m.installed;
        let message = match &packed {
            Ok(r) if r.sha256 == i.sha256 => continue,
            Ok(r) => format!(
                "member `{}`: its source folder {} differs from the installed {} {} \
                 (installed sha256 {}, the folder packs {}); the formation runs the \
                 installed bytes",
                m.name,
                dir.display(),
                i.name,
                i.version,
                i.sha256,
                r.sha256
            ),
            Err(d) => format!(
                "member `{}`: its source folder {} no longer packs ({}: {}{}); the \
                 formation runs the installed {} {}",
                m.name,
                dir.display(),
                d.code,
                d.message,
                d.location
                    .as_ref()
                    .map(|l| format!(", at {l}"))
                    .unwrap_or_default(),
                i.name,
                i.version
            ),
        };
        let hint = match &packed {
            Ok(_) => "Run `mur sync` to install the folder's bytes, or undo the edit.".to_string(),
            Err(_) => "Fix the folder's murmur.yaml, then run `mur sync`.".to_string(),
        };
        warnings.push(Diagnostic::new(crate::catalogue::W_STO_001, message).hint(hint));
    }
    warnings
}

/// Rewrites murmur.lock when what it should pin changed; says what. Returns the
/// lock's text, as it now is.
fn update_lock(project: &Path) -> Result<String> {
    let file = project.join(lock::FILE_NAME);
    let (new, warnings) = lock::resolve(project)?;
    for w in &warnings {
        output::stderr_line(w);
    }
    let old = lock::load(project)?.unwrap_or_default();
    let text = new.render();
    // Rewritten when its bytes differ too, so the sha256 sync approves is the file's.
    if old == new && std::fs::read_to_string(&file).ok().as_deref() == Some(text.as_str()) {
        return Ok(text);
    }
    lock::write_file(&file, &text)?;
    for pin in &new.pins {
        if old.pin(&pin.name) != Some(pin) {
            output::stdout_line(format_args!(
                "{}: pinned {} {} sha256 {}",
                lock::FILE_NAME,
                pin.name,
                pin.version,
                pin.sha256
            ));
        }
    }
    Ok(text)
}
