//! The writer of a session's `trace.jsonl` (see the parent module): one record per
//! line, flushed per record, refusing any record that holds a credential (E-REC-002).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use super::*;
use crate::a2a::time::now;
use crate::catalogue;
use crate::diag::{Diagnostic, Result};

/// Appends records to one trace.jsonl. Shared by every task of a session (`&self`).
#[derive(Debug)]
pub struct TraceWriter {
    path: PathBuf,
    inner: Mutex<Inner>,
    secrets: Mutex<Vec<Secret>>,
    tap: OnceLock<Tap>,
    live: OnceLock<live::Live>,
}

/// Where each record goes besides the file (`murmur.WatchSession`): handed every line
/// (without its newline) in `seq` order, under the writer's lock.
struct Tap(Box<TapFn>);

type TapFn = dyn Fn(&[u8]) + Send + Sync;

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tap")
    }
}

#[derive(Debug)]
struct Inner {
    file: File,
    seq: u64,
    /// The sum of the `model_request` usages written, for `session_end`.
    usage: Option<Usage>,
}

impl TraceWriter {
    /// Creates a new trace (mode 0600); refuses a file already there.
    pub fn create(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| write_error(path, &e))?;
        Ok(Self::with_file(path, file, 0))
    }

    /// Opens an existing trace to go on with it (`mur run --resume`); numbering resumes
    /// after its last complete record.
    pub fn append(path: &Path) -> Result<Self> {
        let seq = read(path)?.records.last().map_or(0, |r| r.seq);
        // Never through a symlink planted at the name (docs/design/writes.md).
        let file = OpenOptions::new()
            .append(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)
            .map_err(|e| write_error(path, &e))?;
        Ok(Self::with_file(path, file, seq))
    }

    fn with_file(path: &Path, file: File, seq: u64) -> Self {
        TraceWriter {
            path: path.to_path_buf(),
            inner: Mutex::new(Inner {
                file,
                seq,
                usage: None,
            }),
            secrets: Mutex::new(Vec::new()),
            tap: OnceLock::new(),
            live: OnceLock::new(),
        }
    }

    /// Hands every record written from now on to `tap` as well, once it is in the
    /// file, in order. Set once; a second tap is ignored.
    pub fn tap(&self, tap: impl Fn(&[u8]) + Send + Sync + 'static) {
        let _ = self.tap.set(Tap(Box::new(tap)));
    }

    /// Sends every span the records end from now on to a collector (live export).
    /// Set once; a second is ignored.
    pub fn live(&self, live: live::Live) {
        let _ = self.live.set(live);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Refuses, from now on, every record that contains `secret` (the operator token,
    /// a declared bearer credential). Strings shorter than 8 bytes are ignored: they
    /// would refuse ordinary words.
    pub fn forbid(&self, secret: &str) {
        if secret.len() >= 8 {
            lock(&self.secrets).push(Secret::new(secret));
        }
    }

    /// Appends one record and returns it. The line goes out in one `write` on an
    /// `O_APPEND` file, so the kernel has it before this returns.
    pub fn write(&self, mut event: Event) -> Result<Record> {
        let mut inner = lock(&self.inner);
        match &mut event {
            Event::ModelRequest { usage: Some(u), .. } => {
                inner.usage.get_or_insert_default().add(u);
            }
            Event::SessionEnd { usage, .. } if usage.is_none() => *usage = inner.usage,
            _ => {}
        }
        let mut record = Record {
            ts: now(),
            seq: inner.seq + 1,
            event,
        };
        if let (Some(live), Event::SessionEnd { .. }) = (self.live.get(), &record.event) {
            // The last spans go out (or are counted) before the count is written.
            let dropped = live.end(&record);
            if let Event::SessionEnd {
                otlp_dropped_spans, ..
            } = &mut record.event
            {
                *otlp_dropped_spans = Some(dropped);
            }
        }
        let mut line = serde_json::to_vec(&record).map_err(|e| {
            Diagnostic::new(
                catalogue::E_REC_001,
                format!("a {} record does not serialize: {e}", record.event.kind()),
            )
        })?;
        if let Some(why) = self.leaks(&record.event, &line) {
            return Err(Diagnostic::new(
                catalogue::E_REC_002,
                format!(
                    "refused to write a {} record to {}: it holds {why}",
                    record.event.kind(),
                    self.path.display()
                ),
            ));
        }
        line.push(b'\n');
        if STOPPED.load(Ordering::SeqCst) {
            // The process is exiting at once: its trace ends as a kill leaves it.
            return Ok(record);
        }
        inner
            .file
            .write_all(&line)
            .and_then(|()| inner.file.flush())
            .map_err(|e| write_error(&self.path, &e))?;
        inner.seq = record.seq;
        if let Some(tap) = self.tap.get() {
            (tap.0)(&line[..line.len() - 1]);
        }
        if let Some(live) = self.live.get() {
            live.take(&record);
        }
        Ok(record)
    }

    /// Appends one record; a record the trace cannot take is reported on stderr
    /// (`crate::output`, the one sink) and the caller goes on: a trace that fails
    /// must not stop the task or the session.
    pub fn record(&self, event: Event) {
        if let Err(d) = self.write(event) {
            crate::output::stderr_line(&d);
        }
    }

    /// What secret `event` holds, if any (never the secret itself). `line` is its
    /// record serialized: a string holding a secret holds it in the line too (as JSON
    /// escapes it), so a line with neither the token prefix nor any secret is clean,
    /// and only the rare other line is walked string by string.
    fn leaks(&self, event: &Event, line: &[u8]) -> Option<&'static str> {
        let secrets = lock(&self.secrets);
        let candidate = TOKEN_FINDER.find(line).is_some()
            || secrets.iter().any(|s| s.escaped.find(line).is_some());
        if !candidate {
            return None;
        }
        let value = serde_json::to_value(event).ok()?;
        let mut found = None;
        visit_strings(&value, &mut |s| {
            if found.is_none() {
                if holds_token(s) {
                    found = Some("a formation token");
                } else if secrets.iter().any(|secret| s.contains(secret.raw.as_str())) {
                    found = Some("a credential of this session");
                }
            }
        });
        found
    }
}

/// `TOKEN_PREFIX`'s searcher, built once: `memmem::find` builds one on every call,
/// and every record is searched.
static TOKEN_FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(TOKEN_PREFIX.as_bytes()));

/// A secret the trace refuses: as given, and as it reads inside a JSON string.
#[derive(Debug)]
struct Secret {
    raw: String,
    escaped: memchr::memmem::Finder<'static>,
}

impl Secret {
    fn new(raw: &str) -> Secret {
        let quoted = serde_json::to_string(raw).unwrap_or_default();
        let escaped = quoted
            .strip_prefix('"')
            .and_then(|q| q.strip_suffix('"'))
            .unwrap_or(raw);
        Secret {
            raw: raw.to_string(),
            escaped: memchr::memmem::Finder::new(escaped.as_bytes()).into_owned(),
        }
    }
}

/// Whether `s` may hold a formation token: it starts with `mft1.`, or contains
/// `mft1.` followed by a base64url character. The prefix in prose ("tokens start
/// with mft1. and …") is fine.
pub fn holds_token(s: &str) -> bool {
    s.starts_with(TOKEN_PREFIX)
        || s.match_indices(TOKEN_PREFIX).any(|(i, _)| {
            s[i + TOKEN_PREFIX.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

fn visit_strings(value: &serde_json::Value, f: &mut impl FnMut(&str)) {
    match value {
        serde_json::Value::String(s) => f(s),
        serde_json::Value::Array(items) => items.iter().for_each(|v| visit_strings(v, f)),
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                f(k);
                visit_strings(v, f);
            }
        }
        _ => {}
    }
}

/// A mutex poisoned by a panicking writer still guards a usable file.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn write_error(path: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic::new(
        catalogue::E_REC_001,
        format!("cannot write the trace {}: {e}", path.display()),
    )
    .in_file(path)
}

/// Set by [`stop_writing`]: every trace of this process takes no more records.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// A session that exits at once (exit 143, `session::ends::exit_now`) calls this before
/// it kills what it started: the teardown still running on its other thread would
/// otherwise write the task's end and `session_end` between that kill and the exit,
/// and the trace would claim an end the process never had.
pub(crate) fn stop_writing() {
    STOPPED.store(true, Ordering::SeqCst);
}
