//! The exit-code contract of `mur run` (a launcher, or a single session): what each
//! exit status means, and what a Kubernetes Job's `podFailurePolicy` does with it.
//! docs/run.md's table "The exit-code contract" is this table, held equal by a test,
//! and `mur kube job` writes its rules from it.

/// Everything ended as it should: the task completed (or the formation was wound down).
pub const SUCCESS: i32 = 0;
/// A diagnostic, a failed task, a refusal: anything mur reports with a code on stderr.
pub const FAILED: i32 = 1;
/// clap's usage error: the command line itself is wrong.
pub const USAGE: i32 = 2;

/// The status of a process ended by signal `sig` (or a launcher that reports one): 128 + its number.
pub const fn signalled(sig: i32) -> i32 {
    128 + sig
}

/// The exit status, or the range of them, one row stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Is(i32),
    /// 128 + the signal's number (143 SIGTERM, 130 SIGINT, 129 SIGHUP, 137 SIGKILL).
    Signal,
    /// Whatever it is: the row is told by a pod condition, not a code.
    Any,
}

impl Code {
    /// As the docs table writes it.
    pub fn text(self) -> String {
        match self {
            Code::Is(c) => c.to_string(),
            Code::Signal => "128 + N".to_string(),
            Code::Any => "any".to_string(),
        }
    }
}

/// What a Job's `podFailurePolicy` does with a pod that ended so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodAction {
    /// Exit 0: the pod succeeded; no rule applies.
    Succeeded,
    /// Counts toward `backoffLimit` (`backoffLimitPerIndex`): a retry may help.
    Count,
    /// Fails the whole Job at once: every retry would end the same.
    FailJob,
    /// Never counted (a `DisruptionTarget` pod condition).
    Ignore,
}

impl PodAction {
    pub fn text(self) -> &'static str {
        match self {
            PodAction::Succeeded => "none (the pod succeeded)",
            PodAction::Count => "Count",
            PodAction::FailJob => "FailJob",
            PodAction::Ignore => "Ignore",
        }
    }
}

/// One row of the contract.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// Why `mur run` ended.
    pub why: &'static str,
    pub code: Code,
    /// The codes printed on stderr, or "—".
    pub printed: &'static str,
    pub action: PodAction,
}

/// The contract, in the order docs/run.md lists it.
pub const CONTRACT: &[Row] = &[
    Row {
        why: "The entry member's task completed",
        code: Code::Is(SUCCESS),
        printed: "—",
        action: PodAction::Succeeded,
    },
    Row {
        why: "SIGTERM, SIGINT or SIGHUP after the entry member started, every member wound down in time",
        code: Code::Is(SUCCESS),
        printed: "—",
        action: PodAction::Succeeded,
    },
    Row {
        why: "The task failed, was rejected or canceled",
        code: Code::Is(FAILED),
        printed: "—",
        action: PodAction::Count,
    },
    Row {
        why: "Admission refused the roster",
        code: Code::Is(FAILED),
        printed: "`E-ROS-*`, `E-LCK-*`, `E-REG-*`, `E-MAN-*`, `E-RUN-046`, …",
        action: PodAction::Count,
    },
    Row {
        why: "Launch refused: a peer did not come up",
        code: Code::Is(FAILED),
        printed: "`E-RUN-045`",
        action: PodAction::Count,
    },
    Row {
        why: "The formation's `--deadline` fell",
        code: Code::Is(FAILED),
        printed: "`E-RUN-053`",
        action: PodAction::Count,
    },
    Row {
        why: "The command line is wrong",
        code: Code::Is(USAGE),
        printed: "clap's usage error",
        action: PodAction::FailJob,
    },
    Row {
        why: "Signal N before the entry member started; the entry member killed by N (137: the OOM killer); its 20 s wind-down ran out (143)",
        code: Code::Signal,
        printed: "—",
        action: PodAction::Count,
    },
    Row {
        why: "The pod was disrupted (preemption, eviction, node drain): a `DisruptionTarget` condition",
        code: Code::Any,
        printed: "—",
        action: PodAction::Ignore,
    },
];

/// The exit codes a `podFailurePolicy` rule fails the Job on: the rows whose every
/// retry ends the same.
pub fn fail_job_codes() -> Vec<i32> {
    let mut codes: Vec<i32> = CONTRACT
        .iter()
        .filter(|r| r.action == PodAction::FailJob)
        .filter_map(|r| match r.code {
            Code::Is(c) => Some(c),
            Code::Signal | Code::Any => None,
        })
        .collect();
    codes.sort_unstable();
    codes.dedup();
    codes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_exit_code_is_both_counted_and_failing_the_job() {
        // podFailurePolicy takes the first rule that matches: one code, one action.
        for code in fail_job_codes() {
            assert!(
                CONTRACT
                    .iter()
                    .filter(|r| r.code == Code::Is(code))
                    .all(|r| r.action == PodAction::FailJob),
                "{code}"
            );
        }
        assert_eq!(fail_job_codes(), vec![USAGE]);
        assert_eq!(signalled(15), 143);
    }
}
