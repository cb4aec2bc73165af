//! `murmur:message/send` (wit/deps/message/send.wit): a component gives a member of
//! the formation work at its virtual address and waits for the task's end. Routing,
//! the refusal, the call and its trace records are call-member's
//! ([`crate::call_member::Calls::send_wait`]); this is only the host side of the WIT.

use std::sync::Arc;

use wasmtime::component::{HasSelf, Linker};

use crate::call_member::{CallError, Calls};

mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "murmur:message/sender",
        imports: { default: async },
    });
}

// `pub`: the tool and hook bindings re-export it (their bindgen's `with`).
#[allow(unreachable_pub)]
pub use bindings::murmur::message::send;

/// What a component's sends go through: the calls of the task it runs for, and the
/// call id its sends are numbered under (`<call id>.send-<n>`).
pub(super) struct Sender {
    pub calls: Arc<Calls>,
    pub call_id: String,
    pub sent: u32,
}

/// The host side's own state, as wasmtime's WASI contexts are: a store's state holds
/// one and hands it over through `get`, so this module knows nothing of that state.
pub(super) struct MessageCtx {
    /// `None` outside a formation.
    pub sender: Option<Sender>,
}

pub(super) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> &mut MessageCtx,
) -> wasmtime::Result<()> {
    send::add_to_linker::<T, HasSelf<MessageCtx>>(linker, get)
}

impl send::Host for MessageCtx {
    async fn send(&mut self, peer_url: String, text: String) -> Result<send::Task, String> {
        let Some(sender) = self.sender.as_mut() else {
            // Not in a formation, or a member that may call nobody: the one refusal.
            let member = reqwest::Url::parse(&peer_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                .unwrap_or_default();
            return Err(CallError::NotCallable {
                member: member.chars().take(64).collect(),
                callees: Vec::new(),
            }
            .to_string());
        };
        sender.sent += 1;
        let call_id = format!("{}.send-{}", sender.call_id, sender.sent);
        let calls = sender.calls.clone();
        let answer = calls
            .send_wait(&call_id, &peer_url, &text)
            .await
            .map_err(|e| e.to_string())?;
        Ok(send::Task {
            id: answer.member_task_id.map(String::from).unwrap_or_default(),
            state: serde_json::to_value(answer.state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            text: answer.text,
        })
    }
}
