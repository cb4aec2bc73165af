//! A session's records directory, `~/.murmur/records/<project>/<ses_id>/`: its
//! trace, its results, the agent's home and temporary files, its logs and MURMUR.md.
//! `<project>` is the work folder's absolute path without its leading `/`. The
//! runtime writes a session's files here and never in the work folder.
//! docs/records.md describes every file.

use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::agent::{Artifact, FileContent, Outcome, Part};
use crate::catalogue;
use crate::diag::{Diagnostic, Result};
use crate::fsutil::{self, Durability};
use crate::paths;

mod flush;
pub(crate) use flush::Flusher;

/// The folders made inside every records directory. `runtime/` holds files mur makes
/// for itself (a delegated task): no component, harness or shell is granted it.
pub(crate) const SUBDIRS: [&str; 5] = ["out", "home", "tmp", "logs", "runtime"];

/// A session's records directory.
#[derive(Debug, Clone)]
pub(crate) struct Records {
    pub dir: PathBuf,
    pub session_id: String,
    /// out/result.txt and its spare, kept open once written (shared by clones).
    results: Arc<Mutex<ResultFiles>>,
}

impl PartialEq for Records {
    fn eq(&self, other: &Self) -> bool {
        self.dir == other.dir && self.session_id == other.session_id
    }
}
impl Eq for Records {}

/// Who the session is, for MURMUR.md's Identity section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub session_id: String,
    /// `<scope>/<name>`, or the bare name of a capsule run from its folder.
    pub capsule: String,
    pub version: String,
    /// In a formation: this member's roster name and the formation id.
    pub roster_name: Option<crate::ids::MemberName>,
    pub formation_id: Option<String>,
}

/// The records directory of session `session_id` run in `workdir` (absolute; symlinks
/// are resolved when it exists).
#[cfg(test)]
pub(crate) fn dir_for(workdir: &Path, session_id: &str) -> PathBuf {
    paths::records_root()
        .join(paths::strip_root(&absolute(workdir)))
        .join(session_id)
}

fn absolute(p: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(p) {
        return real;
    }
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

impl Records {
    /// Makes the records directory of a new session at `dir`, owner-only (0700), with
    /// out/, home/, tmp/ and logs/. Refuses a directory already there; leaves nothing
    /// behind when it fails.
    pub(crate) fn create_at(dir: PathBuf, session_id: &str) -> Result<Records> {
        let fail = |what: &str, path: &Path, e: std::io::Error| {
            Diagnostic::new(
                catalogue::E_REC_001,
                format!("cannot {what} {}: {e}", path.display()),
            )
        };
        if let Some(parent) = dir.parent() {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| fail("create", parent, e))?;
        }
        DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| fail("create the records directory", &dir, e))?;
        let records = Records {
            dir,
            session_id: session_id.to_string(),
            results: Arc::default(),
        };
        let made = SUBDIRS.iter().try_for_each(|sub| {
            let path = records.dir.join(sub);
            DirBuilder::new()
                .mode(0o700)
                .create(&path)
                .and_then(|()| {
                    // The umask may have narrowed it; never widened, so set it exactly.
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
                })
                .map_err(|e| fail("create", &path, e))
        });
        if let Err(e) = made {
            let _ = std::fs::remove_dir_all(&records.dir);
            return Err(e);
        }
        Ok(records)
    }

    /// An existing records directory (`mur trace show`, `mur run --resume`).
    pub(crate) fn open(dir: PathBuf) -> Records {
        let session_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Records {
            dir,
            session_id,
            results: Arc::default(),
        }
    }

    pub(crate) fn trace_path(&self) -> PathBuf {
        self.dir.join(crate::trace::FILE_NAME)
    }
    pub(crate) fn out_dir(&self) -> PathBuf {
        self.dir.join("out")
    }
    pub(crate) fn result_path(&self) -> PathBuf {
        self.out_dir().join("result.txt")
    }
    pub(crate) fn home_dir(&self) -> PathBuf {
        self.dir.join("home")
    }
    pub(crate) fn tmp_dir(&self) -> PathBuf {
        self.dir.join("tmp")
    }
    pub(crate) fn logs_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }
    /// mur's own folder: granted to no component, harness or shell command.
    pub(crate) fn runtime_dir(&self) -> PathBuf {
        self.dir.join("runtime")
    }
    pub(crate) fn murmur_md_path(&self) -> PathBuf {
        self.dir.join("MURMUR.md")
    }

    /// Writes MURMUR.md (see [`murmur_md`]) and returns its text.
    pub(crate) fn write_murmur_md(&self, identity: &Identity, workdir: &Path) -> Result<String> {
        let text = murmur_md(identity, workdir, self);
        let path = self.murmur_md_path();
        // Synced by the flusher's first round (`flusher`), off the start-up path.
        fsutil::write_atomic(&path, text.as_bytes(), 0o600, Durability::Unsynced)
            .map_err(|e| fsutil::write_failed(catalogue::E_REC_001, &path, &e))?;
        Ok(text)
    }

    /// Writes a task's result to out/result.txt, atomically: a reader sees the previous
    /// result or this one, never a mix. The bytes of file artifacts are saved first,
    /// under out/files/ (each synced). `cancel_reason` is used for
    /// [`Outcome::Canceled`]. out/result.txt itself is not synced here: the session's
    /// [`Flusher`] (from [`Records::flusher`]) does that off the task's path.
    pub(crate) fn write_result(&self, outcome: &Outcome, cancel_reason: &str) -> Result<()> {
        let mut saved = Vec::new();
        if let Outcome::Completed { artifacts, .. } = outcome {
            saved = self.save_files(artifacts)?;
        }
        let text = result_text(outcome, cancel_reason, &saved);
        let mut files = self.results.lock().unwrap_or_else(|e| e.into_inner());
        files
            .replace(&self.out_dir(), text.as_bytes())
            .map_err(|e| {
                Diagnostic::new(
                    catalogue::E_REC_001,
                    format!("cannot write {}: {e}", self.result_path().display()),
                )
                .in_file(self.result_path())
            })
    }

    /// The thread that makes the trace, out/result.txt and MURMUR.md durable.
    pub(crate) fn flusher(&self) -> std::io::Result<Flusher> {
        let flusher = Flusher::start(vec![
            self.trace_path(),
            self.result_path(),
            self.out_dir(),
            self.murmur_md_path(),
        ])?;
        // MURMUR.md was written unsynced: the first round syncs it.
        flusher.mark();
        Ok(flusher)
    }

    /// Saves every file part with bytes; returns, per part in order, where it went.
    fn save_files(&self, artifacts: &[Artifact]) -> Result<Vec<String>> {
        let mut saved = Vec::new();
        let dir = self.out_dir().join("files");
        for (a, artifact) in artifacts.iter().enumerate() {
            for (p, part) in artifact.parts.iter().enumerate() {
                if let Part::File {
                    filename,
                    content: FileContent::Bytes(bytes),
                    ..
                } = part
                {
                    let name = format!(
                        "{}-{}-{}",
                        a + 1,
                        p + 1,
                        safe_name(filename.as_deref().unwrap_or("file"))
                    );
                    // A real folder, never a symlink a harness put at out/files.
                    fsutil::private_dir(&dir).map_err(|e| {
                        Diagnostic::new(
                            catalogue::E_REC_001,
                            format!("cannot create {}: {e}", dir.display()),
                        )
                    })?;
                    let path = dir.join(&name);
                    fsutil::write_atomic(&path, bytes, 0o600, Durability::Data)
                        .map_err(|e| fsutil::write_failed(catalogue::E_REC_001, &path, &e))?;
                    saved.push(format!("out/files/{name}"));
                }
            }
        }
        Ok(saved)
    }
}

/// A file name an artifact may not steer out of out/files/: its last component,
/// with anything but letters, digits, `.`, `-` and `_` replaced by `_`.
fn safe_name(name: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or("");
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    if cleaned.is_empty() {
        "file".to_string()
    } else {
        cleaned.chars().take(100).collect()
    }
}

/// MURMUR.md: what the agent is told about its session.
///
/// ```text
/// # MURMUR.md
///
/// Written by mur for this session's agent. Do not edit: mur writes it anew.
///
/// ## Identity
///
/// - Session: ses_0199…
/// - Capsule: local/coder 1.2.0
/// - Roster name: coder
/// - Formation: frm_0199…
///
/// ## Folders
///
/// - Work folder: /home/u/proj
/// - Home: /home/u/.murmur/records/home/u/proj/ses_0199…/home
/// - Temporary files: …/tmp
/// - Results: …/out
/// ```
///
/// The two formation lines appear only in a formation.
pub(crate) fn murmur_md(identity: &Identity, workdir: &Path, records: &Records) -> String {
    let mut s = String::from(
        "# MURMUR.md\n\nWritten by mur for this session's agent. Do not edit: mur writes it anew.\n\n## Identity\n\n",
    );
    s.push_str(&format!("- Session: {}\n", identity.session_id));
    s.push_str(&format!(
        "- Capsule: {} {}\n",
        identity.capsule, identity.version
    ));
    if let Some(name) = &identity.roster_name {
        s.push_str(&format!("- Roster name: {name}\n"));
    }
    if let Some(id) = &identity.formation_id {
        s.push_str(&format!("- Formation: {id}\n"));
    }
    s.push_str("\n## Folders\n\n");
    s.push_str(&format!("- Work folder: {}\n", workdir.display()));
    s.push_str(&format!("- Home: {}\n", records.home_dir().display()));
    s.push_str(&format!(
        "- Temporary files: {}\n",
        records.tmp_dir().display()
    ));
    s.push_str(&format!("- Results: {}\n", records.out_dir().display()));
    s
}

/// A session whose records directory, trace and MURMUR.md exist.
#[derive(Debug)]
pub(crate) struct StartedRecords {
    pub records: Records,
    /// Its first record, `session_start`, is written.
    pub trace: std::sync::Arc<crate::trace::TraceWriter>,
    /// MURMUR.md's text, for the system prompt.
    pub murmur_md: String,
}

/// What `session_start` says beyond the identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartInfo {
    /// The installed artifact's sha256; `None` for a capsule run from its folder.
    pub sha256: Option<String>,
    /// In a formation: the members this one may call, in roster order.
    pub callees: Option<Vec<crate::ids::MemberName>>,
    /// The confinement opt-out in force (`--unconfined`), if any.
    pub unconfined: Option<String>,
}

/// Starts a session's records in one step: the records directory under `records_root`
/// (`paths::records_root()` for the real one), its trace opening with
/// `session_start`, and MURMUR.md. On failure nothing of it is left behind.
pub(crate) fn start(
    records_root: &Path,
    workdir: &Path,
    identity: &Identity,
    info: &StartInfo,
) -> Result<StartedRecords> {
    let workdir = absolute(workdir);
    let dir = records_root
        .join(paths::strip_root(&workdir))
        .join(&identity.session_id);
    let records = Records::create_at(dir, &identity.session_id)?;
    let started = (|| {
        let trace = crate::trace::TraceWriter::create(&records.trace_path())?;
        let in_formation = identity.formation_id.is_some();
        trace.write(crate::trace::Event::SessionStart {
            session_id: identity.session_id.clone(),
            capsule: crate::trace::CapsuleRef {
                name: identity.capsule.clone(),
                version: identity.version.clone(),
                sha256: info.sha256.clone(),
            },
            mur_version: env!("CARGO_PKG_VERSION").to_string(),
            pid: std::process::id(),
            workdir: workdir.clone(),
            records_dir: records.dir.clone(),
            formation_id: identity.formation_id.clone(),
            formation_member: identity
                .roster_name
                .as_ref()
                .map(ToString::to_string)
                .filter(|_| in_formation),
            formation_callees: in_formation.then(|| {
                info.callees
                    .iter()
                    .flatten()
                    .map(ToString::to_string)
                    .collect()
            }),
            unconfined: info.unconfined.clone(),
        })?;
        let murmur_md = records.write_murmur_md(identity, &workdir)?;
        Ok(StartedRecords {
            records: records.clone(),
            trace: std::sync::Arc::new(trace),
            murmur_md,
        })
    })();
    if started.is_err() {
        let _ = std::fs::remove_dir_all(&records.dir);
    }
    started
}

/// Every session's records directory under `root` (`paths::records_root()` for the
/// real one), in session id order, which is the order they started. A session is a
/// `ses_…` folder holding a trace; the walk does not enter sessions nor follow
/// symlinks. For `mur trace show`: a formation's sessions are those whose
/// `session_start` names it.
pub(crate) fn find_sessions(root: &Path) -> Vec<Records> {
    let mut found = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            let is_session = entry.file_name().to_string_lossy().starts_with("ses_")
                && path.join(crate::trace::FILE_NAME).is_file();
            if is_session {
                found.push(Records::open(path));
            } else if depth < 256 {
                stack.push((path, depth + 1));
            }
        }
    }
    found.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    found
}

/// The records directory of session `session_id` under `root`, if there is one.
pub(crate) fn find_session(root: &Path, session_id: &str) -> Option<Records> {
    find_sessions(root)
        .into_iter()
        .find(|r| r.session_id == session_id)
}

/// out/result.txt for an outcome. The first line is the task's final state:
///
/// | Outcome        | result.txt                                                  |
/// |----------------|-------------------------------------------------------------|
/// | completed      | `completed`, then the message, then each artifact           |
/// | input required | `input-required: <question>`                                |
/// | rejected       | `rejected: <reason>`                                        |
/// | failed         | `failed: <reason>`                                          |
/// | canceled       | `canceled: <reason>`                                        |
///
/// Reasons and questions are folded onto that one line. `saved` names, in order,
/// where the bytes of each file part went.
pub(crate) fn result_text(outcome: &Outcome, cancel_reason: &str, saved: &[String]) -> String {
    match outcome {
        Outcome::Completed { message, artifacts } => {
            let mut s = String::from("completed\n");
            if let Some(m) = message {
                s.push_str(m.trim_end());
                s.push('\n');
            }
            let mut saved = saved.iter();
            for artifact in artifacts {
                s.push_str(&format!("\n=== artifact: {}\n", one_line(artifact.label())));
                for part in &artifact.parts {
                    match part {
                        Part::Text(t) => {
                            s.push_str(t.trim_end());
                            s.push('\n');
                        }
                        Part::Data(d) => {
                            let json = serde_json::to_string_pretty(d).unwrap_or_default();
                            s.push_str(&json);
                            s.push('\n');
                        }
                        Part::File {
                            filename,
                            media_type,
                            content,
                        } => {
                            let name = filename.as_deref().unwrap_or("(unnamed)");
                            let media = media_type.as_deref().unwrap_or("application/octet-stream");
                            match content {
                                FileContent::Bytes(b) => s.push_str(&format!(
                                    "file: {} ({media}, {} bytes) saved as {}\n",
                                    one_line(name),
                                    b.len(),
                                    saved.next().map_or("(not saved)", String::as_str)
                                )),
                                FileContent::Url(u) => s.push_str(&format!(
                                    "file: {} ({media}) at {}\n",
                                    one_line(name),
                                    one_line(u)
                                )),
                            }
                        }
                    }
                }
            }
            s
        }
        Outcome::InputRequired { question } => line("input-required", question),
        Outcome::Rejected { reason } => line("rejected", reason),
        Outcome::Failed { reason } => line("failed", reason),
        Outcome::Canceled => line("canceled", cancel_reason),
    }
}

fn line(state: &str, text: &str) -> String {
    let text = one_line(text);
    if text.is_empty() {
        format!("{state}: no reason given\n")
    } else {
        format!("{state}: {text}\n")
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The spare file out/result.txt is swapped with.
const RESULT_SPARE: &str = ".result.next";

/// out/result.txt and its spare `out/.result.next`, kept open: a result is written
/// into the spare, which is then exchanged with result.txt (`renameat2`
/// `RENAME_EXCHANGE`), so the previous result becomes the spare for the next one. A
/// reader sees the previous result or the new one, never a mix. No file is created or
/// removed per task (on ext4 ~17 µs against ~250 µs for a new temporary file renamed
/// over the old one), and with both files and out/ open a result costs a `pwrite` and
/// the `renameat2`, named relative to out/. Where the filesystem cannot exchange, or on
/// the first result, the spare is renamed over result.txt and a new spare made next time.
#[derive(Debug, Default)]
struct ResultFiles {
    /// out/ (`O_PATH`): the names below are resolved from it.
    dir: Option<std::os::fd::OwnedFd>,
    /// The file named `.result.next`, and the length last written to it.
    spare: Option<(std::fs::File, u64)>,
    /// The file named result.txt, when this process wrote it.
    current: Option<(std::fs::File, u64)>,
}

impl ResultFiles {
    fn replace(&mut self, out: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let written = self.try_replace(out, bytes);
        if written.is_err() {
            // Start over from the names next time.
            *self = ResultFiles::default();
        }
        written
    }

    fn try_replace(&mut self, out: &Path, bytes: &[u8]) -> std::io::Result<()> {
        use rustix::fs::{Mode, OFlags, RenameFlags};
        use std::os::unix::fs::FileExt;
        if self.dir.is_none() {
            // out/ is named to a harness (MURMUR_OUT): never a symlink put in its place.
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            self.dir = Some(rustix::fs::open(out, flags, Mode::empty())?);
        }
        let Some(dir) = &self.dir else { unreachable!() };
        let (spare, len) = match self.spare.take() {
            Some(open) => open,
            None => {
                let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let fd = rustix::fs::openat(dir, RESULT_SPARE, flags, Mode::from_raw_mode(0o600))?;
                let file = std::fs::File::from(fd);
                let len = file.metadata()?.len();
                (file, len)
            }
        };
        spare.write_all_at(bytes, 0)?;
        // Cut an older, longer result's tail; leave the size alone otherwise (cheaper).
        if len > bytes.len() as u64 {
            spare.set_len(bytes.len() as u64)?;
        }
        let now = (spare, bytes.len() as u64);
        match rustix::fs::renameat_with(dir, RESULT_SPARE, dir, "result.txt", RenameFlags::EXCHANGE)
        {
            Ok(()) => {
                // The previous result.txt is the spare now (opened by name next time
                // when another process wrote it).
                self.spare = self.current.replace(now);
                Ok(())
            }
            // No result yet, or no exchange on this filesystem.
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS)
            | Err(rustix::io::Errno::OPNOTSUPP) => {
                rustix::fs::renameat(dir, RESULT_SPARE, dir, "result.txt")?;
                self.current = Some(now);
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests;
