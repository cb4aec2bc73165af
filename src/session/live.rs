//! A live session: its records, door and running record exist. The main loop runs
//! the tasks the door accepts one after another until something ends the session,
//! then winds it down as `ends` says.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::ends::{self, Cause};
use super::lifecycle::LifecycleInForce;
use super::task::{self, TaskEnv};
use crate::a2a::{self, Message, Role};
use crate::catalogue;
use crate::diag::Diagnostic;
use crate::door::{self, Credential, Door, Work, WorkReceiver};
use crate::running::RunningDir;
use crate::signals::{Signal, Signals};
use crate::trace::{Event, RecordedState, TraceWriter};
use crate::{output, timing};

/// A session whose records, door and running record exist.
pub(super) struct Live {
    pub(super) session_id: String,
    pub(super) trace: Arc<TraceWriter>,
    pub(super) door: Door,
    pub(super) work: WorkReceiver,
    pub(super) running: RunningDir,
    pub(super) env: Arc<TaskEnv>,
    pub(super) formation_id: Option<String>,
    /// `trace.retain`, applied to the project's sessions at the end.
    pub(super) retain: crate::manifest::Retain,
    /// How the `--task` task's end is reported on stdout.
    pub(super) report: Report,
    /// The `--task` task, until its end was reported.
    pub(super) first_task: Option<crate::a2a::TaskId>,
}

/// How the end of the `--task` task is reported on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Report {
    /// Its `out/result.txt`, as it is.
    Text,
    /// `--json`: one outcome line (`readiness::OutcomeLine`).
    Json,
}

/// How often a session reaps the orphans it killed (scaled in tests).
const STRAY_REAP: Duration = Duration::from_secs(5);

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What the main loop watches besides the door.
pub(super) struct Watch {
    pub(super) lifecycle: LifecycleInForce,
    pub(super) deadline: Option<Instant>,
    pub(super) lifeline: Option<std::os::fd::OwnedFd>,
    /// The operator's murmur.StopSession.
    pub(super) on_stop: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// `--task`, and `--trace-parent`: the span that asked for it.
    pub(super) task_text: Option<String>,
    pub(super) task_parent: Option<crate::trace::context::SpanContext>,
    pub(super) signals: Signals,
}

impl Live {
    /// Runs tasks until something ends the session; returns the exit status.
    pub(super) async fn main_loop(mut self, watch: Watch) -> i32 {
        let Watch {
            lifecycle,
            deadline,
            lifeline,
            mut on_stop,
            task_text,
            task_parent,
            mut signals,
        } = watch;
        let mut lifeline = lifeline.map(|fd| Box::pin(crate::lifeline::closed(fd)));
        let mut running: Option<JoinHandle<RecordedState>> = None;
        let mut idle_since = Instant::now();
        if let Some(text) = task_text {
            match self.submit(text, task_parent) {
                Ok(work) => {
                    self.first_task = Some(work.task_id.clone());
                    running = Some(tokio::spawn(task::run(self.env.clone(), work)));
                }
                Err(e) => output::stderr_line(format!("[mur run] error: {}", e.message)),
            }
        }
        // Orphans the session killed (a stopped harness's) are its to reap.
        let _strays = AbortOnDrop(crate::descendants::watch_strays(
            crate::timing::scaled(STRAY_REAP),
            None,
        ));
        let far = Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
        let store = self.door.store().clone();
        let cause = loop {
            let idle_at = match (&running, lifecycle.idle_timeout) {
                (None, Some(t)) => idle_since + t,
                _ => far,
            };
            // Busy means a task is live on the door, judged when the end arrives: a task
            // the door already reports ended is not running, even while its runner
            // still writes its last record.
            let busy = || store.live() > 0;
            tokio::select! {
                biased;
                by = signals.next() => break Cause::Sigterm { busy: busy(), by },
                Some(()) = on_stop.recv() => break Cause::Sigterm { busy: busy(), by: Signal::SIGTERM },
                _ = async { lifeline.as_mut().expect("guarded").await }, if lifeline.is_some() => {
                    lifeline = None;
                    break Cause::Lifeline { busy: busy() };
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {
                    break Cause::Deadline;
                }
                ended = async { running.as_mut().expect("guarded").await }, if running.is_some() => {
                    running = None;
                    idle_since = Instant::now();
                    let state = ended.unwrap_or(RecordedState::Failed);
                    self.report_first(state, true);
                    if lifecycle.exit_after_task {
                        break Cause::AfterTask(state);
                    }
                }
                work = self.work.next(), if running.is_none() => {
                    match work {
                        Some(work) => running = Some(tokio::spawn(task::run(self.env.clone(), work))),
                        None => break Cause::Sigterm { busy: false, by: Signal::SIGTERM },
                    }
                }
                _ = tokio::time::sleep_until(idle_at), if idle_at < far => break Cause::IdleTimeout,
            }
        };
        self.wind_down(cause, running, lifeline, &mut signals).await
    }

    /// The `--task` task: a task on the door, started by the operator.
    fn submit(
        &self,
        text: String,
        parent: Option<crate::trace::context::SpanContext>,
    ) -> std::result::Result<Work, a2a::RpcError> {
        let message = Message::text(Role::User, text);
        let created = self
            .door
            .store()
            .create(Credential::Operator, message.clone())?;
        let mut message = message;
        message.task_id = Some(created.snapshot.id.clone());
        message.context_id = Some(created.snapshot.context_id.clone());
        Ok(Work {
            task_id: created.snapshot.id.clone(),
            context_id: created.snapshot.context_id.clone(),
            message,
            caller: Credential::Operator,
            trust: door::trust::Trust::Trusted,
            span: crate::trace::context::TaskSpan::inbound(parent, true),
            chain: door::chain::CallChain::default(),
            cancel: created.handle.cancellation().clone(),
            handle: created.handle,
        })
    }

    /// Ends the session: formation_ended first when the lifeline closed, then every
    /// queued task refused, every live task canceled, session_end, the running record
    /// removed.
    async fn wind_down(
        mut self,
        cause: Cause,
        mut running: Option<JoinHandle<RecordedState>>,
        mut lifeline: Option<std::pin::Pin<Box<impl Future<Output = std::io::Result<()>>>>>,
        signals: &mut Signals,
    ) -> i32 {
        if let Cause::Lifeline { .. } = cause {
            if let Some(formation_id) = &self.formation_id {
                self.record(Event::FormationEnded {
                    formation_id: formation_id.clone(),
                });
            }
            ends::arm_wind_down_limit(
                timing::scaled(timing::WIND_DOWN_EXIT),
                self.running.clone(),
                self.session_id.clone(),
            );
        }
        let store = self.door.store().clone();
        store.close();
        while let Some(queued) = self.work.try_next() {
            let _ = queued
                .handle
                .reject("the session is ending and takes no more tasks");
            self.record(Event::TaskState {
                task_id: queued.task_id.clone(),
                from: Some(RecordedState::Submitted),
                to: RecordedState::Rejected,
                reason: Some("the session is ending".into()),
            });
        }
        store.cancel_all(cause.cancel_reason());
        // Wait for the task to wind down. A SIGTERM now is a second one (exit 143),
        // except after the lifeline closed; the lifeline closing now changes nothing.
        if let Some(task) = running.as_mut() {
            loop {
                tokio::select! {
                    ended = &mut *task => {
                        // Text mode prints a result only for a task that ended on its own.
                        self.report_first(ended.unwrap_or(RecordedState::Failed), false);
                        break;
                    }
                    _ = signals.next() => {
                        if cause.sigterm_exits_at_once() {
                            ends::exit_now(&self.running, &self.session_id);
                        }
                    }
                    _ = async { lifeline.as_mut().expect("guarded").await }, if lifeline.is_some() => {
                        lifeline = None;
                    }
                }
            }
        }
        // Nothing the session started outlives it: harnesses, shell commands and what
        // they started, setsid and double forks included (docs/design/descendants.md).
        let _ = tokio::task::spawn_blocking(crate::descendants::sweep_all).await;
        let exit = cause.exit();
        if let Some(code) = exit.error {
            let what = match cause {
                Cause::Deadline => "the session reached its deadline".to_string(),
                Cause::Sigterm { by, .. } => format!(
                    "the session received {} while a task ran; the task was canceled",
                    by.as_str()
                ),
                _ => "the session ended while a task ran; the task was canceled".to_string(),
            };
            output::stderr_line(Diagnostic::new(code, what));
        }
        if let Some(host) = self.env.components.clone() {
            // session_end hooks, then the asynchronous hooks still running: bounded by
            // timing::HOOK_DRAIN, inside the wind-down's 20 s.
            let record = serde_json::json!({"session_id": self.session_id,
                "exit_status": exit.status, "exit_code": exit.code});
            host.end(record).await;
        }
        self.record(Event::SessionEnd {
            exit_status: exit.status,
            exit_code: exit.code,
            error_code: exit.error.map(|c| c.as_str().to_string()),
            usage: None,
            otlp_dropped_spans: None,
        });
        // The records on disk before the session says it has ended.
        let env = self.env.clone();
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || env.flusher.flush()).await {
            output::stderr_line(Diagnostic::new(catalogue::E_REC_001, e));
        }
        let _ = self.running.remove(&self.session_id);
        // When ~/.murmur/running/ cannot be read every session counts as running:
        // nothing is removed.
        if let Ok(live) = self.running.list() {
            let live: Vec<String> = live.into_iter().map(|r| r.session_id).collect();
            for removed in crate::retention::sessions::pass(
                &self.env.records.dir,
                &self.retain,
                &live,
                SystemTime::now(),
            ) {
                output::stderr_line(removed.line());
            }
        }
        // Watchers have had every record, session_end included: the door lets their
        // streams drain before it closes.
        self.door.shutdown().await;
        if !ends::claim_exit() {
            // The wind-down limit fired meanwhile: its exit (143) is under way.
            std::future::pending::<()>().await;
        }
        output::stderr_line(format!("status: {}", ends::status_word(exit.status)));
        exit.code
    }

    fn record(&self, event: Event) {
        self.trace.record(event);
    }

    /// Reports the `--task` task's end on stdout, once: its result text, or with
    /// `--json` its outcome line. `on_its_own`: the task ended before any wind-down.
    fn report_first(&mut self, state: RecordedState, on_its_own: bool) {
        let Some(task_id) = self.first_task.take() else {
            return;
        };
        let text = std::fs::read_to_string(self.env.records.result_path()).unwrap_or_default();
        match self.report {
            Report::Text if on_its_own => match did_not_complete(state, &text) {
                Some(reason) => {
                    let d =
                        Diagnostic::new(catalogue::E_RUN_010, format!("task {task_id} {reason}"))
                            .hint(format!(
                                "`mur trace show {}` shows what the task did.",
                                self.session_id
                            ));
                    output::stderr_line(&d);
                }
                None => {
                    output::stdout_text(&text);
                }
            },
            Report::Text => {}
            Report::Json => {
                let line = crate::readiness::OutcomeLine::task(
                    &self.session_id,
                    task_id.as_str(),
                    state,
                    text,
                );
                if let Ok(json) = serde_json::to_string(&line) {
                    output::stdout_line(json);
                }
            }
        }
    }
}

/// For a task that ended failed, canceled or rejected, `<state>: <reason>` from its
/// result text (whose first line is just that, docs/records.md); `None` for an answer.
pub(crate) fn did_not_complete(state: RecordedState, result: &str) -> Option<String> {
    matches!(
        state,
        RecordedState::Failed | RecordedState::Canceled | RecordedState::Rejected
    )
    .then(|| result.trim_end().to_string())
}
