//! The process's own signals, as one stream of [`Signal`]s: the session (SIGTERM,
//! SIGINT) and the launcher (SIGINT, SIGTERM, SIGHUP) both take theirs from here.

use futures_util::future::{FutureExt, select_all};
pub(crate) use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};

/// Handlers for a set of signals, installed by [`Signals::new`]; read with
/// [`Signals::next`].
pub(crate) struct Signals {
    watched: Vec<(Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Installs the handlers now: from here on these signals never take their default
    /// action. One that cannot be installed is left out.
    pub(crate) fn new(which: &[Signal]) -> Signals {
        Signals {
            watched: which
                .iter()
                .filter_map(|&s| Some((s, signal(SignalKind::from_raw(s as i32)).ok()?)))
                .collect(),
        }
    }

    /// From now on `sig` is caught and not seen. tokio never uninstalls a handler it
    /// installed, so it is never the default action either.
    pub(crate) fn stop_watching(&mut self, sig: Signal) {
        self.watched.retain(|(s, _)| *s != sig);
    }

    /// The next signal to arrive; never, when none is watched.
    pub(crate) async fn next(&mut self) -> Signal {
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
    128 + sig as i32
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
