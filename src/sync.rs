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
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(project)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("murmur.yaml").is_file())
        .collect();
    dirs.sort();
    dirs.iter().map(|d| prepare(d)).collect()
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
