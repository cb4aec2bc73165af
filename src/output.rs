//! Everything mur prints goes through here, and no write here can panic.
//!
//! Rust ignores SIGPIPE, so once the reader of stdout or stderr is gone (`mur trace
//! show … | head -1`, a launcher that went away) every write fails with EPIPE, and
//! `println!`/`eprintln!` would panic (exit 101). Here a failed write marks its stream
//! gone, and every later write to it is dropped: a reader that went away is not an
//! error (as in ripgrep's `main.rs`), and the command's exit status is the one it
//! would have had. A command that loops over many lines stops when
//! [`stdout_line`] returns false.
//!
//! stderr lines (diagnostics, warnings, status) go to `logs/bootstrap.log` in the
//! session's records once stderr is gone and [`set_logs`] named the folder (spec: "to
//! the peer's own logs/bootstrap.log once the launcher is gone"). From then on each is
//! also appended to `logs/stderr.log`, whether stderr took it or not: what `mur logs`
//! prints of a session. The first lines, written before, are held and copied there
//! when it is named.
//!
//! The one log sink: `main` calls [`install_log_sink`], so every `tracing::warn!` (or
//! `error!`, any level) in mur reaches stderr as `[mur <command>] warning: …`, through
//! the same [`stderr_line`]. Events of other crates are not ours to print.

use std::fmt::{self, Display, Write as _};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::Layer;

/// The name of the diagnostics log in a records directory's `logs/`.
pub const BOOTSTRAP_LOG: &str = "bootstrap.log";

/// The copy of every stderr line a session wrote once its records existed.
pub const STDERR_LOG: &str = "stderr.log";

/// The process's stdout and stderr are one each, so their state is too.
static STATE: Mutex<State> = Mutex::new(State {
    stdout_gone: false,
    stderr_gone: false,
    bootstrap: None,
    tee: None,
    early: Vec::new(),
    progress: None,
});

/// The command named in log lines (`run` in `[mur run] warning: …`).
static COMMAND: OnceLock<&'static str> = OnceLock::new();

/// `-q`: banners are dropped.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `-q`: drop every [`banner_line`] from now on.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `-q` was given.
pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// `-v`'s count: a formation's launcher gives it to its members (`formation::member`).
static VERBOSE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// How many `-v` were given.
pub fn verbosity() -> u8 {
    VERBOSE.load(std::sync::atomic::Ordering::Relaxed)
}

/// The `-v`s to hand a `mur` this one starts (a formation's member, a delegated
/// child), so that it logs as much as this one does; RUST_LOG is inherited.
pub fn verbosity_args() -> impl Iterator<Item = &'static str> {
    std::iter::repeat_n("-v", usize::from(verbosity()))
}

/// A line for people that says what runs (a session's or a formation's banner): on
/// stderr, unless `-q`.
pub fn banner_line(line: impl Display) {
    if !quiet() {
        stderr_line(line);
    }
}

#[derive(Debug)]
struct State {
    stdout_gone: bool,
    stderr_gone: bool,
    /// `<records>/logs/bootstrap.log`, once the records directory exists.
    bootstrap: Option<PathBuf>,
    /// `<records>/logs/stderr.log`, open for appending, once the records exist.
    tee: Option<std::fs::File>,
    /// The first stderr lines, until [`set_logs`] copies them into stderr.log.
    early: Vec<String>,
    /// The progress line shown at the bottom of a terminal, if any.
    progress: Option<String>,
}

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// One line on stdout; false once stdout is gone (the line is dropped).
pub fn stdout_line(line: impl Display) -> bool {
    let mut out = std::io::stdout().lock();
    state().line_to(&mut out, &line)
}

/// Text on stdout as it is, without doubling its last newline; false once gone.
pub fn stdout_text(text: &str) -> bool {
    stdout_line(text.strip_suffix('\n').unwrap_or(text))
}

/// One line (or several) on stderr, or in bootstrap.log once stderr is gone. A
/// progress line shown is cleared first and drawn again below it.
pub fn stderr_line(line: impl Display) {
    let mut err = std::io::stderr().lock();
    let mut state = state();
    if state.progress.is_some() {
        let _ = write!(err, "{CLEAR_LINE}");
    }
    state.diag_to(&mut err, &line);
    if let Some(progress) = &state.progress {
        let _ = write!(err, "{progress}").and_then(|()| err.flush());
    }
}

/// Carriage return, then erase to the end of the line.
const CLEAR_LINE: &str = "\r\x1b[K";

/// Whether a progress line may be drawn: stderr is a terminal and `-q` was not given.
pub fn progress_shown() -> bool {
    use std::io::IsTerminal;
    !quiet() && std::io::stderr().is_terminal()
}

/// Draws `line` as the progress line at the bottom of the terminal (replacing the
/// last), or with `None` clears it. Nothing unless [`progress_shown`].
pub fn progress(line: Option<&str>) {
    if !progress_shown() {
        return;
    }
    let mut err = std::io::stderr().lock();
    let mut state = state();
    if state.stderr_gone {
        return;
    }
    let drawn = match line {
        Some(text) => write!(err, "{CLEAR_LINE}{text}"),
        None if state.progress.is_some() => write!(err, "{CLEAR_LINE}"),
        None => Ok(()),
    };
    let _ = drawn.and_then(|()| err.flush());
    state.progress = line.map(String::from);
}

/// A session's `logs/` folder: stderr lines go to its bootstrap.log once stderr is
/// gone, and each is copied into its stderr.log from now on. A stderr.log that cannot
/// be opened is not made (`mur logs` then shows none).
pub fn set_logs(dir: &Path) {
    let tee = crate::fsutil::open_private(&dir.join(STDERR_LOG), crate::fsutil::Open::Append);
    let mut state = state();
    state.bootstrap = Some(dir.join(BOOTSTRAP_LOG));
    state.tee = tee.ok();
    let early = std::mem::take(&mut state.early);
    if let Some(tee) = &mut state.tee {
        for line in &early {
            let _ = write_line(tee, line);
        }
    }
}

/// At most this many stderr lines are held for stderr.log before it is named (a
/// process that is no session names none).
const EARLY_LINES: usize = 64;

impl State {
    fn line_to(&mut self, out: &mut dyn Write, line: &dyn Display) -> bool {
        if self.stdout_gone {
            return false;
        }
        if write_line(out, line).is_err() {
            self.stdout_gone = true;
        }
        !self.stdout_gone
    }

    fn diag_to(&mut self, err: &mut dyn Write, line: &dyn Display) {
        match &mut self.tee {
            // A copy that cannot be written is no reason to lose the line itself.
            Some(tee) => {
                let _ = write_line(tee, line);
            }
            None if self.early.len() < EARLY_LINES => self.early.push(line.to_string()),
            None => {}
        }
        if !self.stderr_gone {
            if write_line(err, line).is_ok() {
                return;
            }
            self.stderr_gone = true;
        }
        if let Some(path) = &self.bootstrap {
            // Nowhere is left to say that this failed too.
            let _ = append(path, line);
        }
    }
}

/// The whole line in one `write`. stderr is unbuffered, so a `Display` written piece by
/// piece (a diagnostic is eight pieces) would be as many writes, and on a stderr shared
/// with another process (the entry member's, its launcher's) lines could interleave.
fn write_line(w: &mut dyn Write, line: &dyn Display) -> std::io::Result<()> {
    let mut text = line.to_string();
    text.push('\n');
    w.write_all(text.as_bytes()).and_then(|()| w.flush())
}

fn append(path: &Path, line: &dyn Display) -> std::io::Result<()> {
    let mut file = crate::fsutil::open_private(path, crate::fsutil::Open::Append)?;
    let line = format!("{} {line}\n", crate::a2a::time::now());
    file.write_all(line.as_bytes())
}

/// Installs the one log sink for `mur <command>`: tracing events become
/// [`stderr_line`]s. Without RUST_LOG, mur's own events at `warn` and above, `info`
/// with `-v`, `debug` with `-vv`, everything with `-vvv`; with RUST_LOG, what its
/// filter lets through, other crates' events included. Called once, by `main`.
pub fn install_log_sink(command: &'static str, verbose: u8) {
    let _ = COMMAND.set(command);
    VERBOSE.store(verbose, std::sync::atomic::Ordering::Relaxed);
    let (filter, all_crates, bad) = log_filter(std::env::var(crate::env::RUST_LOG).ok(), verbose);
    let subscriber = filter.with_subscriber(Sink::new(all_crates));
    // A second call (a test harness that set its own) keeps the first.
    let _ = tracing::subscriber::set_global_default(subscriber);
    if let Some(bad) = bad {
        tracing::warn!("RUST_LOG is not a filter tracing reads ({bad}); using -v's levels");
    }
}

/// The filter for `RUST_LOG` (when set and readable) or `-v`, whether it may let
/// other crates' events through, and why RUST_LOG was not used.
fn log_filter(
    rust_log: Option<String>,
    verbose: u8,
) -> (tracing_subscriber::EnvFilter, bool, Option<String>) {
    use tracing_subscriber::EnvFilter;
    let mut bad = None;
    if let Some(spec) = rust_log.filter(|s| !s.trim().is_empty()) {
        match EnvFilter::try_new(&spec) {
            Ok(filter) => return (filter, true, None),
            Err(e) => bad = Some(e.to_string()),
        }
    }
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    (EnvFilter::new(format!("mur={level}")), false, bad)
}

/// The subscriber behind [`install_log_sink`], under its filter. It prints events and
/// keeps only a count of each open span's handles (mur opens no span; other crates'
/// only when RUST_LOG lets them through), so that the filter forgets a span when it
/// closes. tracing-subscriber's registry would keep each span's data, which no line
/// prints, in a table it makes up front (32 KiB written in every process).
struct Sink {
    /// RUST_LOG chose: other crates' events are printed too.
    all_crates: bool,
    spans: Mutex<SpanCounts>,
}

/// Each open span's id and its number of handles; ids are never reused.
#[derive(Default)]
struct SpanCounts {
    /// The last id given.
    last: u64,
    open: std::collections::BTreeMap<u64, usize>,
}

impl Sink {
    fn new(all_crates: bool) -> Sink {
        Sink {
            all_crates,
            spans: Mutex::default(),
        }
    }

    fn spans(&self) -> MutexGuard<'_, SpanCounts> {
        self.spans.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Subscriber for Sink {
    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        self.all_crates || is_ours(meta.target())
    }

    fn event(&self, event: &Event<'_>) {
        let mut message = Message::default();
        event.record(&mut message);
        let command = COMMAND.get().copied().unwrap_or("");
        stderr_line(log_line(command, *event.metadata().level(), &message.0));
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        let mut spans = self.spans();
        spans.last += 1;
        let id = spans.last;
        spans.open.insert(id, 1);
        Id::from_u64(id)
    }

    fn clone_span(&self, id: &Id) -> Id {
        if let Some(handles) = self.spans().open.get_mut(&id.into_u64()) {
            *handles += 1;
        }
        id.clone()
    }

    fn try_close(&self, id: Id) -> bool {
        let mut spans = self.spans();
        let Some(handles) = spans.open.get_mut(&id.into_u64()) else {
            return false;
        };
        *handles -= 1;
        let closed = *handles == 0;
        if closed {
            spans.open.remove(&id.into_u64());
        }
        closed
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// mur's own modules (`mur::…`) and the binary (`mur`).
fn is_ours(target: &str) -> bool {
    target == "mur" || target.starts_with("mur::")
}

/// `[mur run] warning: <message>`, the style of every other line mur prints.
fn log_line(command: &str, level: Level, message: &str) -> String {
    let who = if command.is_empty() {
        "[mur]".to_string()
    } else {
        format!("[mur {command}]")
    };
    let level = match level {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "note",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    };
    format!("{who} {level}: {message}")
}

/// The event's message, then its other fields as ` key=value`.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> State {
        State {
            stdout_gone: false,
            stderr_gone: false,
            bootstrap: None,
            tee: None,
            early: Vec::new(),
            progress: None,
        }
    }

    /// A reader that went away: every write fails as a closed pipe does.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_stdout_drops_this_line_and_every_later_one() {
        let mut s = fresh();
        let mut open = Vec::new();
        assert!(s.line_to(&mut open, &"one"));
        assert!(!s.line_to(&mut Closed, &"two"));
        assert!(!s.line_to(&mut open, &"three"), "stdout stays gone");
        assert_eq!(open, b"one\n");
    }

    /// Records each `write` it is given.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>);

    impl Write for Writes {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.push(bytes.to_vec());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_diagnostic_with_a_hint_is_one_write() {
        let d = crate::diag::Diagnostic::new(crate::catalogue::W_SEC_013, "mur runs as root")
            .hint("Run mur as an ordinary user.");
        let mut err = Writes::default();
        fresh().diag_to(&mut err, &d);
        assert_eq!(err.0, vec![format!("{d}\n").into_bytes()]);
        assert!(
            err.0[0].windows(2).any(|w| w == b"\n "),
            "the hint is on a line of its own"
        );
    }

    #[test]
    fn every_line_is_copied_to_stderr_log_once_the_logs_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = fresh();
        s.diag_to(&mut Vec::new(), &"before the records");
        s.tee =
            crate::fsutil::open_private(&dir.path().join(STDERR_LOG), crate::fsutil::Open::Append)
                .ok();
        assert_eq!(s.early, vec!["before the records".to_string()]);
        s.early.clear();
        let mut err = Vec::new();
        s.diag_to(&mut err, &"warning[W-RUN-010]: native");
        s.diag_to(&mut Closed, &"status: failed");
        assert_eq!(err, b"warning[W-RUN-010]: native\n");
        let text = std::fs::read_to_string(dir.path().join(STDERR_LOG)).unwrap();
        assert_eq!(text, "warning[W-RUN-010]: native\nstatus: failed\n");
    }

    #[test]
    fn diagnostics_fall_back_to_bootstrap_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(BOOTSTRAP_LOG);
        let mut s = fresh();
        s.bootstrap = Some(log.clone());
        s.diag_to(&mut Closed, &"error[E-RUN-053]: deadline");
        s.diag_to(&mut Vec::new(), &"status: failed");
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].ends_with(" error[E-RUN-053]: deadline"), "{text}");
        assert!(lines[1].ends_with(" status: failed"), "{text}");
    }

    #[test]
    fn log_lines_read_like_the_rest_of_the_output() {
        assert_eq!(
            log_line("run", Level::WARN, "ignoring door URL for `b`"),
            "[mur run] warning: ignoring door URL for `b`"
        );
        assert_eq!(log_line("", Level::ERROR, "x"), "[mur] error: x");
        assert_eq!(log_line("ps", Level::INFO, "x"), "[mur ps] note: x");
        assert_eq!(log_line("ps", Level::DEBUG, "x"), "[mur ps] debug: x");
    }

    #[test]
    fn rust_log_replaces_the_verbosity_and_a_bad_one_is_said() {
        let (_, all, bad) = log_filter(Some("hyper=debug,mur=trace".into()), 0);
        assert!(all && bad.is_none());
        let (filter, all, bad) = log_filter(None, 2);
        assert!(!all && bad.is_none());
        assert_eq!(filter.to_string(), "mur=debug");
        let (filter, all, bad) = log_filter(Some("mur=[".into()), 1);
        assert!(!all && bad.is_some());
        assert_eq!(filter.to_string(), "mur=info");
        assert_eq!(log_filter(Some(" ".into()), 0).0.to_string(), "mur=warn");
    }

    /// The filter forgets a span (RUST_LOG's `[span]` directives keep one each) once
    /// its last handle is dropped, and not before.
    #[test]
    fn the_sink_counts_a_span_s_handles_until_the_last_is_dropped() {
        let (filter, _, _) = log_filter(Some("[call]=trace".into()), 0);
        let dispatch = tracing::Dispatch::new(filter.with_subscriber(Sink::new(true)));
        let open = || dispatch.downcast_ref::<Sink>().unwrap().spans().open.len();
        tracing::dispatcher::with_default(&dispatch, || {
            let span = tracing::info_span!("call");
            let copy = span.clone();
            assert_eq!(open(), 1);
            drop(span);
            assert_eq!(open(), 1);
            drop(copy);
            assert_eq!(open(), 0);
            let _other = tracing::info_span!("call");
            assert_eq!(open(), 1);
        });
    }

    #[test]
    fn only_murs_own_events_are_printed() {
        assert!(is_ours("mur"));
        assert!(is_ours("mur::running"));
        assert!(!is_ours("murky::x"));
        assert!(!is_ours("hyper::proto"));
    }
}
