//! The lifecycle in force: the manifest's `lifecycle`, with `mur run`'s flags laid
//! over it.

use std::time::Duration;

use super::{AcceptanceFlag, AfterTaskFlag, IdleTimeout, RunArgs};
use crate::{door, manifest};

/// The lifecycle in force: the manifest's, with the flags laid over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LifecycleInForce {
    pub acceptance: door::Acceptance,
    pub exit_after_task: bool,
    pub idle_timeout: Option<Duration>,
}

impl LifecycleInForce {
    pub(crate) fn of(m: &manifest::Lifecycle, args: &RunArgs) -> LifecycleInForce {
        let queue = match args.lifecycle_task_acceptance {
            Some(a) => a == AcceptanceFlag::Queue,
            None => m.task_acceptance == manifest::TaskAcceptance::Queue,
        };
        // `--task` runs one task: the session ends after it unless the flag says sleep.
        let exit_after_task = match args.lifecycle_after_task {
            Some(a) => a == AfterTaskFlag::Exit,
            None => args.task.is_some() || m.after_task == manifest::AfterTask::Exit,
        };
        let idle = match args.lifecycle_idle_timeout {
            Some(IdleTimeout::None) => None,
            Some(IdleTimeout::Seconds(s)) => Some(s),
            None => m.idle_timeout,
        };
        LifecycleInForce {
            acceptance: if queue {
                door::Acceptance::Queue {
                    depth: m.queue_depth,
                }
            } else {
                door::Acceptance::Single
            },
            exit_after_task,
            idle_timeout: idle.map(Duration::from_secs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn lifecycle(manifest: manifest::Lifecycle, flags: &[&str]) -> LifecycleInForce {
        let cli = Cli::parse_from(std::iter::once("run").chain(flags.iter().copied()));
        LifecycleInForce::of(&manifest, &cli.run)
    }

    fn queue(depth: u32) -> manifest::Lifecycle {
        manifest::Lifecycle {
            task_acceptance: manifest::TaskAcceptance::Queue,
            after_task: manifest::AfterTask::Sleep,
            queue_depth: depth,
            idle_timeout: Some(60),
        }
    }

    #[test]
    fn flags_override_the_manifest() {
        let l = lifecycle(queue(2), &[]);
        assert_eq!(l.acceptance, door::Acceptance::Queue { depth: 2 });
        assert!(!l.exit_after_task);
        assert_eq!(l.idle_timeout, Some(Duration::from_secs(60)));
        let l = lifecycle(
            queue(2),
            &[
                "--lifecycle-task-acceptance",
                "single",
                "--lifecycle-after-task",
                "exit",
                "--lifecycle-idle-timeout",
                "none",
            ],
        );
        assert_eq!(l.acceptance, door::Acceptance::Single);
        assert!(l.exit_after_task);
        assert_eq!(l.idle_timeout, None);
        let l = lifecycle(
            manifest::Lifecycle::default(),
            &[
                "--lifecycle-task-acceptance",
                "queue",
                "--lifecycle-idle-timeout",
                "5",
            ],
        );
        assert_eq!(l.acceptance, door::Acceptance::Queue { depth: 0 });
        assert_eq!(l.idle_timeout, Some(Duration::from_secs(5)));
    }

    #[test]
    fn a_task_ends_the_session_unless_the_flag_says_sleep() {
        assert!(lifecycle(queue(0), &["--task", "x"]).exit_after_task);
        assert!(
            !lifecycle(
                queue(0),
                &["--task", "x", "--lifecycle-after-task", "sleep"]
            )
            .exit_after_task
        );
    }
}
