//! The agent: the loop that runs one task through a transport (the model) and the
//! tools it asks for, until it answers, asks for input, gives up or runs out of
//! `inference.max_turns`. Independent of the door: it takes plain data in and hands
//! an [`Outcome`] back. docs/agent.md describes the transports and the loop.
//!
//! ```text
//! Agent::new(spec) ── send(task) ──> transport.turn(conversation) ──> Reply
//!                                        ^                              │ tool calls
//!                                        └──── tool results <── tools <─┘
//! ```

mod artifact;
pub(crate) mod awaited;
pub mod builtin;
mod config;
pub mod http;
mod looping;
pub mod process;
pub mod prompt;

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

pub use artifact::{Artifact, FileContent, Part};
pub use config::{HttpConfig, ProcessConfig, TransportConfig, transport};
pub use looping::{Agent, AgentSpec, RESULT_LIMIT, TurnEnd, waits_for_answers};
pub use prompt::{PromptParts, system_prompt};

/// Where a streaming transport hands the model's text as it arrives: each piece, then
/// `("", true)` when the turn's stream ends (see [`Agent::with_progress`]).
pub type Progress = std::sync::Arc<dyn Fn(&str, bool) + Send + Sync>;

/// A boxed future, so the traits below stay object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The name of the runtime's tool that gives a task to another member of the formation.
pub const CALL_MEMBER: &str = "call-member";

/// The words before the callee list in call-member's description; the built-in model
/// reads its callees from there.
pub const CALLEES_LEAD: &str = "Members you may call:";

/// call-member's description, naming the members this one may call.
pub fn call_member_description(callees: &[crate::ids::MemberName]) -> String {
    format!(
        "Give a task to another member of your formation and get its answer. State the \
         task in full: the member sees nothing else of yours. {CALLEES_LEAD} {}.",
        callees.join(", ")
    )
}

/// call-member's arguments: `{"member": <name>, "task": <text>}`.
pub fn call_member_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "member": {"type": "string", "description": "The member's roster name."},
            "task": {"type": "string", "description": "The task, stated in full."}
        },
        "required": ["member", "task"],
        "additionalProperties": false
    })
}

/// One message of the conversation the transport sees. The system prompt is apart,
/// in [`Conversation::system`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The task, or a reply to the agent's question.
    User { text: String },
    /// The model's turn: what it said and the tools it asked for.
    Assistant {
        text: Option<String>,
        tool_calls: Vec<ToolCall>,
    },
    /// What one tool call returned.
    Tool {
        call_id: String,
        name: String,
        output: String,
        is_error: bool,
    },
}

/// A tool the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// What a tool hands back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub output: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(output: impl Into<String>) -> Self {
        ToolOutput {
            output: output.into(),
            is_error: false,
        }
    }
    pub fn error(output: impl Into<String>) -> Self {
        ToolOutput {
            output: output.into(),
            is_error: true,
        }
    }
}

/// How a tool is shown to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
}

/// A tool the agent may use: call-member, a WASM tool, the shell.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the arguments.
    fn input_schema(&self) -> serde_json::Value;
    /// Runs one call. Errors are outputs (`is_error`), for the model to read.
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            input_schema: self.input_schema(),
        }
    }
}

/// Everything the transport sees on a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub task_id: crate::a2a::TaskId,
    pub system: String,
    pub tools: Vec<ToolSpec>,
    pub messages: Vec<Message>,
}

impl Conversation {
    /// The latest user message: the task, or the latest reply to a question.
    pub fn last_user_text(&self) -> Option<&str> {
        self.messages.iter().rev().find_map(|m| match m {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        })
    }
}

/// How one turn of the model ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Run these tools and come back with their results.
    ToolCalls {
        text: Option<String>,
        calls: Vec<ToolCall>,
    },
    /// The task is done.
    Answer {
        text: Option<String>,
        artifacts: Vec<Artifact>,
    },
    /// The model needs an answer from whoever sent the task.
    InputRequired { question: String },
    /// The model will not do this task.
    Rejected { reason: String },
    /// The model could not do it.
    Failed { reason: String },
}

/// The model: one call is one inference turn.
pub trait Transport: Send {
    /// `builtin`, `http` or `process`, as the trace names it.
    fn name(&self) -> &'static str;
    /// One turn. `Err` is a transport fault (the harness died, the server refused):
    /// the task fails with that reason.
    fn turn<'a>(
        &'a mut self,
        conversation: &'a Conversation,
    ) -> BoxFuture<'a, Result<Reply, String>>;
    /// Where the transport may write records of its own (the http transport's
    /// `model_request`): the loop's trace, handed over when the agent is made.
    fn set_trace(&mut self, _trace: std::sync::Arc<crate::trace::TraceWriter>) {}
    /// Where the transport hands partial output as it streams; a transport that does
    /// not stream ignores it.
    fn set_progress(&mut self, _progress: Progress) {}
    /// Stops whatever the transport runs (a harness process) and waits until it is
    /// gone. Called when a task ends or is canceled; harmless when nothing runs.
    fn shutdown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// How a task ended, for the door to report.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Completed {
        message: Option<String>,
        artifacts: Vec<Artifact>,
    },
    /// The task waits for [`Agent::send`] with the answer.
    InputRequired {
        question: String,
    },
    Rejected {
        reason: String,
    },
    Failed {
        reason: String,
    },
    Canceled,
}

impl Outcome {
    /// Whether the task is over (everything but `InputRequired`).
    pub fn is_terminal(&self) -> bool {
        !matches!(self, Outcome::InputRequired { .. })
    }

    /// The task state this outcome puts the task in.
    pub fn state(&self) -> crate::trace::RecordedState {
        use crate::trace::RecordedState;
        match self {
            Outcome::Completed { .. } => RecordedState::Completed,
            Outcome::InputRequired { .. } => RecordedState::InputRequired,
            Outcome::Rejected { .. } => RecordedState::Rejected,
            Outcome::Failed { .. } => RecordedState::Failed,
            Outcome::Canceled => RecordedState::Canceled,
        }
    }
}

#[cfg(test)]
mod tests;
