//! How a session ends, as the spec's tables give it: what begins the end, what the
//! session exits with, and the two ends that skip the wind-down (a second SIGTERM,
//! and 20 seconds after the lifeline closed).

use std::time::Duration;

use crate::catalogue::{self, Code};
use crate::door::cancel_reason;
use crate::running::RunningDir;
use crate::signals::Signal;
use crate::trace::{ExitStatus, RecordedState};

/// What began the session's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// A first SIGTERM or SIGINT (`by`), or the operator's murmur.StopSession (as a
    /// SIGTERM).
    Sigterm { busy: bool, by: Signal },
    /// The lifeline read end of file: the formation ended.
    Lifeline { busy: bool },
    /// `--deadline` or the formation's deadline fell.
    Deadline,
    /// `lifecycle.idle_timeout` passed with no task.
    IdleTimeout,
    /// `after_task: exit`: the task ended in `state`.
    AfterTask(RecordedState),
}

/// What the session exits with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exit {
    pub status: ExitStatus,
    pub code: i32,
    pub error: Option<Code>,
}

impl Cause {
    /// The spec's tables: how each end is reported.
    pub(crate) fn exit(self) -> Exit {
        let exit = |status, code, error| Exit {
            status,
            code,
            error,
        };
        match self {
            Cause::Sigterm { busy: true, .. } => {
                exit(ExitStatus::Canceled, 1, Some(catalogue::E_RUN_040))
            }
            Cause::Sigterm { busy: false, .. } | Cause::Lifeline { busy: false } => {
                exit(ExitStatus::Ok, 0, None)
            }
            Cause::Lifeline { busy: true } => exit(ExitStatus::FormationEnded, 0, None),
            Cause::Deadline => exit(ExitStatus::DeadlineReached, 1, Some(catalogue::E_RUN_053)),
            Cause::IdleTimeout => exit(ExitStatus::Ok, 0, None),
            Cause::AfterTask(RecordedState::Completed) => exit(ExitStatus::Ok, 0, None),
            Cause::AfterTask(RecordedState::Canceled) => exit(ExitStatus::Canceled, 1, None),
            Cause::AfterTask(_) => exit(ExitStatus::Failed, 1, None),
        }
    }

    /// The `canceled:` reason of a task this end cancels.
    pub(crate) fn cancel_reason(self) -> &'static str {
        match self {
            Cause::Sigterm {
                by: Signal::SIGINT, ..
            } => cancel_reason::SIGINT,
            Cause::Sigterm { .. } => cancel_reason::SIGTERM,
            Cause::Lifeline { .. } => cancel_reason::FORMATION_ENDED,
            Cause::Deadline => cancel_reason::DEADLINE,
            Cause::IdleTimeout | Cause::AfterTask(_) => "the session ended",
        }
    }

    /// A SIGTERM during this wind-down: ignored after the lifeline closed (the
    /// wind-down is under way), otherwise it is a second SIGTERM and exits 143.
    pub(crate) fn sigterm_exits_at_once(self) -> bool {
        !matches!(self, Cause::Lifeline { .. })
    }
}

/// The `status:` word of an exit status, as `session_end.exit_status` writes it.
pub(crate) fn status_word(status: ExitStatus) -> &'static str {
    match status {
        ExitStatus::Ok => "ok",
        ExitStatus::FormationEnded => "formation_ended",
        ExitStatus::DeadlineReached => "deadline_reached",
        ExitStatus::Canceled => "canceled",
        ExitStatus::Failed => "failed",
    }
}

/// The signals a session watches: each is a SIGTERM to it. A formation member stops
/// watching SIGINT (`Signals::stop_watching`): it leaves the terminal's Ctrl-C to its
/// launcher, which closes its lifeline.
pub(crate) const SIGNALS: [Signal; 2] = [Signal::SIGTERM, Signal::SIGINT];

/// Which end exits the process, once: [`exit_now`] or a wind-down that finished
/// ([`claim_exit`]). Without it, the harness that `exit_now`'s sweep kills unblocks a
/// teardown that could then exit 0 while the sweep still waits for the harness to be
/// reaped.
static EXIT_CLAIMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn claim() -> bool {
    !EXIT_CLAIMED.swap(true, std::sync::atomic::Ordering::SeqCst)
}

/// Called by a wind-down that has finished, before it returns its exit code: false
/// when [`exit_now`] already runs, whose 143 the caller must then leave to it.
pub(crate) fn claim_exit() -> bool {
    claim()
}

/// Exits with 143 now, wherever the session is: forgets its running record first
/// (two file removals), kills every descendant, and runs no destructor that could
/// block. After a wind-down that finished first it does nothing: its exit follows.
// nix 0.32 has no `_exit`, and `std::process::exit` would run exit handlers while
// the runtime's threads still run.
#[allow(unsafe_code, reason = "_exit, which no safe wrapper at hand offers")]
pub(crate) fn exit_now(running: &RunningDir, session_id: &str) -> ! {
    if !claim() {
        loop {
            std::thread::park();
        }
    }
    // Before the sweep ends the harness and the teardown on the runtime goes on.
    crate::trace::stop_writing();
    let _ = running.remove(session_id);
    // Nothing the session started outlives it (docs/design/descendants.md).
    crate::descendants::sweep_all();
    // SAFETY: _exit has no preconditions; nothing after it runs.
    unsafe { libc::_exit(143) }
}

/// Arms the lifeline's last resort: `after` (20 s, scaled) from now the process exits
/// with 143 wherever its teardown is. A thread of its own, so a blocked runtime
/// cannot hold it up.
pub(crate) fn arm_wind_down_limit(after: Duration, running: RunningDir, session_id: String) {
    let _ = std::thread::Builder::new()
        .name("wind-down-limit".into())
        .spawn(move || {
            std::thread::sleep(after);
            exit_now(&running, &session_id);
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    // One case per row of the spec's tables ("How a formation ends", and the ends of a
    // session in docs/trace.md).
    #[rstest]
    #[case::sigterm_running(Cause::Sigterm { busy: true, by: Signal::SIGTERM }, ExitStatus::Canceled, 1, Some("E-RUN-040"))]
    #[case::sigint_running(Cause::Sigterm { busy: true, by: Signal::SIGINT }, ExitStatus::Canceled, 1, Some("E-RUN-040"))]
    #[case::sigterm_idle(Cause::Sigterm { busy: false, by: Signal::SIGTERM }, ExitStatus::Ok, 0, None)]
    #[case::lifeline_running(Cause::Lifeline { busy: true }, ExitStatus::FormationEnded, 0, None)]
    #[case::lifeline_idle(Cause::Lifeline { busy: false }, ExitStatus::Ok, 0, None)]
    #[case::deadline(Cause::Deadline, ExitStatus::DeadlineReached, 1, Some("E-RUN-053"))]
    #[case::idle_timeout(Cause::IdleTimeout, ExitStatus::Ok, 0, None)]
    #[case::after_task_completed(
        Cause::AfterTask(RecordedState::Completed),
        ExitStatus::Ok,
        0,
        None
    )]
    #[case::after_task_failed(Cause::AfterTask(RecordedState::Failed), ExitStatus::Failed, 1, None)]
    fn ends_exit_as_the_tables_say(
        #[case] cause: Cause,
        #[case] status: ExitStatus,
        #[case] code: i32,
        #[case] error: Option<&str>,
    ) {
        let exit = cause.exit();
        assert_eq!(exit.status, status);
        assert_eq!(exit.code, code);
        assert_eq!(exit.error.map(|c| c.as_str()), error);
    }

    #[test]
    fn a_sigterm_after_the_lifeline_closed_changes_nothing() {
        assert!(!Cause::Lifeline { busy: true }.sigterm_exits_at_once());
        assert!(
            Cause::Sigterm {
                busy: true,
                by: Signal::SIGTERM
            }
            .sigterm_exits_at_once()
        );
    }

    #[test]
    fn a_ctrl_c_is_named_sigint() {
        let by = |by| Cause::Sigterm { busy: true, by }.cancel_reason();
        assert_eq!(by(Signal::SIGINT), "SIGINT (E-RUN-040)");
        assert_eq!(by(Signal::SIGTERM), "SIGTERM (E-RUN-040)");
    }
}
