//! `transport: http` against real local servers on 127.0.0.1 that speak the chat
//! completions wire protocol over HTTP/1.1, in plain text and over TLS with a CA made
//! here with rcgen: answers, tool calls, streams, faults, retries, stalls, refused
//! certificates; and the session's refusals at start, alone and in a formation.
//! Every request body a server receives is checked for formation tokens.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use mur::agent::{
    Agent, AgentSpec, BoxFuture, HttpConfig, Outcome, Tool, ToolCall, ToolOutput, TransportConfig,
    transport,
};
use mur::trace::TraceWriter;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

// ---- the server ----------------------------------------------------------------

/// What the server does with one request.
#[derive(Clone)]
pub(crate) enum Act {
    /// A status, extra headers, a body (sent as JSON).
    Answer(u16, Vec<(&'static str, String)>, String),
    /// `text/event-stream`: each item one `data:` event, then `[DONE]`.
    Stream(Vec<Value>),
    /// Reads the request, then closes the connection without a word.
    Drop,
    /// Reads the request and never answers.
    Stall,
    /// A stream of the first events, then, once the gate opens, of the rest.
    Gated(Vec<Value>, Arc<tokio::sync::Notify>, Vec<Value>),
}

pub(crate) fn ok(body: Value) -> Act {
    Act::Answer(200, vec![], body.to_string())
}

pub(crate) fn message(content: &str) -> Value {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
           "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}})
}

fn echo_call(id: &str, say: &str) -> Value {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": id, "type": "function",
            "function": {"name": "echo", "arguments": json!({"say": say}).to_string()}}]}}]})
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A chat completions server: request `n` gets `script[n]` (the last one repeats).
pub(crate) struct Server {
    /// `http(s)://127.0.0.1:<port>/v1`.
    pub(crate) base: String,
    bodies: Arc<Mutex<Vec<Value>>>,
    /// Each request's Authorization header.
    auth: Arc<Mutex<Vec<Option<String>>>>,
}

impl Server {
    pub(crate) async fn start(script: Vec<Act>, tls: Option<Arc<rustls::ServerConfig>>) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let auth = Arc::new(Mutex::new(Vec::new()));
        let seen = (bodies.clone(), auth.clone());
        let count = Arc::new(AtomicUsize::new(0));
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (script, seen, count, acceptor) = (
                    script.clone(),
                    seen.clone(),
                    count.clone(),
                    acceptor.clone(),
                );
                tokio::spawn(async move {
                    let io: Box<dyn Io> = match acceptor {
                        // A handshake the client refuses ends here.
                        Some(a) => match a.accept(tcp).await {
                            Ok(s) => Box::new(s),
                            Err(_) => return,
                        },
                        None => Box::new(tcp),
                    };
                    serve_one(io, &script, &seen, &count).await;
                });
            }
        });
        Server {
            base: format!("{scheme}://127.0.0.1:{port}/v1"),
            bodies,
            auth,
        }
    }

    pub(crate) fn bodies(&self) -> Vec<Value> {
        let bodies = self.bodies.lock().unwrap().clone();
        for b in &bodies {
            assert!(
                !b.to_string().contains("mft1."),
                "a request body holds a formation token: {b}"
            );
        }
        bodies
    }
}

/// What a server received: each request's body, and its Authorization header.
type Seen = (Arc<Mutex<Vec<Value>>>, Arc<Mutex<Vec<Option<String>>>>);

/// Every server's bodies are scanned for tokens when its test is done with it.
impl Drop for Server {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.bodies();
        }
    }
}

async fn serve_one(mut io: Box<dyn Io>, script: &[Act], seen: &Seen, count: &AtomicUsize) {
    let Some((auth, body)) = read_request(&mut io).await else {
        return;
    };
    seen.1.lock().unwrap().push(auth);
    seen.0
        .lock()
        .unwrap()
        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
    let n = count.fetch_add(1, Ordering::SeqCst);
    let act = script[n.min(script.len() - 1)].clone();
    let head = |status: u16, kind: &str, extra: &[(&str, String)], len: Option<usize>| {
        let mut h = format!("HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nConnection: close\r\n");
        for (k, v) in extra {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(len) = len {
            h.push_str(&format!("Content-Length: {len}\r\n"));
        }
        h + "\r\n"
    };
    match act {
        Act::Answer(status, extra, body) => {
            let h = head(status, "application/json", &extra, Some(body.len()));
            let _ = io.write_all(format!("{h}{body}").as_bytes()).await;
        }
        Act::Stream(events) => {
            let _ = io
                .write_all(head(200, "text/event-stream", &[], None).as_bytes())
                .await;
            for e in events {
                let _ = io.write_all(format!("data: {e}\n\n").as_bytes()).await;
                let _ = io.flush().await;
            }
            let _ = io.write_all(b"data: [DONE]\n\n").await;
        }
        Act::Gated(first, gate, rest) => {
            let _ = io
                .write_all(head(200, "text/event-stream", &[], None).as_bytes())
                .await;
            for e in first {
                let _ = io.write_all(format!("data: {e}\n\n").as_bytes()).await;
            }
            let _ = io.flush().await;
            gate.notified().await;
            for e in rest {
                let _ = io.write_all(format!("data: {e}\n\n").as_bytes()).await;
            }
            let _ = io.write_all(b"data: [DONE]\n\n").await;
        }
        Act::Drop => {}
        Act::Stall => std::future::pending::<()>().await,
    }
    let _ = io.shutdown().await;
}

/// One request's Authorization header and body (by its Content-Length).
async fn read_request(io: &mut Box<dyn Io>) -> Option<(Option<String>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = io.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let raw = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let auth = raw.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("authorization")
            .then(|| v.trim().to_string())
    });
    let head = raw.to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = io.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((auth, buf[head_end..head_end + len].to_vec()))
}

// ---- certificates ----------------------------------------------------------------

pub(crate) struct Ca {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pem: String,
}

pub(crate) fn ca(name: &str) -> Ca {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        issuer: rcgen::Issuer::new(params, key),
    }
}

/// A server config with a certificate for `names`, signed by `ca`.
pub(crate) fn server_tls(ca: &Ca, names: &[&str]) -> Arc<rustls::ServerConfig> {
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    serving(&cert, &key)
}

/// A self-signed certificate with CN=localhost, as `openssl req -x509 -subj
/// /CN=localhost` makes it: a CA (`basicConstraints` CA:TRUE, openssl's default) or not
/// (CA:FALSE), with a subjectAltName for `names` (none by default). Its PEM, and a
/// server config that presents it.
pub(crate) fn self_signed(is_ca: bool, names: &[&str]) -> (String, Arc<rustls::ServerConfig>) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    params.is_ca = if is_ca {
        rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained)
    } else {
        rcgen::IsCa::ExplicitNoCa
    };
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), serving(&cert, &key))
}

fn serving(cert: &rcgen::Certificate, key: &rcgen::KeyPair) -> Arc<rustls::ServerConfig> {
    let der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], der)
        .unwrap();
    Arc::new(config)
}

// ---- the agent -------------------------------------------------------------------

struct Echo;
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"say": {"type": "string"}}})
    }
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { ToolOutput::ok(format!("echo {}", call.arguments["say"])) })
    }
}

/// A task on the http transport, its trace in `dir`.
struct Run {
    dir: tempfile::TempDir,
    agent: Agent,
}

impl Run {
    fn new(config: HttpConfig) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let trace = Arc::new(TraceWriter::create(&dir.path().join("trace.jsonl")).unwrap());
        let agent = Agent::new(AgentSpec {
            task_id: "t1".into(),
            system: "[Capsule]\nname: x".into(),
            max_turns: 4,
            tools: vec![Arc::new(Echo)],
            transport: transport(&TransportConfig::Http(config), None).unwrap(),
            trace: Some(trace),
        });
        Run { dir, agent }
    }

    async fn send(&mut self, text: &str) -> Outcome {
        self.agent.send(text, &CancellationToken::new()).await
    }

    /// The trace's `model_request` records.
    fn tries(&self) -> Vec<Value> {
        tries(&self.dir.path().join("trace.jsonl"))
    }
}

fn tries(path: &Path) -> Vec<Value> {
    let trace = mur::trace::read(path).unwrap();
    trace
        .records
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .filter(|v| v["type"] == "model_request")
        .collect()
}

fn config(s: &Server) -> HttpConfig {
    let mut c = HttpConfig::new(&s.base, "m");
    c.timeout = Duration::from_secs(20);
    c
}

fn failed(o: &Outcome) -> &str {
    match o {
        Outcome::Failed { reason } => reason,
        other => panic!("not failed: {other:?}"),
    }
}

fn completed(o: &Outcome) -> &str {
    match o {
        Outcome::Completed { message, .. } => message.as_deref().unwrap_or(""),
        other => panic!("not completed: {other:?}"),
    }
}

fn results(tries: &[Value]) -> Vec<String> {
    tries
        .iter()
        .map(|t| t["result"].as_str().unwrap().to_string())
        .collect()
}

/// A CA certificate written where a capsule or SSL_CERT_FILE can name it.
fn write_pem(dir: &Path, pem: &str) -> PathBuf {
    let path = dir.join("ca.pem");
    std::fs::write(&path, pem).unwrap();
    path
}

// The tests: the transport alone, then whole sessions.
mod session;
mod transport;
