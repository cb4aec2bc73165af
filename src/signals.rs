//! The process's own signals, as one stream of [`Signal`]s: the session (SIGTERM,
//! SIGINT) and the launcher (SIGINT, SIGTERM, SIGHUP) both take theirs from here.
//!
//! As PID 1 of a PID namespace (a container's entrypoint: a pod's mur), the kernel
//! drops every signal mur has no handler for, so a SIGTERM before the handlers below
//! exist would be lost and the kubelet's SIGKILL would come 30 s later instead of a
//! wind-down. [`init_duties`], mur's first act, records one from the start.

use futures_util::future::{FutureExt, select_all};
pub(crate) use nix::sys::signal::Signal;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use tokio::signal::unix::{SignalKind, signal};

/// The signals that end a session or a formation, whichever mur runs.
const ENDING: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];
/// Whether [`record`] keeps what arrives: from [`init_duties`] until the first
/// [`Signals`] exists.
static RECORDING: AtomicBool = AtomicBool::new(false);
/// The first ending signal recorded (0: none).
static EARLY: AtomicI32 = AtomicI32::new(0);

extern "C" fn record(sig: libc::c_int) {
    if RECORDING.load(Ordering::SeqCst) {
        let _ = EARLY.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// As PID 1, records the first SIGTERM, SIGINT or SIGHUP from now on; the first
/// [`Signals`] that watches it reads it first. Elsewhere nothing: a signal before the
/// handlers exist takes its default action, which ends mur before it started anything.
/// The handler stays behind tokio's (signal-hook-registry calls it too), inert.
#[allow(
    unsafe_code,
    reason = "sigaction of a handler that only touches atomics"
)]
pub fn init_duties() {
    if std::process::id() != 1 {
        return;
    }
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, sigaction};
    RECORDING.store(true, Ordering::SeqCst);
    let action = SigAction::new(
        SigHandler::Handler(record),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in ENDING {
        // SAFETY: `record` only touches atomics, which is async-signal-safe.
        let _ = unsafe { sigaction(sig, &action) };
    }
}

/// The signal [`record`] kept, taken once. Recording stops first: a signal after that
/// reaches the caller's own handlers (one in the few instructions between is lost;
/// the other order would deliver it twice, and a second SIGTERM ends a session at once).
fn take_early() -> Option<Signal> {
    RECORDING.store(false, Ordering::SeqCst);
    Signal::try_from(EARLY.swap(0, Ordering::SeqCst)).ok()
}

/// Handlers for a set of signals, installed by [`Signals::new`]; read with
/// [`Signals::next`].
pub(crate) struct Signals {
    watched: Vec<(Signal, tokio::signal::unix::Signal)>,
    /// One that arrived before any handler but [`record`] (PID 1 only).
    early: Option<Signal>,
}

impl Signals {
    /// Installs the handlers now: from here on these signals never take their default
    /// action. One that cannot be installed is left out.
    pub(crate) fn new(which: &[Signal]) -> Signals {
        let early = take_early().filter(|s| which.contains(s));
        Signals {
            watched: which
                .iter()
                .filter_map(|&s| Some((s, signal(SignalKind::from_raw(s as i32)).ok()?)))
                .collect(),
            early,
        }
    }

    /// From now on `sig` is caught and not seen. tokio never uninstalls a handler it
    /// installed, so it is never the default action either.
    pub(crate) fn stop_watching(&mut self, sig: Signal) {
        self.watched.retain(|(s, _)| *s != sig);
    }

    /// The next signal to arrive; never, when none is watched.
    pub(crate) async fn next(&mut self) -> Signal {
        if let Some(sig) = self.early.take() {
            return sig;
        }
        if self.watched.is_empty() {
            return std::future::pending().await;
        }
        let waits = self
            .watched
            .iter_mut()
            .map(|(sig, stream)| stream.recv().map(|_| *sig).boxed());
        select_all(waits).await.0
    }
}

/// The exit status of a process ended by `sig`: 128 + its number.
pub(crate) fn exit_code(sig: Signal) -> i32 {
    crate::exit::signalled(sig as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_watched_signal_arrives_by_name_and_an_unwatched_one_is_caught() {
        let mut signals = Signals::new(&[Signal::SIGUSR1, Signal::SIGUSR2]);
        signals.stop_watching(Signal::SIGUSR2);
        let me = nix::unistd::Pid::this();
        // SIGUSR2's handler stays installed: without it this would end the test binary.
        nix::sys::signal::kill(me, Signal::SIGUSR2).unwrap();
        nix::sys::signal::kill(me, Signal::SIGUSR1).unwrap();
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), signals.next())
            .await
            .expect("SIGUSR1 arrives");
        assert_eq!(got, Signal::SIGUSR1);
        assert_eq!(exit_code(Signal::SIGTERM), 143);
    }
}
