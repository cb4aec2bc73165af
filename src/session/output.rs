//! What a session prints, written so that no write can panic.
//!
//! Rust ignores SIGPIPE, so once a launcher that read a member's stdout or stderr is
//! gone, every write to them fails with EPIPE, and `println!`/`eprintln!` would panic
//! (exit 101). Every write here is fallible: a stdout write that fails marks stdout
//! gone and is dropped; a diagnostic whose stderr write fails goes to the session's
//! `logs/bootstrap.log`, and so does every later one (spec: "to the peer's own
//! logs/bootstrap.log once the launcher is gone").

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Mutex;

/// The name of the diagnostics log in a records directory's `logs/`.
pub const BOOTSTRAP_LOG: &str = "bootstrap.log";

#[derive(Debug, Default)]
pub struct Output {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    stdout_gone: bool,
    stderr_gone: bool,
    /// `<records>/logs/bootstrap.log`, once the records directory exists.
    bootstrap: Option<PathBuf>,
}

impl Output {
    pub fn new() -> Self {
        Output::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where diagnostics go once stderr is gone.
    pub fn set_bootstrap_log(&self, path: PathBuf) {
        self.state().bootstrap = Some(path);
    }

    /// One line on stdout; false when stdout is gone (the line is dropped).
    pub fn stdout_line(&self, line: &str) -> bool {
        let mut state = self.state();
        if state.stdout_gone {
            return false;
        }
        let mut out = std::io::stdout().lock();
        let written = out
            .write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if written.is_err() {
            state.stdout_gone = true;
        }
        written.is_ok()
    }

    /// Text on stdout as it is (the result of a `--task` run); false when gone.
    pub fn stdout_text(&self, text: &str) -> bool {
        let text = text.strip_suffix('\n').unwrap_or(text);
        self.stdout_line(text)
    }

    /// A diagnostic (one or more lines) on stderr, or in bootstrap.log once stderr
    /// is gone.
    pub fn diag(&self, text: &str) {
        let mut state = self.state();
        if !state.stderr_gone {
            let mut err = std::io::stderr().lock();
            let written = err
                .write_all(text.as_bytes())
                .and_then(|()| err.write_all(b"\n"))
                .and_then(|()| err.flush());
            if written.is_ok() {
                return;
            }
            state.stderr_gone = true;
        }
        if let Some(path) = &state.bootstrap {
            let _ = append(path, text);
        }
    }

    /// Whether stderr writes have failed (diagnostics now go to bootstrap.log).
    pub fn stderr_gone(&self) -> bool {
        self.state().stderr_gone
    }
}

fn append(path: &PathBuf, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    let line = format!("{} {text}\n", crate::trace::now());
    file.write_all(line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_fall_back_to_bootstrap_log() {
        let dir = tempfile::tempdir().unwrap();
        let out = Output::new();
        let log = dir.path().join(BOOTSTRAP_LOG);
        out.set_bootstrap_log(log.clone());
        out.state().stderr_gone = true;
        out.diag("error[E-RUN-053]: deadline");
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.ends_with(" error[E-RUN-053]: deadline\n"), "{text}");
    }
}
