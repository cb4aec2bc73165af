//! Hashing what a project holds now, as the record names it.

use std::collections::BTreeMap;
use std::path::Path;

use crate::approval::{Project, State, artifact_key};
use crate::catalogue::E_APR_003;
use crate::diag::Diagnostic;
use crate::diag::Result;
use crate::ids::Sha256;
use crate::manifest::{self, Transport};
use crate::roster::FILE_NAME as ROSTER_FILE;
use crate::store::{self, StoreKind, Stores};

/// The project's files (`roster.yaml`, `murmur.lock`, and any other file the record
/// names) and its project store. Capsule folders are the caller's. The artifacts in
/// `hashed` (the ones admission bound, by record key) are taken as given, not hashed
/// again.
pub(super) fn project(
    project: &Project,
    recorded: Option<&State>,
    hashed: &BTreeMap<String, Sha256>,
) -> Result<State> {
    let mut state = State::default();
    let mut names = vec![ROSTER_FILE.to_string(), crate::lock::FILE_NAME.to_string()];
    if let Some(r) = recorded {
        names.extend(r.files.keys().cloned());
    }
    for name in names {
        if let Some(sha) = hash(&project.root.join(&name))? {
            state.files.insert(name, sha);
        }
    }
    let stores = Stores::of(&project.root);
    for (name, version) in stores.names_in(StoreKind::Project)? {
        let key = artifact_key(&name, &version);
        if let Some(sha) = hashed.get(&key) {
            state.artifacts.insert(key, sha.clone());
        } else if let Some(one) = stores.find_in(StoreKind::Project, &name, &version)? {
            state.artifacts.insert(key, one.sha256);
        }
    }
    Ok(state)
}

/// A capsule source folder: its murmur.yaml and the files it declares that run or
/// grant: tools, hooks, the process harness's command words that name files in the
/// folder, and a relative `agent.ca_file`. The instructions and skills are not among
/// them: text for the model grants nothing (docs/approval.md).
pub(super) fn capsule(dir: &Path) -> Result<BTreeMap<String, Sha256>> {
    let mut files = BTreeMap::new();
    let file = dir.join(manifest::FILE_NAME);
    let Some(bytes) = read(&file)? else {
        return Ok(files);
    };
    files.insert(manifest::FILE_NAME.to_string(), Sha256::of(&bytes));
    // The declared files of the bytes just hashed; one that does not parse is refused
    // by the launch itself.
    let Ok(m) = std::str::from_utf8(&bytes)
        .ok()
        .map(|text| manifest::parse(text, &file))
        .transpose()
    else {
        return Ok(files);
    };
    let Some(m) = m else { return Ok(files) };
    let mut declared: Vec<String> = m.tools.iter().map(|t| t.path.clone()).collect();
    declared.extend(m.hooks.iter().map(|h| h.path.clone()));
    match &m.agent.transport {
        Transport::Process(p) => declared.extend(p.command.iter().cloned()),
        Transport::Http(h) => declared.extend(h.ca_file.clone()),
        Transport::Builtin => {}
    }
    for rel in declared {
        if rel.is_empty() || Path::new(&rel).is_absolute() {
            continue;
        }
        let path = dir.join(&rel);
        // Only regular files: a word like `python3` names none, and a fifo or a
        // device is never read.
        if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            continue;
        }
        if let Some(sha) = hash(&path)? {
            files.insert(rel, sha);
        }
    }
    Ok(files)
}

/// The sha256 of a regular file; None when there is none.
fn hash(path: &Path) -> Result<Option<Sha256>> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(path, &e)),
    }
    store::sha256_file(path)
        .map(Some)
        .map_err(|e| unreadable(path, &e))
}

/// A file's bytes; None when there is none.
fn read(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(unreadable(path, &e)),
    }
}

fn unreadable(path: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic::new(
        E_APR_003,
        format!(
            "cannot read {} to hold it against its approval: {e}",
            path.display()
        ),
    )
    .in_file(path)
}
