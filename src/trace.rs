//! A session's `trace.jsonl`: one JSON object per line, appended and flushed per
//! record, so a kill loses at most the record being written. Every record has `ts`
//! (RFC 3339 UTC, milliseconds), `seq` (from 1, no gaps) and `type`; docs/trace.md
//! describes every type and field.
//!
//! No credential is ever written: the writer refuses (E-REC-002) any record holding a
//! formation token (`mft1.…`) or a secret registered with [`TraceWriter::forbid`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::catalogue;
use crate::diag::{Diagnostic, Result};

/// The file name of a trace inside a records directory.
pub const FILE_NAME: &str = "trace.jsonl";

/// The prefix of a formation token; a string holding one is never written.
pub const TOKEN_PREFIX: &str = "mft1.";

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// When the record was written: RFC 3339, UTC, milliseconds (`2026-12-02T14:40:54.123Z`).
    pub ts: String,
    /// 1 for the first record of the trace, then one more for each record.
    pub seq: u64,
    #[serde(flatten)]
    pub event: Event,
}

/// What a record says. Serialized with its `type` beside its fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The first record of every session.
    SessionStart {
        session_id: String,
        capsule: CapsuleRef,
        /// The version of mur that ran the session.
        mur_version: String,
        pid: u32,
        /// The work folder (the agent's current directory).
        workdir: PathBuf,
        /// The records directory holding this trace.
        records_dir: PathBuf,
        /// In a formation only: its id, this member's roster name and the members it may call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        formation_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        formation_member: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        formation_callees: Option<Vec<String>>,
        /// How the user opted out of confining the capsule's native processes
        /// (`--unconfined` or `MURMUR_UNCONFINED=1`); absent when they were not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unconfined: Option<String>,
    },
    /// The door accepted a task.
    A2aTaskReceived {
        task_id: crate::a2a::TaskId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_id: Option<String>,
        /// Who sent it: `operator`, `env:<NAME>`, `member:<name>` or `public`.
        credential: String,
        /// The task's text, as the agent receives it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// The task's trust class, `trusted` or `untrusted` (docs/design/call-member.md,
        /// Trust); absent in traces written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trust: Option<String>,
        /// The task's span: its trace and its own id (docs/trace.md, Trace context).
        /// Absent in traces written before mur recorded them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trace_id: Option<context::TraceId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        span_id: Option<context::SpanId>,
        /// The span that asked for the task, from a trusted caller's `traceparent`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_span_id: Option<context::SpanId>,
        /// An untrusted caller's `traceparent`, kept as a span link.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        link: Option<context::SpanContext>,
    },
    /// The door refused a SendMessage because the member was busy (`-32050`); the
    /// caller's runtime offers the task again (docs/design/call-member.md, A busy member).
    /// A public caller's refusals are not recorded.
    A2aTaskRefused {
        /// Who was refused: `operator`, `env:<NAME>` or `member:<name>`.
        credential: String,
        /// Always `busy` for now.
        reason: String,
        /// How many tasks the member held: its running one and its queue.
        holds: u32,
    },
    /// A task moved from one state to another.
    TaskState {
        task_id: crate::a2a::TaskId,
        /// Absent for a task's first state.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<RecordedState>,
        to: RecordedState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// One call to the model (one transport turn).
    InferenceTurn {
        task_id: crate::a2a::TaskId,
        /// 1 for the first turn since the task's latest message.
        turn: u32,
        /// `builtin`, `http` or `process`.
        transport: String,
        /// How the turn ended.
        reply: ReplyKind,
        /// The names of the tools the model asked for, in its order.
        tool_calls: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// The agent runs a tool the model asked for.
    ToolCall {
        task_id: crate::a2a::TaskId,
        turn: u32,
        call_id: String,
        tool: String,
        arguments: serde_json::Value,
    },
    /// What a tool returned.
    ToolResult {
        task_id: crate::a2a::TaskId,
        call_id: String,
        tool: String,
        is_error: bool,
        output: String,
        /// How long the call took, hooks included.
        duration_ms: u64,
    },
    /// call-member, or a component's murmur:message/send, handed a task to another
    /// member of the formation.
    MemberCall {
        task_id: crate::a2a::TaskId,
        call_id: String,
        member: String,
        /// The task id the member's door gave the call, once it holds it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        member_task_id: Option<crate::a2a::TaskId>,
        text: String,
        /// The address a component's murmur:message/send named: the member's virtual
        /// address (`http://<member>.formation.invalid`), never its real door URL.
        /// Absent for the call-member tool's calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        peer_url: Option<String>,
        /// The call's client span, in the calling task's trace: the called task's
        /// `parent_span_id`. Absent in traces written before mur recorded it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        span_id: Option<context::SpanId>,
    },
    /// call-member offered a task to a member that was busy (`-32050`): one record per
    /// refused offer. The offer it takes is the `member_call` record.
    MemberOffer {
        task_id: crate::a2a::TaskId,
        call_id: String,
        member: String,
        /// 1 for the call itself, then one more for each offer the runtime repeats.
        offer: u32,
        /// Milliseconds until the next offer; absent when the call's deadline stops it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<u64>,
    },
    /// A called member's task ended, and its answer came back.
    MemberAnswer {
        task_id: crate::a2a::TaskId,
        call_id: String,
        member: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        member_task_id: Option<crate::a2a::TaskId>,
        /// The member task's final state.
        state: RecordedState,
        text: String,
    },
    /// The egress proxy decided on one request of the capsule's native tree
    /// (docs/confinement.md, Reading the proxy's records).
    ProxyDecision {
        /// `CONNECT`, or the forwarded request's method.
        method: String,
        host: String,
        port: u16,
        allowed: bool,
        /// The address connected to, or what refused the request.
        reason: String,
    },
    /// The member's lifeline closed: written first in its wind-down.
    FormationEnded { formation_id: String },
    /// One try of one `transport: http` turn: a turn that is retried has several.
    ModelRequest {
        task_id: crate::a2a::TaskId,
        /// 1 for the turn's first try.
        attempt: u32,
        /// How the try ended: `answered`, `retrying` or `failed`.
        result: AttemptResult,
        /// The answer's HTTP status, when one came.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// What went wrong, when something did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Milliseconds from sending to the answer (or the fault).
        elapsed_ms: u64,
        /// With `retrying`: milliseconds mur waits before the next try.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<u64>,
        /// With `answered`: the tokens the server counted (its `usage`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// The last record of a session that ended on its own terms.
    SessionEnd {
        exit_status: ExitStatus,
        exit_code: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_code: Option<String>,
        /// The sum of every `model_request`'s `usage` in this trace, when there was
        /// one; the writer fills it in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// With live export on: the spans the collector did not take (docs/trace.md,
        /// Live export); the writer fills it in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        otlp_dropped_spans: Option<u64>,
    },
}

/// How one `model_request` try ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptResult {
    Answered,
    Retrying,
    Failed,
}

/// Tokens a model server counted, as chat completions' `usage` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }
}

impl Event {
    /// The record's `type`, as written.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::SessionStart { .. } => "session_start",
            Event::A2aTaskReceived { .. } => "a2a_task_received",
            Event::A2aTaskRefused { .. } => "a2a_task_refused",
            Event::TaskState { .. } => "task_state",
            Event::InferenceTurn { .. } => "inference_turn",
            Event::ToolCall { .. } => "tool_call",
            Event::ToolResult { .. } => "tool_result",
            Event::MemberCall { .. } => "member_call",
            Event::MemberOffer { .. } => "member_offer",
            Event::MemberAnswer { .. } => "member_answer",
            Event::FormationEnded { .. } => "formation_ended",
            Event::ProxyDecision { .. } => "proxy_decision",
            Event::ModelRequest { .. } => "model_request",
            Event::SessionEnd { .. } => "session_end",
        }
    }
}

/// One line per record for people (`mur trace show`): time, seq, type and the fields
/// that matter, texts cut at 120 characters.
impl std::fmt::Display for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let time = self.ts.get(11..23).unwrap_or(&self.ts);
        write!(f, "{time} #{:<4} {:<17} ", self.seq, self.event.kind())?;
        match &self.event {
            Event::SessionStart {
                session_id,
                capsule,
                pid,
                formation_id,
                formation_member,
                ..
            } => {
                write!(
                    f,
                    "{session_id} {} {} pid {pid}",
                    capsule.name, capsule.version
                )?;
                if let (Some(frm), Some(member)) = (formation_id, formation_member) {
                    write!(f, " in {frm} as {member}")?;
                }
                Ok(())
            }
            Event::A2aTaskReceived {
                task_id,
                credential,
                text,
                trust,
                ..
            } => {
                write!(f, "{task_id} from {credential}")?;
                if let Some(trust) = trust {
                    write!(f, " ({trust})")?;
                }
                write!(f, ": {}", cut(text.as_deref().unwrap_or("")))
            }
            Event::A2aTaskRefused {
                credential,
                reason,
                holds,
            } => write!(f, "{credential} refused: {reason} (holds {holds})"),
            Event::ProxyDecision {
                method,
                host,
                port,
                allowed,
                reason,
            } => {
                let verdict = if *allowed { "allowed" } else { "refused" };
                write!(f, "{method} {host}:{port} {verdict}: {}", cut(reason))
            }
            Event::TaskState {
                task_id,
                from,
                to,
                reason,
            } => {
                let from = from.map_or("-".to_string(), |s| word(&s));
                write!(f, "{task_id} {from} -> {}", word(to))?;
                match reason {
                    Some(r) => write!(f, ": {}", cut(r)),
                    None => Ok(()),
                }
            }
            Event::InferenceTurn {
                task_id,
                turn,
                transport,
                reply,
                tool_calls,
                text,
            } => {
                write!(f, "{task_id} turn {turn} ({transport}) {}", word(reply))?;
                if !tool_calls.is_empty() {
                    write!(f, " [{}]", tool_calls.join(", "))?;
                }
                match text {
                    Some(t) => write!(f, ": {}", cut(t)),
                    None => Ok(()),
                }
            }
            Event::ToolCall {
                task_id,
                call_id,
                tool,
                arguments,
                ..
            } => write!(
                f,
                "{task_id} {call_id} {tool} {}",
                cut(&arguments.to_string())
            ),
            Event::ToolResult {
                task_id,
                call_id,
                tool,
                is_error,
                output,
                duration_ms,
            } => {
                let how = if *is_error { "error" } else { "ok" };
                write!(
                    f,
                    "{task_id} {call_id} {tool} {how} ({duration_ms} ms): {}",
                    cut(output)
                )
            }
            Event::MemberCall {
                task_id,
                member,
                text,
                ..
            } => write!(f, "{task_id} -> {member}: {}", cut(text)),
            Event::MemberOffer {
                task_id,
                member,
                offer,
                retry_in_ms,
                ..
            } => {
                write!(f, "{task_id} -> {member} busy (offer {offer})")?;
                match retry_in_ms {
                    Some(ms) => write!(f, ", again in {ms} ms"),
                    None => Ok(()),
                }
            }
            Event::MemberAnswer {
                task_id,
                member,
                state,
                text,
                ..
            } => write!(f, "{task_id} <- {member} {}: {}", word(state), cut(text)),
            Event::FormationEnded { formation_id } => write!(f, "{formation_id}"),
            Event::ModelRequest {
                task_id,
                attempt,
                result,
                status,
                error,
                elapsed_ms,
                retry_in_ms,
                usage,
            } => {
                write!(f, "{task_id} try {attempt} {}", word(result))?;
                if let Some(status) = status {
                    write!(f, " {status}")?;
                }
                write!(f, " in {elapsed_ms} ms")?;
                if let Some(ms) = retry_in_ms {
                    write!(f, ", again in {ms} ms")?;
                }
                if let Some(u) = usage {
                    write!(f, ", {} tokens", u.total_tokens)?;
                }
                match error {
                    Some(e) => write!(f, ": {}", cut(e)),
                    None => Ok(()),
                }
            }
            Event::SessionEnd {
                exit_status,
                exit_code,
                error_code,
                usage,
                otlp_dropped_spans,
            } => {
                write!(f, "{} exit {exit_code}", word(exit_status))?;
                if let Some(code) = error_code {
                    write!(f, " {code}")?;
                }
                if let Some(u) = usage {
                    write!(f, ", {} tokens", u.total_tokens)?;
                }
                match otlp_dropped_spans {
                    Some(n) if *n > 0 => write!(f, ", {n} spans not exported"),
                    _ => Ok(()),
                }
            }
        }
    }
}

/// A unit enum's word, as serde writes it.
fn word<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// One line, at most 120 characters.
fn cut(s: &str) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(120) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// The capsule a session runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapsuleRef {
    /// `<scope>/<name>` when installed; the bare name for a capsule run from its folder.
    pub name: String,
    pub version: String,
    /// The installed artifact's sha256; absent for a capsule run from its folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// A task's state, as A2A names them (snake_case in the trace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedState {
    Submitted,
    Working,
    InputRequired,
    AuthRequired,
    Completed,
    Canceled,
    Failed,
    Rejected,
}

impl RecordedState {
    /// A state a task ends in: nothing moves it on but a resume.
    pub fn is_terminal(self) -> bool {
        use RecordedState::*;
        matches!(self, Completed | Canceled | Failed | Rejected)
    }
}

/// How an inference turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyKind {
    ToolCalls,
    Answer,
    InputRequired,
    Rejected,
    Failed,
}

/// `session_end.exit_status`; the same word as the `status:` line of the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitStatus {
    Ok,
    FormationEnded,
    DeadlineReached,
    Canceled,
    Failed,
}

/// A trace read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub records: Vec<Record>,
    /// The last line did not parse: the record a kill interrupted. It is left out.
    pub partial_tail: bool,
}

/// Reads a trace.jsonl. Only its last line may be broken (see [`parse`]).
pub fn read(path: &Path) -> Result<Trace> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::new(
            catalogue::E_REC_003,
            format!("cannot read the trace {}: {e}", path.display()),
        )
        .in_file(path)
    })?;
    parse(&text, path)
}

/// Parses a trace's text. A last line that does not parse is the record a kill cut
/// short and is dropped (`partial_tail`); a broken line before it is E-REC-003.
pub fn parse(text: &str, file: &Path) -> Result<Trace> {
    let lines: Vec<&str> = text.split('\n').collect();
    // `split` yields one empty piece after the final newline.
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    let mut records = Vec::new();
    let mut partial_tail = false;
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(line) {
            Ok(record) => records.push(record),
            Err(_) if Some(i) == last => partial_tail = true,
            Err(e) => {
                return Err(Diagnostic::new(
                    catalogue::E_REC_003,
                    format!("line {} of the trace is not a trace record: {e}", i + 1),
                )
                .at(crate::diag::Location::new(file, i + 1, 1)));
            }
        }
    }
    Ok(Trace {
        records,
        partial_tail,
    })
}

pub mod context;
pub mod export;
pub mod html;
pub mod live;
pub mod otlp;
mod writer;

pub(crate) use writer::stop_writing;
pub use writer::{TraceWriter, holds_token};

#[cfg(test)]
mod tests;
