//! The one A2A client: every JSON-RPC request mur makes at a door goes through an
//! [`Endpoint`] (call-member's calls at a callee's door, `mur send`, `mur trace show
//! --follow`'s `murmur.WatchSession`).
//!
//! - **Headers.** Each request carries `Authorization: Bearer <secret>` (marked
//!   sensitive, so no debug output or log shows it), `A2A-Version`, and the headers the
//!   caller adds ([`Endpoint::header`], [`Endpoint::traceparent`]).
//! - **Timeouts.** A connection must open within [`CONNECT`]; a plain answer must be
//!   read whole, and a stream's head must arrive, within [`ANSWER`]; a stream that
//!   sends nothing, not even the door's keep-alive comment (every 15 s), for [`IDLE`]
//!   is broken.
//! - **Streams** are read by eventsource-stream (an event split across chunks, and
//!   `data:` on several lines, are one event); each event's data is a JSON-RPC
//!   response, whose `result` [`Events::next`] hands over.
//! - **Errors** are one [`ClientError`]; no text of it holds the secret or the URL's
//!   query (reqwest's own text is taken without its URL).

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::a2a;
use crate::trace::context::{SpanContext, TRACEPARENT};

/// How long a connection to a door may take to open.
pub const CONNECT: Duration = Duration::from_secs(10);
/// How long a door may take to answer a request whole, or to start a stream.
pub const ANSWER: Duration = Duration::from_secs(60);
/// How long a stream may send nothing at all before it counts as broken: four of the
/// door's 15 s keep-alives.
pub const IDLE: Duration = Duration::from_secs(60);
/// The largest plain answer read; a door that sends more is refused.
pub const MAX_ANSWER: usize = 16 << 20;

/// The HTTP client requests to doors share (`crate::door::client`, with [`CONNECT`]).
pub fn http() -> reqwest::ClientBuilder {
    crate::door::client().connect_timeout(CONNECT)
}

/// Why a request at a door failed. The texts name what happened, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// No connection, or it broke before an answer (reqwest's text, without the URL).
    #[error("{0}")]
    Unreachable(String),
    #[error("no answer within {}s", .0.as_secs_f32())]
    TimedOut(Duration),
    /// An HTTP refusal (401, 403, 413, …): the door's `error` and `message` fields.
    #[error("HTTP {status} {error}: {message}")]
    Refused {
        status: u16,
        error: String,
        message: String,
    },
    /// A JSON-RPC error object, in a plain answer or in a stream.
    #[error("error {code}: {message}")]
    Rpc { code: i64, message: String },
    /// The answer is not what the protocol says (not JSON-RPC, not a stream, too big).
    #[error("{0}")]
    BadAnswer(String),
    /// A stream that broke or went silent past [`IDLE`].
    #[error("the stream broke: {0}")]
    Broken(String),
}

impl ClientError {
    fn transport(e: reqwest::Error, within: Duration) -> ClientError {
        if e.is_timeout() {
            ClientError::TimedOut(within)
        } else {
            ClientError::Unreachable(e.without_url().to_string())
        }
    }

    /// A non-success status: the door's refusal body is `{"error", "message"}`.
    fn refused(status: u16, body: &[u8]) -> ClientError {
        let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        // A JSON-RPC error with an HTTP status is still the JSON-RPC error.
        if let Some(e) = body.get("error").filter(|e| e.is_object()) {
            return ClientError::Rpc {
                code: e["code"].as_i64().unwrap_or(0),
                message: e["message"].as_str().unwrap_or("").to_string(),
            };
        }
        ClientError::Refused {
            status,
            error: body["error"].as_str().unwrap_or("").to_string(),
            message: body["message"].as_str().unwrap_or("").to_string(),
        }
    }
}

/// One door as a caller reaches it: its URL, the bearer secret, and the headers
/// every request to it carries.
#[derive(Clone)]
pub struct Endpoint {
    http: reqwest::Client,
    url: Url,
    auth: HeaderValue,
    headers: Vec<(HeaderName, String)>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// `url` is the door's JSON-RPC address; `secret` goes only into the header.
    pub fn new(http: reqwest::Client, url: Url, secret: &str) -> Endpoint {
        let mut auth = HeaderValue::from_str(&format!("Bearer {secret}"))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer invalid"));
        auth.set_sensitive(true);
        Endpoint {
            http,
            url,
            auth,
            headers: Vec::new(),
        }
    }

    /// A door URL as `running/` records it (`http://127.0.0.1:<port>`): its root.
    pub fn at(http: reqwest::Client, door: &str, secret: &str) -> Result<Endpoint, ClientError> {
        let url = Url::parse(&format!("{}/", door.trim_end_matches('/')))
            .map_err(|e| ClientError::BadAnswer(format!("`{door}` is not a door URL: {e}")))?;
        Ok(Endpoint::new(http, url, secret))
    }

    /// Every request carries `name: value` too. A value that is no header value makes
    /// each request fail as unreachable (reqwest refuses to build it).
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Endpoint {
        self.headers
            .push((HeaderName::from_static(name), value.into()));
        self
    }

    /// `traceparent` of the client span, when there is one.
    pub fn traceparent(self, span: Option<&SpanContext>) -> Endpoint {
        match span {
            Some(span) => self.header(TRACEPARENT, span.traceparent()),
            None => self,
        }
    }

    fn post(&self, method: &str, params: Value) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(self.url.clone())
            .header(AUTHORIZATION, self.auth.clone())
            .header("A2A-Version", a2a::PROTOCOL_VERSION);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request.json(&a2a::Request::new(1, method, params))
    }

    /// One request and its answer's `result`; a JSON-RPC error is `Err(Rpc)`, an HTTP
    /// refusal `Err(Refused)`.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let transport = |e| ClientError::transport(e, ANSWER);
        let mut response = self
            .post(method, params)
            .timeout(ANSWER)
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        let body = read(&mut response).await?;
        if !status.is_success() {
            return Err(ClientError::refused(status.as_u16(), &body));
        }
        let envelope: a2a::Response = serde_json::from_slice(&body).map_err(|e| {
            ClientError::BadAnswer(format!("the answer is not a JSON-RPC response: {e}"))
        })?;
        result(envelope)
    }

    /// [`Endpoint::call`], its result read as a `T`.
    pub async fn call_as<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T, ClientError> {
        let result = self.call(method, params).await?;
        serde_json::from_value(result)
            .map_err(|e| ClientError::BadAnswer(format!("{method}'s answer: {e}")))
    }

    /// A streaming method: returns once the door has started the stream. An answer
    /// that is not a stream is its refusal (`Rpc`, `Refused`), else `BadAnswer`.
    pub async fn stream(&self, method: &str, params: Value) -> Result<Events, ClientError> {
        let mut response = tokio::time::timeout(ANSWER, self.post(method, params).send())
            .await
            .map_err(|_| ClientError::TimedOut(ANSWER))?
            .map_err(|e| ClientError::transport(e, ANSWER))?;
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if response.status().is_success() && is_stream {
            let bytes = idle_bounded(response.bytes_stream());
            return Ok(Events {
                inner: Box::pin(bytes.eventsource()),
            });
        }
        let status = response.status().as_u16();
        let body = tokio::time::timeout(ANSWER, read(&mut response))
            .await
            .map_err(|_| ClientError::TimedOut(ANSWER))??;
        if status >= 300 {
            return Err(ClientError::refused(status, &body));
        }
        match serde_json::from_slice::<a2a::Response>(&body).map(result) {
            Ok(Err(e)) => Err(e),
            _ => Err(ClientError::BadAnswer(format!(
                "{method} was not answered with a stream (HTTP {status})"
            ))),
        }
    }
}

/// A plain answer's body, refused past [`MAX_ANSWER`].
async fn read(response: &mut reqwest::Response) -> Result<Vec<u8>, ClientError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ClientError::transport(e, ANSWER))?
    {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(ClientError::BadAnswer(format!(
                "the answer is larger than {} MiB",
                MAX_ANSWER >> 20
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A JSON-RPC response's result, or its error.
fn result(envelope: a2a::Response) -> Result<Value, ClientError> {
    match envelope.error {
        Some(e) => Err(ClientError::Rpc {
            code: e.code,
            message: e.message,
        }),
        None => Ok(envelope.result.unwrap_or(Value::Null)),
    }
}

type Chunk = Result<bytes::Bytes, ClientError>;

/// The body's chunks, ending with `Broken` when none comes for [`IDLE`], or when
/// [`Guard`] refuses one.
fn idle_bounded(
    body: impl Stream<Item = reqwest::Result<bytes::Bytes>> + Send + 'static,
) -> impl Stream<Item = Chunk> + Send + 'static {
    let state = Some((Box::pin(body), Guard::default()));
    futures_util::stream::unfold(state, |state| async move {
        let (mut body, mut guard) = state?;
        let chunk = match tokio::time::timeout(IDLE, body.next()).await {
            Err(_) => Err(format!("nothing came for {}s", IDLE.as_secs())),
            Ok(None) => return None,
            Ok(Some(Ok(chunk))) => guard.check(&chunk).map(|()| chunk),
            Ok(Some(Err(e))) => Err(e.without_url().to_string()),
        };
        match chunk {
            Ok(chunk) => Some((Ok(chunk), Some((body, guard)))),
            Err(why) => Some((Err(ClientError::Broken(why)), None)),
        }
    })
}

/// What a stream must hold that eventsource-stream does not check: UTF-8 throughout
/// (it would buffer everything after a bad byte, waiting for it to complete), and no
/// event longer than [`MAX_ANSWER`] (it buffers an event until its blank line).
#[derive(Default)]
struct Guard {
    /// The unfinished character the chunk before ended with.
    unfinished: Vec<u8>,
    /// The last 3 bytes of the chunk before: a blank line split across chunks.
    last: Vec<u8>,
    /// Bytes since the last blank line.
    open: usize,
}

impl Guard {
    fn check(&mut self, chunk: &[u8]) -> Result<(), String> {
        let mut text = std::mem::take(&mut self.unfinished);
        text.extend_from_slice(chunk);
        match std::str::from_utf8(&text) {
            Ok(_) => {}
            Err(e) if e.error_len().is_none() => self.unfinished = text[e.valid_up_to()..].to_vec(),
            Err(_) => return Err("the stream is not UTF-8".into()),
        }
        let mut seen = std::mem::take(&mut self.last);
        seen.extend_from_slice(chunk);
        let ends = [&b"\n\n"[..], b"\r\r", b"\r\n\r\n"].map(|end| {
            seen.windows(end.len())
                .rposition(|w| w == end)
                .map(|at| at + end.len())
        });
        self.open = match ends.into_iter().flatten().max() {
            Some(end) => seen.len() - end,
            None => self.open + chunk.len(),
        };
        if self.open > MAX_ANSWER {
            return Err(format!("an event is longer than {} MiB", MAX_ANSWER >> 20));
        }
        self.last = seen[seen.len().saturating_sub(3)..].to_vec();
        Ok(())
    }
}

type Framed = dyn Stream<
        Item = Result<eventsource_stream::Event, eventsource_stream::EventStreamError<ClientError>>,
    > + Send;

/// A stream's events, each the `result` of its JSON-RPC response.
pub struct Events {
    inner: Pin<Box<Framed>>,
}

impl Events {
    /// The next event's `result`: `None` when the stream ended; `Err(Rpc)` for an
    /// error event, `Err(Broken)` when it broke. An event whose data is not a JSON-RPC
    /// response is skipped.
    pub async fn next(&mut self) -> Option<Result<Value, ClientError>> {
        loop {
            let event = match self.inner.next().await? {
                Ok(event) => event,
                Err(eventsource_stream::EventStreamError::Transport(e)) => return Some(Err(e)),
                Err(e) => return Some(Err(ClientError::Broken(e.to_string()))),
            };
            if let Ok(envelope) = serde_json::from_str::<a2a::Response>(&event.data) {
                return Some(result(envelope));
            }
        }
    }
}

#[cfg(test)]
mod tests;
