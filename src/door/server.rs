//! The HTTP side of the door: the accept loop (hyper, with a header read timeout
//! against slow clients), the routes, the Agent Card, reading and capping the body,
//! and the JSON-RPC envelope.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Router, extract::Request};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::auth::Auth;
use super::connections::{Mark, Open, Pacer};
use super::rpc::{Call, Shared, rpc_error, transport_error};
use super::{DoorConfig, Limits, SessionEvents, TaskStore, Work, methods};
use crate::a2a::{
    self, AgentCapabilities, AgentCard, AgentExtension, AgentInterface, HttpAuthSecurityScheme, Id,
    RpcError, SecurityRequirement, SecurityScheme, StringList,
};

/// The URI of mur's Agent Card extension that names the session.
pub const SESSION_EXTENSION_URI: &str = "https://murmur.dev/a2a/extensions/session/v1";
/// Longest string id the door accepts (and echoes back).
pub(super) const MAX_ID_BYTES: usize = 256;

impl Shared {
    pub(crate) fn new(
        config: DoorConfig,
        addr: SocketAddr,
        store: TaskStore,
        events: SessionEvents,
        work: mpsc::UnboundedSender<Work>,
        shutdown: CancellationToken,
    ) -> Arc<Shared> {
        let card_doc = agent_card(&config, addr);
        let card = serde_json::to_vec(&card_doc).unwrap_or_default();
        Arc::new(Shared {
            auth: Auth::new(&config),
            card: Bytes::from(card),
            card_doc,
            store,
            events,
            work,
            shutdown,
            files_root: config.files_root,
            on_stop: config.on_stop,
            refusals: Pacer::new(config.limits.refusals),
            limits: config.limits,
        })
    }
}

fn agent_card(config: &DoorConfig, addr: SocketAddr) -> AgentCard {
    let mut params = serde_json::Map::new();
    params.insert("sessionId".into(), json!(config.session_id));
    let mut card = AgentCard {
        name: config.card.name.clone(),
        description: config.card.description.clone(),
        supported_interfaces: vec![AgentInterface {
            url: format!("http://{addr}/"),
            protocol_binding: "JSONRPC".into(),
            protocol_version: a2a::PROTOCOL_VERSION.into(),
        }],
        version: config.card.version.clone(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: vec![AgentExtension {
                uri: SESSION_EXTENSION_URI.into(),
                description: Some("The mur session serving this door.".into()),
                required: false,
                params: Some(params),
            }],
            extended_agent_card: Some(false),
        },
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: config.card.skills.clone(),
        security_schemes: Default::default(),
        security_requirements: Vec::new(),
    };
    if !config.public {
        card.security_schemes.insert(
            "bearer".into(),
            SecurityScheme {
                http_auth_security_scheme: Some(HttpAuthSecurityScheme {
                    scheme: "Bearer".into(),
                    bearer_format: Some("opaque".into()),
                }),
            },
        );
        card.security_requirements.push(SecurityRequirement {
            schemes: [("bearer".to_string(), StringList::default())].into(),
        });
    }
    card
}

/// Accepts connections until `shutdown`, then closes every connection.
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    let limits = shared.limits.clone();
    let router = Router::new()
        .route("/", post(rpc))
        .route("/.well-known/agent-card.json", get(card))
        .fallback(not_found)
        .with_state(shared);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    // At the cap one open connection is asked to close, those that proved a credential
    // last (`connections`), so a flood of idle or bad-token connections cannot push a
    // rightful caller out.
    let mut open = Open::default();
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors or similar: let a connection end before retrying.
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    continue;
                };
                let Some(permit) = slot(&slots, &mut open).await else {
                    continue; // none freed in time: dropping the stream closes it
                };
                open.prune(2 * limits.max_connections);
                let (reclaim, mark) = open.push(std::time::Instant::now());
                let _ = stream.set_nodelay(true);
                // Each request marks its connection: here its head arrived, in `rpc`
                // whether its credential verified.
                let service = TowerToHyperService::new(router.clone().map_request(
                    move |mut req: Request<hyper::body::Incoming>| {
                        mark.request();
                        req.extensions_mut().insert(mark.clone());
                        req
                    },
                ));
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(limits.header_read_timeout);
                let conn = builder.serve_connection(TokioIo::new(stream), service);
                let shutdown = shutdown.clone();
                conns.spawn(async move {
                    let mut conn = std::pin::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = async { tokio::select! {
                            _ = shutdown.cancelled() => {}
                            _ = reclaim.cancelled() => {}
                        } } => {
                            // Idle connections close now; a response under way (a
                            // watcher's stream draining) finishes first.
                            conn.as_mut().graceful_shutdown();
                            let _ = conn.await;
                        }
                    }
                    reclaim.cancel(); // ended: the reclaim queue skips it
                    drop(permit);
                });
            }
        }
    }
    // Streams end once their tasks have; one that does not within the grace is cut.
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while conns.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        conns.abort_all();
        while conns.join_next().await.is_some() {}
    }
}

/// A connection slot for a new connection. At the cap, asks one open connection to
/// close (`Open::reclaim_one`) and waits for it; when the one to ask is still in its
/// first-request grace, lets it run (its request may be waiting to be read) and asks
/// again, each millisecond. None when no slot freed within `RECLAIM_WAIT`.
async fn slot(slots: &Arc<Semaphore>, open: &mut Open) -> Option<OwnedSemaphorePermit> {
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + RECLAIM_WAIT;
    let mut yielded = false;
    loop {
        if let Ok(permit) = slots.clone().try_acquire_owned() {
            return Some(permit);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        let wait = if open.reclaim_one(now) {
            deadline - now
        } else if !yielded {
            yielded = true;
            tokio::task::yield_now().await;
            continue;
        } else {
            Duration::from_millis(1).min(deadline - now)
        };
        if let Ok(Ok(permit)) = tokio::time::timeout(wait, slots.clone().acquire_owned()).await {
            return Some(permit);
        }
    }
}

/// How long an accept at the cap waits for a connection to close.
const RECLAIM_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

/// How long the door waits, when it shuts down, for responses under way to finish.
pub(super) const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The Agent Card. Asked for at a virtual member address (`Host:
/// <member>.formation.invalid`, as a member's runtime sends a component's request), it
/// names that address: a component never learns a door's real URL.
async fn card(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let virtual_host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| crate::virtual_address::is_virtual_host(h));
    let body = match virtual_host {
        Some(host) => {
            let mut card = s.card_doc.clone();
            for i in &mut card.supported_interfaces {
                i.url = format!("http://{host}/");
            }
            Bytes::from(serde_json::to_vec(&card).unwrap_or_default())
        }
        None => s.card.clone(),
    };
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

async fn not_found() -> Response {
    transport_error(
        StatusCode::NOT_FOUND,
        "not_found",
        "No such resource: the JSON-RPC endpoint is POST / and the Agent Card is at /.well-known/agent-card.json.",
    )
}

async fn rpc(
    State(s): State<Arc<Shared>>,
    mark: Option<Extension<Mark>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // Credentials first, before a byte of the body is read.
    let credential = match s.auth.identify(&headers) {
        Ok(c) => c,
        Err(e) => {
            if let Some(Extension(m)) = &mark {
                m.refused();
            }
            s.refusals.turn().await;
            return e.into_response();
        }
    };
    if credential != super::Credential::Public
        && let Some(Extension(m)) = &mark
    {
        m.proven();
    }
    let bytes = match read_body(&s.limits, &headers, body).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let call = match parse_envelope(&bytes) {
        Ok(call) => call,
        Err((id, e)) => return rpc_error(id, e),
    };
    if let Err(e) = s.auth.authorize(&credential, &call.method) {
        return e.into_response();
    }
    if let Some(v) = headers.get("a2a-version")
        && v.as_bytes() != a2a::PROTOCOL_VERSION.as_bytes()
    {
        let shown = String::from_utf8_lossy(&v.as_bytes()[..v.len().min(32)]).into_owned();
        return rpc_error(call.id, RpcError::version_not_supported(&shown));
    }
    let trust = super::trust::Trust::of(&credential, super::trust::Trust::stamped(&headers));
    let span = super::trust::task_span(&credential, &headers);
    let chain = super::chain::CallChain::of(&credential, &headers);
    methods::dispatch(s, credential, (trust, span, chain), call).await
}

async fn read_body(limits: &Limits, headers: &HeaderMap, body: Body) -> Result<Bytes, Response> {
    let cap = limits.max_body_bytes;
    let too_large = || {
        transport_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            &format!("The request body exceeds the door's limit of {cap} bytes."),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(limits.body_read_timeout, axum::body::to_bytes(body, cap)).await {
        Err(_) => Err(transport_error(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            "The request body did not arrive in time.",
        )),
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => {
            let inner = e.into_inner();
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(inner.as_ref());
            while let Some(err) = source {
                if err.is::<http_body_util::LengthLimitError>() {
                    return Err(too_large());
                }
                source = err.source();
            }
            Err(transport_error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "The request body could not be read.",
            ))
        }
    }
}

/// Reads the envelope field by field so each fault gets its own error. On failure,
/// the id to answer with (null when the id itself is at fault) and the error.
pub fn parse_envelope(bytes: &[u8]) -> Result<Call, (Id, RpcError)> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| (Id::Null, RpcError::parse(e)))?;
    let mut obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => {
            return Err((
                Id::Null,
                RpcError::invalid_request("batch requests are not supported"),
            ));
        }
        _ => {
            return Err((
                Id::Null,
                RpcError::invalid_request("the request must be a JSON object"),
            ));
        }
    };
    let id = match obj.remove("id") {
        None => return Err((Id::Null, RpcError::invalid_request("id is required"))),
        Some(Value::String(s)) if s.len() <= MAX_ID_BYTES => Id::Str(s),
        Some(Value::Number(n)) if n.as_i64().is_some() => Id::Int(n.as_i64().unwrap_or(0)),
        Some(_) => {
            return Err((
                Id::Null,
                RpcError::invalid_request(format!(
                    "id must be a string of at most {MAX_ID_BYTES} bytes or a 64-bit signed integer"
                )),
            ));
        }
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, RpcError::invalid_request("jsonrpc must be \"2.0\"")));
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        _ => return Err((id, RpcError::invalid_request("method must be a string"))),
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => return Err((id, RpcError::invalid_params("params must be an object"))),
    };
    Ok(Call { id, method, params })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_faults_each_get_their_code() {
        let cases: [(&str, i64); 8] = [
            ("{", a2a::PARSE_ERROR),
            ("[]", a2a::INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","method":"GetTask"}"#,
                a2a::INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#,
                a2a::INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"GetTask"}"#,
                a2a::INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
                a2a::INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#,
                a2a::INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1e400,"method":"GetTask"}"#,
                a2a::PARSE_ERROR,
            ),
        ];
        for (text, code) in cases {
            let err = parse_envelope(text.as_bytes())
                .err()
                .unwrap_or_else(|| panic!("{text} parsed"));
            assert_eq!(err.1.code, code, "{text}");
        }
        let ok = parse_envelope(br#"{"jsonrpc":"2.0","id":"a","method":"GetTask"}"#)
            .ok()
            .unwrap();
        assert_eq!(ok.id, Id::Str("a".into()));
    }
}
