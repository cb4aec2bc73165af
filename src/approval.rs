//! Approvals: what a later launch may run, kept where no capsule can write.
//!
//! A session's work folder is often the project folder (a formation's entry member,
//! `mur run` in a capsule folder), and every component, harness and shell command of
//! that session can write there: the project store, `murmur.lock`, `roster.yaml`, the
//! capsule's own `murmur.yaml`. So mur keeps, per project, the sha256 of each of those
//! files as mur itself last wrote them or the user last approved them, in
//! `~/.murmur/approvals/<sha256 of the project's canonical path>.json` (0600, in a 0700
//! folder), and every launch compares. A change mur did not record refuses the launch
//! with E-APR-001 naming each file; `mur approve` shows the changes and records them.
//! docs/approval.md says why this and not a view of the work folder.
//!
//! What is protected:
//! - the project's `roster.yaml` (and any other roster file a launch read there) and
//!   `murmur.lock`;
//! - every artifact of the project store, by name, version and sha256;
//! - for a capsule run from its source folder: its `murmur.yaml` and the files it
//!   declares that run or grant (tools, hooks, the process harness's files,
//!   `agent.ca_file`).
//!
//! First use (no record for the project yet) trusts what is there, records it and says
//! so in one line. `mur new` records what it wrote; `mur install`, `mur lock` and `mur
//! sync` record exactly what they wrote (never what they found), so a change a capsule
//! made is never folded into an approval by an unrelated command.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::catalogue::{E_APR_001, E_APR_002, E_APR_003};
use crate::diag::{Diagnostic, Result};
use crate::fsutil::{self, Durability};
use crate::ids::Sha256;
use crate::{output, paths};

/// The only `record_version` this mur reads and writes.
const RECORD_VERSION: u32 = 1;
/// A capsule folder's manifest, as summaries name it.
const MANIFEST_FILE: &str = "murmur.yaml";

/// What is approved for one project: each protected file's sha256.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct State {
    /// Project files by their path in the project: `roster.yaml`, `murmur.lock`.
    #[serde(default)]
    pub files: BTreeMap<String, Sha256>,
    /// Project store artifacts, `<scope>/<name> <version>` ([`artifact_key`]).
    #[serde(default)]
    pub artifacts: BTreeMap<String, Sha256>,
    /// Capsule source folders by their path in the project (`.` for the project
    /// itself): `murmur.yaml` and each declared file, by its path in the capsule.
    #[serde(default)]
    pub capsules: BTreeMap<String, BTreeMap<String, Sha256>>,
    /// A session has been launched in the project since it was first recorded. Until
    /// then only the user (and mur) wrote in it, so a capsule folder first run is
    /// trusted as it is; after, one never approved must be approved first.
    #[serde(default)]
    pub launched: bool,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    record_version: u32,
    /// For people reading the folder; the file's name is the key.
    project: PathBuf,
    approved: State,
}

/// One difference between the approved state and what is there now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    /// `roster.yaml`, `local/helper 0.1.0 (project store)`, `lead/murmur.yaml`.
    pub what: String,
    pub was: Option<Sha256>,
    pub now: Option<Sha256>,
    /// An artifact: its sha256s are shown, as `mur ls` and murmur.lock name it.
    pub artifact: bool,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = &self.what;
        match (&self.was, &self.now, self.artifact) {
            (None, Some(now), true) => write!(f, "{what}: added, sha256 {now}"),
            (Some(was), None, true) => write!(f, "{what}: removed (was sha256 {was})"),
            (Some(was), Some(now), true) => write!(f, "{what}: sha256 {was} → {now}"),
            (None, _, false) => write!(f, "{what}: added"),
            (_, None, false) => write!(f, "{what}: removed"),
            (Some(_), Some(_), false) => write!(f, "{what}: changed"),
            (None, None, _) => write!(f, "{what}: unchanged"),
        }
    }
}

/// A project's canonical folder and its record's path.
#[derive(Debug, Clone)]
pub(crate) struct Project {
    pub root: PathBuf,
    record: PathBuf,
}

impl Project {
    pub(crate) fn of(folder: &Path) -> Result<Project> {
        let root = std::fs::canonicalize(folder).map_err(|e| {
            Diagnostic::new(
                E_APR_003,
                format!(
                    "cannot resolve the project folder {}: {e}",
                    folder.display()
                ),
            )
            .in_file(folder)
        })?;
        let key = Sha256::of(root.as_os_str().as_encoded_bytes());
        Ok(Project {
            record: dir().join(format!("{key}.json")),
            root,
        })
    }

    /// A path inside the project, as the record names it (`.` for the root). Its
    /// folder is resolved, not the name itself: a `roster.yaml` that is a symlink is
    /// still `roster.yaml`.
    pub(crate) fn rel(&self, path: &Path) -> String {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let real = match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) if name != ".." => std::fs::canonicalize(parent)
                .map(|p| p.join(name))
                .unwrap_or_else(|_| path.clone()),
            _ => std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone()),
        };
        match real.strip_prefix(&self.root) {
            Ok(p) if p.as_os_str().is_empty() => ".".to_string(),
            Ok(p) => p.to_string_lossy().into_owned(),
            Err(_) => real.to_string_lossy().into_owned(),
        }
    }
}

/// `~/.murmur/approvals/`
fn dir() -> PathBuf {
    paths::murmur_home().join("approvals")
}

/// How [`check`] reports a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A launch: a change is an error; a project with no record yet is recorded.
    Launch,
    /// `mur doctor`: a change is returned; nothing is written.
    Report,
}

/// Holds what `folder`'s project holds now, as `scan` hashes it (given the record, so
/// it can hash every file the record names), against its approval. `capsule` is the
/// capsule folder a launch runs from source, compared too. `hint_at` is the folder
/// the refusal's `mur approve` names. With no record yet, a launch records what is
/// there and says so in one line; so does a capsule folder first run in a recorded
/// project.
pub(crate) fn check(
    folder: &Path,
    capsule: Option<&Path>,
    mode: Mode,
    hint_at: &Path,
    scan: impl FnOnce(&Project, Option<&State>) -> Result<State>,
) -> Result<Option<Diagnostic>> {
    let project = Project::of(folder)?;
    refuse_holding_murmur_home(&project)?;
    let _guard = match mode {
        Mode::Launch => Some(Guard::take()?),
        Mode::Report => None,
    };
    let recorded = read(&project)?;
    let now = scan(&project, recorded.as_ref())?;
    let capsule_key = capsule.map(|dir| project.rel(dir));
    let Some(mut recorded) = recorded else {
        if mode == Mode::Launch {
            write(
                &project,
                &State {
                    launched: true,
                    ..now.clone()
                },
            )?;
        }
        // A folder holding nothing to approve (a capsule run from the global store in
        // some folder) is recorded too, so that what a session plants there is caught,
        // but there is nothing to say.
        if mode == Mode::Launch && now != State::default() {
            output::banner_line(format_args!(
                "[mur run] {}: first launch in this project; approved what it holds: {} (docs/approval.md)",
                project.root.display(),
                summary(&now)
            ));
        }
        return Ok(None);
    };
    // A capsule folder first run: trusted as it is while no session has worked in the
    // project (only the user wrote it); after that, every file of it is a change to
    // approve, since a session there could have written it.
    let mut update = false;
    if let Some(key) = &capsule_key
        && !recorded.capsules.contains_key(key)
    {
        if !recorded.launched {
            if let Some(files) = now.capsules.get(key) {
                recorded.capsules.insert(key.clone(), files.clone());
                update = true;
            }
        } else {
            recorded.capsules.insert(key.clone(), BTreeMap::new());
        }
    }
    let changes = compare(&recorded, &now, capsule_key.as_deref());
    if changes.is_empty() {
        if mode == Mode::Launch && (update || !recorded.launched) {
            recorded.launched = true;
            write(&project, &recorded)?;
        }
        return Ok(None);
    }
    let refusal = refusal(&project, mode, hint_at, &changes);
    match mode {
        Mode::Launch => Err(refusal),
        Mode::Report => Ok(Some(refusal)),
    }
}

/// What mur itself just wrote into a project, recorded as approved. Only the entries
/// named change: whatever else differs stays unapproved. A project with no record yet
/// is left so (its first launch records everything).
#[derive(Debug)]
pub(crate) enum Wrote<'a> {
    /// A project file (`murmur.lock`) and the sha256 of the bytes mur wrote.
    File(&'a Path, Sha256),
    /// An artifact put into the project store: name, version, sha256 of its bytes.
    Artifact(&'a str, &'a str, Sha256),
}

pub(crate) fn record_written(folder: &Path, wrote: &[Wrote]) -> Result<()> {
    let project = Project::of(folder)?;
    // No record, nothing to do: ~/.murmur is not even touched.
    if !project.record.exists() {
        return Ok(());
    }
    let _guard = Guard::take()?;
    let Some(mut state) = read(&project)? else {
        return Ok(());
    };
    for w in wrote {
        match w {
            Wrote::File(path, sha) => {
                state.files.insert(project.rel(path), sha.clone());
            }
            Wrote::Artifact(name, version, sha) => {
                state
                    .artifacts
                    .insert(artifact_key(name, version), sha.clone());
            }
        }
    }
    write(&project, &state)
}

/// A folder `mur new` just made, recorded whole as `scan` hashes it (a record left by
/// an earlier folder of that path is replaced).
pub(crate) fn record_new(
    folder: &Path,
    scan: impl FnOnce(&Project) -> Result<State>,
) -> Result<()> {
    let project = Project::of(folder)?;
    let _guard = Guard::take()?;
    let state = scan(&project)?;
    write(&project, &state)
}

/// The artifact key of the record: `<scope>/<name> <version>`.
pub(crate) fn artifact_key(name: &str, version: &str) -> String {
    format!("{name} {version}")
}

/// Every difference between `was` and `now`: project files, artifacts, and the
/// capsule folder `capsule` (None: every capsule folder both name).
pub(crate) fn compare(was: &State, now: &State, capsule: Option<&str>) -> Vec<Change> {
    let mut changes = Vec::new();
    diff(&was.files, &now.files, false, &mut changes, |k| {
        k.to_string()
    });
    diff(&was.artifacts, &now.artifacts, true, &mut changes, |k| {
        format!("{k} (project store)")
    });
    for (key, files) in &now.capsules {
        if capsule.is_some_and(|c| c != key) {
            continue;
        }
        if let Some(old) = was.capsules.get(key) {
            diff(old, files, false, &mut changes, |f| {
                if key == "." {
                    f.to_string()
                } else {
                    format!("{key}/{f}")
                }
            });
        }
    }
    changes
}

fn diff(
    was: &BTreeMap<String, Sha256>,
    now: &BTreeMap<String, Sha256>,
    artifact: bool,
    out: &mut Vec<Change>,
    name: impl Fn(&str) -> String,
) {
    let keys: std::collections::BTreeSet<&String> = was.keys().chain(now.keys()).collect();
    for key in keys {
        let (a, b) = (was.get(key), now.get(key));
        if a != b {
            out.push(Change {
                what: name(key),
                was: a.cloned(),
                now: b.cloned(),
                artifact,
            });
        }
    }
}

/// E-APR-001 naming each change, with the one command that approves them.
fn refusal(project: &Project, mode: Mode, hint_at: &Path, changes: &[Change]) -> Diagnostic {
    let mut message = format!(
        "{} changed since mur last recorded {} in {}; a session working there can write {}, so {} started:",
        if changes.len() == 1 {
            "1 file".to_string()
        } else {
            format!("{} files", changes.len())
        },
        if changes.len() == 1 { "it" } else { "them" },
        project.root.display(),
        if changes.len() == 1 { "it" } else { "them" },
        if mode == Mode::Report {
            "a launch would refuse and nothing would be"
        } else {
            "nothing was"
        },
    );
    for c in changes {
        message.push_str(&format!("\n  {c}"));
    }
    Diagnostic::new(E_APR_001, message).hint(format!(
        "If you made {}, approve {}: `{}`",
        if changes.len() == 1 {
            "this change"
        } else {
            "these changes"
        },
        if changes.len() == 1 { "it" } else { "them" },
        approve_command(hint_at)
    ))
}

/// `mur approve`, naming the folder when it is not the current one.
fn approve_command(target: &Path) -> String {
    let here = std::env::current_dir()
        .ok()
        .and_then(|d| std::fs::canonicalize(d).ok());
    let there = std::fs::canonicalize(target).ok();
    match (here, there) {
        (Some(h), Some(t)) if h == t => "mur approve".to_string(),
        (_, Some(t)) => format!("mur approve {}", shell_word(&t)),
        _ => format!("mur approve {}", shell_word(target)),
    }
}

/// A path as one shell word.
fn shell_word(path: &Path) -> String {
    let s = path.to_string_lossy();
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b))
    {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// "roster.yaml, murmur.lock, 2 artifacts": what a state approves.
pub(crate) fn summary(state: &State) -> String {
    let mut parts: Vec<String> = state.files.keys().cloned().collect();
    match state.artifacts.len() {
        0 => {}
        1 => parts.push("1 artifact".to_string()),
        n => parts.push(format!("{n} artifacts")),
    }
    for (key, files) in &state.capsules {
        let m = MANIFEST_FILE;
        let name = if key == "." {
            m.to_string()
        } else {
            format!("{key}/{m}")
        };
        match files.len().saturating_sub(1) {
            0 => parts.push(name),
            n => parts.push(format!("{name} and {n} declared file{}", plural(n))),
        }
    }
    if parts.is_empty() {
        "nothing yet".to_string()
    } else {
        parts.join(", ")
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// E-APR-002: a project folder that holds `~/.murmur` would hand every session there
/// mur's own state: the approvals, the global store, the records.
pub(crate) fn refuse_holding_murmur_home(project: &Project) -> Result<()> {
    let home = std::fs::canonicalize(paths::home()).unwrap_or_else(|_| paths::home());
    let murmur = home.join(".murmur");
    if murmur.starts_with(&project.root) {
        return Err(Diagnostic::new(
            E_APR_002,
            format!(
                "the project folder {} holds {}: a session working there could rewrite mur's approvals, the global store and the records",
                project.root.display(),
                murmur.display()
            ),
        )
        .in_file(&project.root)
        .hint("Run mur in a project folder below your home folder (`mur new <NAME>` makes one)."));
    }
    Ok(())
}

/// The project's record; None when there is none yet.
pub(crate) fn read(project: &Project) -> Result<Option<State>> {
    let bytes = match std::fs::read(&project.record) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unusable(&project.record, &e)),
    };
    let record: Record =
        serde_json::from_slice(&bytes).map_err(|e| unusable(&project.record, &e))?;
    if record.record_version != RECORD_VERSION {
        return Err(unusable(
            &project.record,
            &format!(
                "record_version is {}; this mur reads {RECORD_VERSION}",
                record.record_version
            ),
        ));
    }
    Ok(Some(record.approved))
}

pub(crate) fn write(project: &Project, state: &State) -> Result<()> {
    let record = Record {
        record_version: RECORD_VERSION,
        project: project.root.clone(),
        approved: state.clone(),
    };
    let mut text =
        serde_json::to_string_pretty(&record).map_err(|e| unusable(&project.record, &e))?;
    text.push('\n');
    fsutil::write_atomic(&project.record, text.as_bytes(), 0o600, Durability::Folder)
        .map_err(|e| unusable(&project.record, &e))
}

pub(crate) fn unusable(file: &Path, e: &dyn std::fmt::Display) -> Diagnostic {
    Diagnostic::new(
        E_APR_003,
        format!("the approval record {} cannot be used: {e}", file.display()),
    )
    .in_file(file)
}

/// `~/.murmur/approvals/` made (0700) and `flock`ed: one command at a time reads,
/// changes and writes a record, so two installs racing both land.
pub(crate) struct Guard(#[allow(dead_code)] std::fs::File);

impl Guard {
    pub(crate) fn take() -> Result<Guard> {
        let dir = dir();
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| unusable(&dir, &e))?;
        let file = std::fs::File::open(&dir).map_err(|e| unusable(&dir, &e))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| unusable(&dir, &io::Error::from(e)))?;
        Ok(Guard(file))
    }
}

#[cfg(test)]
mod tests;
