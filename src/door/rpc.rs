//! What the door's handlers share, below all of them: the state (`Shared`), a parsed
//! call, and the ways a reply is written (JSON-RPC bodies, transport refusals, SSE).
//! `server` routes to `methods` (A2A) and `operator` (murmur.*); each of the three
//! depends on this module and nothing of the others' reaches back.

use std::convert::Infallible;

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::auth::Auth;
use super::connections::Pacer;
use super::{Limits, SessionEvents, StopCallback, TaskStore, Work};
use crate::a2a::{self, AgentCard, Id, RpcError};

/// What every request handler shares.
pub(crate) struct Shared {
    pub auth: Auth,
    pub card: Bytes,
    /// The card as served to a formation member's component at its virtual address.
    pub card_doc: AgentCard,
    pub store: TaskStore,
    pub events: SessionEvents,
    pub work: mpsc::UnboundedSender<Work>,
    pub shutdown: CancellationToken,
    pub files_root: Option<std::path::PathBuf>,
    pub on_stop: Option<StopCallback>,
    pub limits: Limits,
    pub refusals: Pacer,
}

/// One parsed JSON-RPC call.
pub struct Call {
    pub id: Id,
    pub method: String,
    pub params: Value,
}

/// A refusal before any JSON-RPC request exists: HTTP status + `{"error","message"}`.
pub(crate) fn transport_error(status: StatusCode, name: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": name, "message": message})),
    )
        .into_response()
}

/// A JSON-RPC response body, always HTTP 200.
pub(crate) fn json_reply(resp: &a2a::Response) -> Response {
    json_bytes(serde_json::to_vec(resp).unwrap_or_default())
}

/// An already serialized JSON-RPC response body, HTTP 200.
pub(crate) fn json_bytes(body: Vec<u8>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

pub(crate) fn rpc_error(id: Id, error: RpcError) -> Response {
    json_reply(&a2a::Response::err(id, error))
}

/// Reads a method's params; a wrong shape or type is `-32602` naming the field.
pub(crate) fn params<T: DeserializeOwned>(value: Value) -> Result<T, RpcError> {
    serde_json::from_value(value).map_err(RpcError::invalid_params)
}

/// One SSE `data:` line: `{"jsonrpc":"2.0","id":…,"result":…}`.
pub(crate) fn frame(id: &Id, result: impl serde::Serialize) -> String {
    let result = serde_json::to_value(result).unwrap_or(Value::Null);
    serde_json::to_string(&a2a::Response::ok(id.clone(), result)).unwrap_or_default()
}

/// An SSE response fed by a producer task through a bounded channel; the producer
/// stops when the client goes away (the channel closes) or the door shuts down.
pub(crate) fn sse(rx: mpsc::Receiver<String>) -> Response {
    let mut rx = rx;
    let stream = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
            .map(|o| o.map(|data| Ok::<_, Infallible>(Event::default().data(data))))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
