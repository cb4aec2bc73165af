//! The loop: call the model, run the tools it asks for, repeat, until it answers or
//! `inference.max_turns` turns have gone by.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{
    BoxFuture, Conversation, Message, Outcome, Reply, Tool, ToolCall, ToolOutput, Transport,
};
use crate::trace::{Event, ReplyKind, TraceWriter};

/// What one task's agent is made of.
pub struct AgentSpec {
    /// The A2A task id; named by every trace record the loop writes.
    pub task_id: crate::a2a::TaskId,
    /// See [`super::system_prompt`].
    pub system: String,
    /// `inference.max_turns`: how many turns each [`Agent::send`] may take.
    pub max_turns: u32,
    pub tools: Vec<Arc<dyn Tool>>,
    pub transport: Box<dyn Transport>,
    /// Where inference_turn, tool_call and tool_result records go.
    pub trace: Option<Arc<TraceWriter>>,
}

/// What the loop asks when the model's turn ends with an answer while an
/// Whether a task with `max_turns` turns can ever wait for its calls' answers: it
/// calls on one turn (which does not answer) and answers on a later one that is not
/// its last, so it needs three. Admission's wait cycles and the wait chain a call
/// carries both follow this (docs/design/call-member.md, Wait cycles).
pub fn waits_for_answers(max_turns: u32) -> bool {
    max_turns >= 3
}

/// `inference.max_turns` turn is still left: call-member's answers
/// ([`crate::call_member::Calls`] implements it). Attached with [`Agent::with_turn_end`].
pub trait TurnEnd: Send + Sync {
    /// Waits for every answer still owed to the task and returns the message the task
    /// continues with (all of them, fenced), or `None` when nothing is owed: then the
    /// task ends with the model's answer. Returns `None` at once when `cancel` fires.
    fn continuation<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, Option<String>>;
    /// The task ended (`canceled`: by cancellation). Called once, before the transport
    /// is shut down.
    fn task_ended(&self, canceled: bool) -> BoxFuture<'_, ()>;
}

/// One task's agent. Lives until the task ends: a task that asks for input keeps it
/// (and its harness process) to carry on with the answer.
pub struct Agent {
    spec: AgentSpec,
    conversation: Conversation,
    ended: bool,
    turn_end: Option<Arc<dyn TurnEnd>>,
    /// `inference.parallel_tools`.
    parallel_tools: usize,
}

/// The most of one tool result the trace records and the model sees; past it the
/// result is cut and says so (docs/trace.md).
pub const RESULT_LIMIT: usize = 64 << 10;

impl Agent {
    pub fn new(mut spec: AgentSpec) -> Self {
        if let Some(trace) = &spec.trace {
            spec.transport.set_trace(trace.clone());
        }
        let conversation = Conversation {
            task_id: spec.task_id.clone(),
            system: spec.system.clone(),
            tools: spec.tools.iter().map(|t| t.spec()).collect(),
            messages: Vec::new(),
        };
        Agent {
            spec,
            conversation,
            ended: false,
            turn_end: None,
            parallel_tools: crate::manifest::PARALLEL_TOOLS as usize,
        }
    }

    /// Runs at most `n` (at least 1) of a turn's tool calls at once
    /// (`inference.parallel_tools`).
    pub fn with_parallel_tools(mut self, n: u32) -> Self {
        self.parallel_tools = n.max(1) as usize;
        self
    }

    /// Has the task wait for call-member's answers at the end of a turn, as the spec's
    /// "How the answer arrives" says (see docs/design/call-member.md).
    pub fn with_turn_end(mut self, turn_end: Arc<dyn TurnEnd>) -> Self {
        self.turn_end = Some(turn_end);
        self
    }

    /// Hands the model's partial output to `progress` as the transport streams it
    /// (`transport: http` with `stream: true`).
    pub fn with_progress(mut self, progress: super::Progress) -> Self {
        self.spec.transport.set_progress(progress);
        self
    }

    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// Gives the agent the task, or the answer to the question its last
    /// `InputRequired` asked, and runs it until the next outcome. When the outcome
    /// is terminal the transport is shut down (a harness process is gone when this
    /// returns), and later sends fail.
    pub async fn send(&mut self, text: &str, cancel: &CancellationToken) -> Outcome {
        if self.ended {
            return Outcome::Failed {
                reason: "the task has already ended".to_string(),
            };
        }
        self.conversation.messages.push(Message::User {
            text: text.to_string(),
        });
        let outcome = self.turns(cancel).await;
        if outcome.is_terminal() {
            self.ended = true;
            if let Some(hook) = &self.turn_end {
                hook.task_ended(matches!(outcome, Outcome::Canceled)).await;
            }
            self.spec.transport.shutdown().await;
        }
        outcome
    }

    /// Ends the task without another turn: for a task canceled while it waits for
    /// input. Shuts the transport down (the harness is gone when this returns); later
    /// sends fail. Harmless on an ended task.
    pub async fn close(&mut self) {
        if !self.ended {
            self.ended = true;
            if let Some(hook) = &self.turn_end {
                hook.task_ended(true).await;
            }
            self.spec.transport.shutdown().await;
        }
    }

    /// Whether the task has ended (a terminal outcome, or [`Agent::close`]).
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    async fn turns(&mut self, cancel: &CancellationToken) -> Outcome {
        let max = self.spec.max_turns;
        if max == 0 {
            return Outcome::Failed {
                reason: "inference.max_turns is 0: the model may not take a single turn"
                    .to_string(),
            };
        }
        for turn in 1..=max {
            let reply = tokio::select! {
                biased;
                () = cancel.cancelled() => return Outcome::Canceled,
                r = self.spec.transport.turn(&self.conversation) => r,
            };
            let reply = match reply {
                Ok(r) => r,
                Err(reason) => {
                    return Outcome::Failed {
                        reason: format!("transport {}: {reason}", self.spec.transport.name()),
                    };
                }
            };
            self.record_turn(turn, &reply);
            match reply {
                Reply::ToolCalls { text, calls } if calls.is_empty() => {
                    let outcome = self.answer(text, Vec::new());
                    match self.continue_with(turn, cancel).await {
                        Continue::No => return outcome,
                        Continue::Canceled => return Outcome::Canceled,
                        Continue::Yes => {}
                    }
                }
                Reply::ToolCalls { text, mut calls } => {
                    for (i, call) in calls.iter_mut().enumerate() {
                        if call.id.is_empty() {
                            call.id = format!("call_{turn}_{}", i + 1);
                        }
                    }
                    self.conversation.messages.push(Message::Assistant {
                        text,
                        tool_calls: calls.clone(),
                    });
                    if turn == max {
                        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
                        return Outcome::Failed {
                            reason: format!(
                                "inference.max_turns ({max}) reached: the model still asked \
                                 for tools ({}) on its last turn, and they were not run",
                                names.join(", ")
                            ),
                        };
                    }
                    for call in &calls {
                        self.record(Event::ToolCall {
                            task_id: self.spec.task_id.clone(),
                            turn,
                            call_id: call.id.clone(),
                            tool: call.name.clone(),
                            arguments: call.arguments.clone(),
                        });
                    }
                    let outputs = tokio::select! {
                        biased;
                        () = cancel.cancelled() => return Outcome::Canceled,
                        o = run_tools(&self.spec.tools, &calls, self.parallel_tools) => o,
                    };
                    for (call, (mut out, took)) in calls.into_iter().zip(outputs) {
                        out.output = bound_result(out.output);
                        self.record(Event::ToolResult {
                            task_id: self.spec.task_id.clone(),
                            call_id: call.id.clone(),
                            tool: call.name.clone(),
                            is_error: out.is_error,
                            output: out.output.clone(),
                            duration_ms: took.as_millis() as u64,
                        });
                        self.conversation.messages.push(Message::Tool {
                            call_id: call.id,
                            name: call.name,
                            output: out.output,
                            is_error: out.is_error,
                        });
                    }
                }
                Reply::Answer { text, artifacts } => {
                    let outcome = self.answer(text, artifacts);
                    match self.continue_with(turn, cancel).await {
                        Continue::No => return outcome,
                        Continue::Canceled => return Outcome::Canceled,
                        Continue::Yes => {}
                    }
                }
                Reply::InputRequired { question } => {
                    self.conversation.messages.push(Message::Assistant {
                        text: Some(question.clone()),
                        tool_calls: Vec::new(),
                    });
                    return Outcome::InputRequired { question };
                }
                Reply::Rejected { reason } => return Outcome::Rejected { reason },
                Reply::Failed { reason } => return Outcome::Failed { reason },
            }
        }
        // The last turn returns on every path; this only keeps the loop total.
        Outcome::Failed {
            reason: format!("inference.max_turns ({max}) reached without an answer"),
        }
    }

    /// At the end of a turn that answered: with a turn still left, waits for the
    /// answers owed to the task and, when there are any, adds them as the next message.
    /// With no turn left the task does not wait.
    async fn continue_with(&mut self, turn: u32, cancel: &CancellationToken) -> Continue {
        let Some(hook) = self.turn_end.clone() else {
            return Continue::No;
        };
        if turn >= self.spec.max_turns {
            return Continue::No;
        }
        let more = hook.continuation(cancel).await;
        if cancel.is_cancelled() {
            return Continue::Canceled;
        }
        match more {
            Some(text) => {
                self.conversation.messages.push(Message::User { text });
                Continue::Yes
            }
            None => Continue::No,
        }
    }

    fn answer(&mut self, text: Option<String>, artifacts: Vec<super::Artifact>) -> Outcome {
        self.conversation.messages.push(Message::Assistant {
            text: text.clone(),
            tool_calls: Vec::new(),
        });
        Outcome::Completed {
            message: text,
            artifacts,
        }
    }

    fn record_turn(&self, turn: u32, reply: &Reply) {
        let (kind, names, text) = match reply {
            Reply::ToolCalls { text, calls } => (
                ReplyKind::ToolCalls,
                calls.iter().map(|c| c.name.clone()).collect(),
                text.clone(),
            ),
            Reply::Answer { text, .. } => (ReplyKind::Answer, Vec::new(), text.clone()),
            Reply::InputRequired { question } => {
                (ReplyKind::InputRequired, Vec::new(), Some(question.clone()))
            }
            Reply::Rejected { reason } => (ReplyKind::Rejected, Vec::new(), Some(reason.clone())),
            Reply::Failed { reason } => (ReplyKind::Failed, Vec::new(), Some(reason.clone())),
        };
        self.record(Event::InferenceTurn {
            task_id: self.spec.task_id.clone(),
            turn,
            transport: self.spec.transport.name().to_string(),
            reply: kind,
            tool_calls: names,
            text,
        });
    }

    /// A trace that cannot take a record must not stop the task: say so and go on.
    fn record(&self, event: Event) {
        if let Some(trace) = &self.spec.trace {
            trace.record(event);
        }
    }
}

enum Continue {
    Yes,
    No,
    Canceled,
}

/// `output` when it fits [`RESULT_LIMIT`]; else its first [`RESULT_LIMIT`] bytes (at
/// a character boundary) and a line saying how much was cut.
pub(super) fn bound_result(mut output: String) -> String {
    if output.len() <= RESULT_LIMIT {
        return output;
    }
    let total = output.len();
    output.truncate(output.floor_char_boundary(RESULT_LIMIT));
    let kept = output.len();
    output.push_str(&format!(
        "\n[mur: tool result cut to its first {kept} of {total} bytes \
         ({} bytes left out); the limit is {RESULT_LIMIT} bytes]",
        total - kept
    ));
    output
}

/// Runs one turn's calls side by side, `parallel` at a time (call-member calls to
/// several members then work at once, while a turn of many calls holds only that many
/// instances); outputs come back in the calls' order, each with how long it took.
async fn run_tools(
    tools: &[Arc<dyn Tool>],
    calls: &[ToolCall],
    parallel: usize,
) -> Vec<(ToolOutput, std::time::Duration)> {
    use futures_util::StreamExt;
    // Boxed, so the stream's futures are one named type (a stream of closures' futures
    // trips the compiler's Send check for the spawned task).
    let runs = calls
        .iter()
        .map(|call| -> BoxFuture<'_, (ToolOutput, std::time::Duration)> {
            Box::pin(async move {
                let started = std::time::Instant::now();
                let out = match tools.iter().find(|t| t.name() == call.name) {
                    Some(tool) => tool.call(call).await,
                    None => {
                        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
                        ToolOutput::error(format!(
                            "there is no tool named `{}`; the tools are: {}",
                            call.name,
                            if names.is_empty() {
                                "none".to_string()
                            } else {
                                names.join(", ")
                            }
                        ))
                    }
                };
                (out, started.elapsed())
            })
        });
    let runs: Vec<_> = runs.collect();
    futures_util::stream::iter(runs)
        .buffered(parallel)
        .collect()
        .await
}
