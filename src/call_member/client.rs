//! The A2A requests call-member makes at a callee's door, each with
//! `Authorization: Bearer <the caller's formation token for that door>`:
//! SendMessage (returnImmediately), SubscribeToTask / GetTask for the answer, and
//! CancelTask. Tokens go only into the header (marked sensitive); no error text here
//! ever holds one.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde_json::{Value, json};

use super::{CallError, ORIGIN_HEADER, ORIGIN_PEER, TRUST_HEADER, Trust};
use crate::a2a::{self, StreamResponse, Task};
use crate::credential::FormationToken;

/// One callee's door, as the caller reaches it.
pub(crate) struct DoorClient<'a> {
    pub client: &'a reqwest::Client,
    pub member: &'a str,
    pub url: Url,
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
    fn post(&self, method: &str, params: Value) -> reqwest::RequestBuilder {
        let mut auth = HeaderValue::from_str(&format!("Bearer {}", self.token.expose()))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer invalid"));
        auth.set_sensitive(true);
        let mut request = self.client.post(self.url.clone());
        if let Some(span) = &self.span {
            request = request.header(crate::trace::context::TRACEPARENT, span.traceparent());
        }
        if let Some(chain) = &self.chain {
            request = request.header(crate::door::chain::CHAIN_HEADER, chain);
        }
        request
            .header(AUTHORIZATION, auth)
            .header("A2A-Version", a2a::PROTOCOL_VERSION)
            .header(ORIGIN_HEADER, ORIGIN_PEER)
            .header(TRUST_HEADER, self.trust.as_str())
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    }

    fn transport(&self, e: reqwest::Error) -> CallError {
        // reqwest's text names the URL (no token: it travels only in a header).
        CallError::Unreachable {
            member: self.member.to_string(),
            detail: e.without_url().to_string(),
        }
    }

    /// Sends one request; a JSON-RPC error comes back as `Err(Rpc)`, an HTTP refusal
    /// (401/403/413…) as `Err(Refused)`.
    async fn rpc(&self, method: &str, params: Value) -> Result<Value, CallError> {
        let resp = self
            .post(method, params)
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(CallError::Refused {
                member: self.member.to_string(),
                status: status.as_u16(),
                error: body["error"].as_str().unwrap_or("").to_string(),
                message: body["message"].as_str().unwrap_or("").to_string(),
            });
        }
        if let Some(err) = body.get("error") {
            return Err(CallError::Rpc {
                member: self.member.to_string(),
                code: err["code"].as_i64().unwrap_or(0),
                message: err["message"].as_str().unwrap_or("").to_string(),
            });
        }
        Ok(body.get("result").cloned().unwrap_or(Value::Null))
    }

    /// SendMessage with `returnImmediately`: answers as soon as the door holds the task.
    pub(super) async fn send(&self, text: &str) -> Result<Sent, CallError> {
        let message = a2a::Message::text(a2a::Role::User, text);
        let params = json!({"message": message, "configuration": {"returnImmediately": true}});
        match self.rpc(a2a::SEND_MESSAGE, params).await {
            Ok(result) => match result["task"]["id"].as_str() {
                Some(id) => Ok(Sent::Taken(id.into())),
                None => Err(CallError::Rpc {
                    member: self.member.to_string(),
                    code: 0,
                    message: "the door's answer holds no task".into(),
                }),
            },
            Err(CallError::Rpc { code, .. }) if code == a2a::MEMBER_BUSY => Ok(Sent::Busy),
            Err(e) => Err(e),
        }
    }

    pub(super) async fn get(&self, id: &a2a::TaskId) -> Result<Task, CallError> {
        let result = self.rpc(a2a::GET_TASK, json!({"id": id})).await?;
        serde_json::from_value(result).map_err(|e| CallError::Rpc {
            member: self.member.to_string(),
            code: 0,
            message: format!("GetTask's answer is not a task: {e}"),
        })
    }

    pub(super) async fn cancel(&self, id: &a2a::TaskId) -> Result<(), CallError> {
        self.rpc(a2a::CANCEL_TASK, json!({"id": id}))
            .await
            .map(|_| ())
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
    /// interrupted, or the stream ends or fails (the caller then asks GetTask).
    async fn follow(&self, id: &a2a::TaskId) {
        let Ok(resp) = self
            .post(a2a::SUBSCRIBE_TO_TASK, json!({"id": id}))
            .send()
            .await
        else {
            return;
        };
        let is_stream = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !resp.status().is_success() || !is_stream {
            return; // e.g. -32004: already ended
        }
        let mut body = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::new();
        while let Some(Ok(chunk)) = body.next().await {
            buf.extend_from_slice(&chunk);
            while let Some(end) = event_end(&buf) {
                let event: Vec<u8> = buf.drain(..end).collect();
                if ends(&event) {
                    return;
                }
            }
        }
    }
}

/// The end (after the blank line) of the first complete SSE event in `buf`.
fn event_end(buf: &[u8]) -> Option<usize> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|p| p + 2);
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether one SSE event shows the task terminal or interrupted.
fn ends(event: &[u8]) -> bool {
    let text = String::from_utf8_lossy(event);
    let data: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let Ok(frame) = serde_json::from_str::<Value>(&data) else {
        return false;
    };
    let Ok(event) = serde_json::from_value::<StreamResponse>(frame["result"].clone()) else {
        return false;
    };
    let state = match event {
        StreamResponse::Task(t) => t.status.state,
        StreamResponse::StatusUpdate(u) => u.status.state,
        _ => return false,
    };
    state.is_terminal() || state.is_interrupted()
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
