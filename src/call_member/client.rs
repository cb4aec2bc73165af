//! The A2A requests call-member makes at a callee's door (through the one client,
//! `crate::a2a_client`), each with `Authorization: Bearer <the caller's formation
//! token for that door>`: SendMessage (returnImmediately), SubscribeToTask / GetTask
//! for the answer, and CancelTask. No error text here ever holds a token.

use std::time::Duration;

use serde_json::json;

use super::{CallError, ORIGIN_HEADER, ORIGIN_PEER, TRUST_HEADER, Trust};
use crate::a2a::{self, StreamResponse, Task};
use crate::a2a_client::{ClientError, Endpoint};
use crate::credential::FormationToken;

/// One callee's door, as the caller reaches it.
pub(crate) struct DoorClient<'a> {
    pub client: &'a reqwest::Client,
    pub member: &'a str,
    pub url: reqwest::Url,
    pub token: &'a FormationToken,
    pub trust: Trust,
    /// The call's client span: sent as `traceparent`.
    pub span: Option<crate::trace::context::SpanContext>,
    /// `x-murmur-call-chain` (`crate::door::chain`): the tasks waiting on this call.
    pub chain: Option<String>,
}

/// How a SendMessage went.
pub(crate) enum Sent {
    /// The door holds the task: its id.
    Taken(a2a::TaskId),
    /// `-32050`: the member holds all the tasks it takes at once.
    Busy,
}

impl DoorClient<'_> {
    fn endpoint(&self) -> Endpoint {
        let door = Endpoint::new(self.client.clone(), self.url.clone(), self.token.expose())
            .traceparent(self.span.as_ref())
            .header(ORIGIN_HEADER, ORIGIN_PEER)
            .header(TRUST_HEADER, self.trust.as_str());
        match &self.chain {
            Some(chain) => door.header(crate::door::chain::CHAIN_HEADER, chain.clone()),
            None => door,
        }
    }

    /// The client's error, naming the member.
    fn error(&self, e: ClientError) -> CallError {
        let member = self.member.to_string();
        match e {
            ClientError::Refused {
                status,
                error,
                message,
            } => CallError::Refused {
                member,
                status,
                error,
                message,
            },
            ClientError::Rpc { code, message } => CallError::Rpc {
                member,
                code,
                message,
            },
            ClientError::BadAnswer(message) => CallError::Rpc {
                member,
                code: 0,
                message,
            },
            e @ (ClientError::Unreachable(_)
            | ClientError::TimedOut(_)
            | ClientError::Broken(_)) => CallError::Unreachable {
                member,
                detail: e.to_string(),
            },
        }
    }

    /// SendMessage with `returnImmediately`: answers as soon as the door holds the task.
    pub(super) async fn send(&self, text: &str) -> Result<Sent, CallError> {
        let message = a2a::Message::text(a2a::Role::User, text);
        let params = json!({"message": message, "configuration": {"returnImmediately": true}});
        match self
            .endpoint()
            .call_as::<a2a::SendMessageResponse>(a2a::SEND_MESSAGE, params)
            .await
        {
            Ok(a2a::SendMessageResponse::Task(task)) => Ok(Sent::Taken(task.id)),
            Ok(a2a::SendMessageResponse::Message(_)) => Err(CallError::Rpc {
                member: self.member.to_string(),
                code: 0,
                message: "the door's answer holds no task".into(),
            }),
            Err(ClientError::Rpc { code, .. }) if code == a2a::MEMBER_BUSY => Ok(Sent::Busy),
            Err(e) => Err(self.error(e)),
        }
    }

    pub(super) async fn get(&self, id: &a2a::TaskId) -> Result<Task, CallError> {
        self.endpoint()
            .call_as(a2a::GET_TASK, json!({"id": id}))
            .await
            .map_err(|e| self.error(e))
    }

    pub(super) async fn cancel(&self, id: &a2a::TaskId) -> Result<(), CallError> {
        self.endpoint()
            .call(a2a::CANCEL_TASK, json!({"id": id}))
            .await
            .map(|_| ())
            .map_err(|e| self.error(e))
    }

    /// Waits until the task is terminal or interrupted (input or auth required), and
    /// returns it as GetTask shows it then (artifacts included). Follows it with
    /// SubscribeToTask; a stream that breaks is followed by GetTask, polled with
    /// backoff, and subscribed again.
    pub(super) async fn wait_end(&self, id: &a2a::TaskId) -> Result<Task, CallError> {
        let mut pause = Duration::from_millis(50);
        loop {
            self.follow(id).await;
            let task = self.get(id).await?;
            let state = task.status.state;
            if state.is_terminal() || state.is_interrupted() {
                return Ok(task);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    /// Reads SubscribeToTask's events until one shows the task terminal or
    /// interrupted, or the stream ends or fails (e.g. -32004: already ended; the
    /// caller then asks GetTask).
    async fn follow(&self, id: &a2a::TaskId) {
        let door = self.endpoint();
        let Ok(mut events) = door.stream(a2a::SUBSCRIBE_TO_TASK, json!({"id": id})).await else {
            return;
        };
        while let Some(Ok(result)) = events.next().await {
            let state = match serde_json::from_value::<StreamResponse>(result) {
                Ok(StreamResponse::Task(t)) => t.status.state,
                Ok(StreamResponse::StatusUpdate(u)) => u.status.state,
                _ => continue,
            };
            if state.is_terminal() || state.is_interrupted() {
                return;
            }
        }
    }
}

/// The answer's text: the status message, then each artifact's text parts.
pub(crate) fn answer_text(task: &Task) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(m) = &task.status.message {
        let t = m.text_content();
        if !t.trim().is_empty() {
            parts.push(t);
        }
    }
    for a in task.artifacts.iter().flatten() {
        let t: Vec<&str> = a.parts.iter().filter_map(|p| p.text.as_deref()).collect();
        let t = t.join("\n");
        if !t.trim().is_empty() && !parts.contains(&t) {
            parts.push(t);
        }
    }
    parts.join("\n\n")
}
