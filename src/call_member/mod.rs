//! call-member: how a formation member gives another member work and gets its answer.
//! The spec's "Giving a member work", "What a member's components are handed" and
//! "How reachability is enforced"; the decisions are in docs/design/call-member.md.
//!
//! ```text
//! session ── Peers::new(tokens, allow) ── follow(channel reader) ── set_allow / network_warning
//!    per task: Calls::new(task_id, peers, trace, trust, config)
//!              CallMember::new(calls) ──> agent tool `call-member`
//!              Agent::new(..).with_turn_end(calls)      (waits for the answers)
//! call ─ SendMessage(returnImmediately) at the callee's door ─┬─ taken ─ SubscribeToTask ─ answer
//!                                                            └─ -32050 busy ─ offered again
//! component host ── Peers::peers_env() / Peers::route(url, headers, trust)
//!                   Calls::send_wait(call_id, peer_url, text)   (murmur:message/send)
//! ```

mod calls;
mod client;
mod peers;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::agent::{self, BoxFuture, Tool, ToolCall, ToolOutput};

pub use crate::fence::Answer;
pub use crate::virtual_address::{VIRTUAL_DOMAIN, is_virtual_host, virtual_member};
pub use calls::{Calls, CallsSpec};
pub use peers::{
    PEERS_ENV, Peers, Routed, network_warning, reaches, reaches_host, split_host_port,
};

pub use crate::door::trust::{ORIGIN_HEADER, ORIGIN_PEER, TRUST_HEADER, Trust};

/// The call's timing. The defaults are the documented ones (docs/design/call-member.md).
#[derive(Debug, Clone)]
pub struct CallConfig {
    /// How long a busy member is offered the task, from the call. Default 10 minutes;
    /// `Calls` caps it at the session's deadline.
    pub deadline: Duration,
    /// The pause before the first repeated offer; doubles after each (default 250 ms).
    pub offer_first: Duration,
    /// The longest pause between offers (default 2 s).
    pub offer_max: Duration,
}

impl Default for CallConfig {
    fn default() -> Self {
        CallConfig {
            deadline: Duration::from_secs(600),
            offer_first: Duration::from_millis(250),
            offer_max: Duration::from_secs(2),
        }
    }
}

/// Why a call failed. Display texts are for the model and for people: they name the
/// member and what happened, never a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// A member it may not call, or no member at all: one refusal for both.
    #[error("there is no member `{member}` you may call; you may call: {}", list(.callees))]
    NotCallable {
        member: String,
        callees: Vec<String>,
    },
    #[error("{member}'s door address did not arrive within {}s; the call was not made", .waited.as_secs_f32())]
    NoDoor { member: String, waited: Duration },
    #[error(
        "this member's capabilities.network.allow does not reach {member}'s door at {door} (W-RUN-008): the call was not made; add `localhost` to capabilities.network.allow"
    )]
    OutOfReach { member: String, door: String },
    #[error("{member}'s door refused the call: HTTP {status} {error}: {message}")]
    Refused {
        member: String,
        status: u16,
        error: String,
        message: String,
    },
    #[error("{member}'s door answered with error {code}: {message}")]
    Rpc {
        member: String,
        code: i64,
        message: String,
    },
    #[error("{member}'s door could not be reached: {detail}")]
    Unreachable { member: String, detail: String },
    /// The launcher said the callee's process ended (a `exited` channel line).
    #[error("{member} exited with {how} at {at}, while the formation runs: it takes no more calls")]
    Exited {
        member: String,
        at: String,
        how: String,
    },
    #[error(
        "murmur:message/send takes a member's virtual address, http://<member>.formation.invalid (MURMUR_FORMATION_PEERS lists them); `{0}` is not one"
    )]
    NotVirtual(String),
    #[error("the calling task has ended; the call was not made")]
    Ended,
    #[error(
        "the call's arguments are not {{\"member\": \"<name>\", \"task\": \"<the task in full>\"}}: {0}"
    )]
    Arguments(String),
}

fn list(callees: &[String]) -> String {
    if callees.is_empty() {
        "nobody".into()
    } else {
        callees.join(", ")
    }
}

/// The runtime's `call-member` tool for one task. Exists only when the member may
/// call someone.
pub struct CallMember {
    calls: Arc<Calls>,
    description: String,
}

impl CallMember {
    /// `None` when the member may call nobody: then the tool is not offered.
    pub fn new(calls: Arc<Calls>) -> Option<Arc<CallMember>> {
        let callees = calls.peers().callees();
        if callees.is_empty() {
            return None;
        }
        Some(Arc::new(CallMember {
            description: agent::call_member_description(callees),
            calls,
        }))
    }
}

impl Tool for CallMember {
    fn name(&self) -> &str {
        agent::CALL_MEMBER
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        agent::call_member_schema()
    }
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let args = &call.arguments;
            let member = args.get("member").and_then(Value::as_str);
            let task = args.get("task").and_then(Value::as_str);
            let (Some(member), Some(task)) = (member, task) else {
                return ToolOutput::error(
                    CallError::Arguments(format!("got {}", cut(&args.to_string()))).to_string(),
                );
            };
            if task.trim().is_empty() {
                return ToolOutput::error(
                    CallError::Arguments("the task is empty".into()).to_string(),
                );
            }
            self.calls.call(&call.id, member, task).await
        })
    }
}

pub(crate) fn cut(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}
