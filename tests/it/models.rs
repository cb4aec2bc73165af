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
enum Act {
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

fn ok(body: Value) -> Act {
    Act::Answer(200, vec![], body.to_string())
}

fn message(content: &str) -> Value {
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
struct Server {
    /// `http(s)://127.0.0.1:<port>/v1`.
    base: String,
    bodies: Arc<Mutex<Vec<Value>>>,
    /// Each request's Authorization header.
    auth: Arc<Mutex<Vec<Option<String>>>>,
}

impl Server {
    async fn start(script: Vec<Act>, tls: Option<Arc<rustls::ServerConfig>>) -> Server {
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

    fn bodies(&self) -> Vec<Value> {
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

struct Ca {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pem: String,
}

fn ca(name: &str) -> Ca {
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
fn server_tls(ca: &Ca, names: &[&str]) -> Arc<rustls::ServerConfig> {
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    let der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
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
            transport: transport(&TransportConfig::Http(config)).unwrap(),
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

// ---- answers -------------------------------------------------------------------

#[tokio::test]
async fn a_plain_answer_with_the_sampling_settings_sent_as_written() {
    let s = Server::start(vec![ok(message("hello"))], None).await;
    let mut c = config(&s);
    c.sampling.temperature = Some(serde_json::from_str("0.25").unwrap());
    c.sampling.top_p = Some(serde_json::from_str("0.9").unwrap());
    c.sampling.max_tokens = Some(64);
    c.sampling.seed = Some(-3);
    c.sampling.stop = vec!["END".into()];
    let mut run = Run::new(c);
    assert_eq!(completed(&run.send("say hello").await), "hello");
    let body = &s.bodies()[0];
    assert_eq!(body["temperature"].to_string(), "0.25");
    assert_eq!(body["top_p"].to_string(), "0.9");
    assert_eq!(
        (&body["max_tokens"], &body["seed"], &body["stop"]),
        (&json!(64), &json!(-3), &json!(["END"]))
    );
    assert!(body.get("stream").is_none());
    let tries = run.tries();
    assert_eq!(results(&tries), ["answered"]);
    assert_eq!(tries[0]["status"], 200);
    assert_eq!(tries[0]["usage"]["total_tokens"], 14);
}

#[tokio::test]
async fn tool_calls_then_an_answer() {
    let s = Server::start(vec![ok(echo_call("c1", "hi")), ok(message("done"))], None).await;
    let mut run = Run::new(config(&s));
    assert_eq!(completed(&run.send("echo hi").await), "done");
    let bodies = s.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["tools"][0]["function"]["name"], "echo");
    assert_eq!(
        bodies[1]["messages"][3],
        json!({"role": "tool", "tool_call_id": "c1", "content": "echo \"hi\""})
    );
}

#[tokio::test]
async fn a_stream_with_tool_call_deltas_is_put_back_together() {
    let d = |delta: Value| json!({"choices": [{"index": 0, "delta": delta}]});
    let calls = vec![
        d(json!({"role": "assistant", "content": ""})),
        d(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                 "function": {"name": "echo", "arguments": ""}}]}),
        ),
        d(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"sa"}}]})),
        d(json!({"tool_calls": [{"index": 0, "function": {"arguments": "y\":\"hi\"}"}}]})),
    ];
    let answer = vec![
        d(json!({"content": "all "})),
        d(json!({"content": "done"})),
        json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}),
    ];
    let s = Server::start(vec![Act::Stream(calls), Act::Stream(answer)], None).await;
    let mut c = config(&s);
    c.stream = true;
    let mut run = Run::new(c);
    assert_eq!(completed(&run.send("echo hi").await), "all done");
    let bodies = s.bodies();
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(
        bodies[1]["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"say\":\"hi\"}"
    );
    assert_eq!(bodies[1]["messages"][3]["content"], "echo \"hi\"");
    assert_eq!(run.tries()[1]["usage"]["total_tokens"], 7);
}

#[tokio::test]
async fn malformed_json_fails_the_task_on_the_first_try() {
    let s = Server::start(
        vec![Act::Answer(200, vec![], "{\"choices\": [".into())],
        None,
    )
    .await;
    let mut run = Run::new(config(&s));
    let reason = failed(&run.send("x").await).to_string();
    assert!(
        reason.contains("answered with something not JSON"),
        "{reason}"
    );
    assert_eq!(results(&run.tries()), ["failed"]);
    assert_eq!(s.bodies().len(), 1);
}

// ---- retries ---------------------------------------------------------------------

#[tokio::test]
async fn a_429_waits_as_retry_after_says_in_seconds_and_as_a_date() {
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(1));
    let s = Server::start(
        vec![
            Act::Answer(429, vec![("Retry-After", "1".into())], "{}".into()),
            Act::Answer(429, vec![("Retry-After", date)], "{}".into()),
            ok(message("at last")),
        ],
        None,
    )
    .await;
    let mut run = Run::new(config(&s));
    let started = Instant::now();
    assert_eq!(completed(&run.send("x").await), "at last");
    // The first wait is the server's whole second, unscaled.
    assert!(started.elapsed() >= Duration::from_secs(1));
    let tries = run.tries();
    assert_eq!(results(&tries), ["retrying", "retrying", "answered"]);
    assert_eq!(tries[0]["status"], 429);
    assert_eq!(tries[0]["retry_in_ms"], 1000);
    assert!(
        tries[1]["retry_in_ms"].as_u64().unwrap() <= 1000,
        "{}",
        tries[1]
    );
    assert_eq!(tries[2]["attempt"], 3);
}

#[tokio::test]
async fn a_500_then_success() {
    let s = Server::start(
        vec![
            Act::Answer(500, vec![], "{\"error\":\"boom\"}".into()),
            ok(message("fine")),
        ],
        None,
    )
    .await;
    let mut run = Run::new(config(&s));
    assert_eq!(completed(&run.send("x").await), "fine");
    let tries = run.tries();
    assert_eq!(results(&tries), ["retrying", "answered"]);
    assert!(
        tries[0]["error"].as_str().unwrap().contains("500"),
        "{}",
        tries[0]
    );
    // The first backoff: 0.5 s with jitter, no less than half of it.
    let wait = tries[0]["retry_in_ms"].as_u64().unwrap();
    assert!((250..=500).contains(&wait), "{wait}");
}

#[tokio::test]
async fn retries_stop_at_max_retries_and_a_404_is_not_retried() {
    // Retry-After: 0 keeps the test quick; the backoff is the 500's test's.
    let s = Server::start(
        vec![Act::Answer(
            503,
            vec![("Retry-After", "0".into())],
            "{}".into(),
        )],
        None,
    )
    .await;
    let mut c = config(&s);
    c.max_retries = 2;
    let mut run = Run::new(c);
    let reason = failed(&run.send("x").await).to_string();
    assert!(
        reason.contains("503") && reason.contains("after 3 tries"),
        "{reason}"
    );
    assert_eq!(results(&run.tries()), ["retrying", "retrying", "failed"]);

    let s = Server::start(vec![Act::Answer(404, vec![], "no such model".into())], None).await;
    let mut run = Run::new(config(&s));
    let reason = failed(&run.send("x").await).to_string();
    assert!(
        reason.contains("404") && reason.contains("no such model"),
        "{reason}"
    );
    assert_eq!(results(&run.tries()), ["failed"]);
}

#[tokio::test]
async fn a_dropped_connection_is_tried_again() {
    let s = Server::start(vec![Act::Drop, ok(message("back"))], None).await;
    let mut run = Run::new(config(&s));
    assert_eq!(completed(&run.send("x").await), "back");
    let tries = run.tries();
    assert_eq!(results(&tries), ["retrying", "answered"]);
    let error = tries[0]["error"].as_str().unwrap();
    assert!(error.contains("the connection dropped"), "{error}");
}

#[tokio::test]
async fn a_stall_past_the_timeout_fails_the_turn_naming_the_timeout() {
    let s = Server::start(vec![Act::Stall], None).await;
    let mut c = config(&s);
    c.timeout = Duration::from_millis(300);
    let mut run = Run::new(c);
    let reason = failed(&run.send("x").await).to_string();
    assert!(
        reason.contains("agent.timeout") && reason.contains("300ms"),
        "{reason}"
    );
    let tries = run.tries();
    assert_eq!(results(&tries), ["failed"]);
    assert!(tries[0]["elapsed_ms"].as_u64().unwrap() >= 300);
}

#[tokio::test]
async fn a_stream_that_stalls_midway_fails_naming_the_timeout() {
    let d = json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]});
    let never = Arc::new(tokio::sync::Notify::new());
    let s = Server::start(vec![Act::Gated(vec![d], never, vec![])], None).await;
    let mut c = config(&s);
    c.stream = true;
    c.timeout = Duration::from_millis(300);
    let mut run = Run::new(c);
    let reason = failed(&run.send("x").await).to_string();
    assert!(
        reason.contains("stopped streaming") && reason.contains("agent.timeout"),
        "{reason}"
    );
    assert_eq!(results(&run.tries()), ["failed"]);
}

#[tokio::test]
async fn cancellation_takes_effect_in_a_wait_and_in_a_request() {
    for (act, in_wait) in [
        (
            Act::Answer(429, vec![("Retry-After", "100".into())], "{}".into()),
            true,
        ),
        (Act::Stall, false),
    ] {
        let s = Server::start(vec![act], None).await;
        let mut run = Run::new(config(&s));
        let path = run.dir.path().join("trace.jsonl");
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        let bodies = s.bodies.clone();
        let watcher = tokio::spawn(async move {
            // Cancel once the retry's wait began, or the request is in.
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let ready = if in_wait {
                    results(&tries(&path)) == ["retrying"]
                } else {
                    !bodies.lock().unwrap().is_empty()
                };
                if ready {
                    break;
                }
                assert!(Instant::now() < deadline, "the request never got that far");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            canceller.cancel();
            Instant::now()
        });
        let outcome = run.agent.send("x", &cancel).await;
        let cancelled_at = watcher.await.unwrap();
        assert_eq!(outcome, Outcome::Canceled);
        // Far less than the 100 s the server asked for, or the 20 s timeout.
        assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    }
}

#[tokio::test]
async fn a_conversation_holding_a_formation_token_is_never_sent() {
    let s = Server::start(vec![ok(message("x"))], None).await;
    let mut run = Run::new(config(&s));
    let reason = failed(&run.send("use mft1.abcdefgh").await).to_string();
    assert!(reason.contains("formation token"), "{reason}");
    assert!(s.bodies().is_empty());
}

// ---- TLS -----------------------------------------------------------------------

fn write_pem(dir: &Path, pem: &str) -> PathBuf {
    let path = dir.join("ca.pem");
    std::fs::write(&path, pem).unwrap();
    path
}

#[tokio::test]
async fn tls_with_a_private_ca_in_ca_file() {
    let ours = ca("our CA");
    let s = Server::start(
        vec![ok(message("secure"))],
        Some(server_tls(&ours, &["127.0.0.1"])),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&s);
    c.ca_file = Some(write_pem(dir.path(), &ours.pem));
    let mut run = Run::new(c);
    assert_eq!(completed(&run.send("x").await), "secure");
    assert_eq!(s.bodies().len(), 1);
}

#[tokio::test]
async fn a_wrong_certificate_is_named_a_certificate_error() {
    let ours = ca("our CA");
    let theirs = ca("another CA");
    let dir = tempfile::tempdir().unwrap();
    let pem = write_pem(dir.path(), &ours.pem);
    for (tls, what) in [
        (server_tls(&theirs, &["127.0.0.1"]), "another CA"),
        (server_tls(&ours, &["example.com"]), "the wrong name"),
    ] {
        let s = Server::start(vec![ok(message("x"))], Some(tls)).await;
        let mut c = config(&s);
        c.ca_file = Some(pem.clone());
        let mut run = Run::new(c);
        let reason = failed(&run.send("x").await).to_string();
        assert!(reason.contains("certificate error"), "{what}: {reason}");
        assert!(!reason.contains("cannot connect"), "{what}: {reason}");
        assert_eq!(results(&run.tries()), ["failed"], "{what}");
        assert!(s.bodies().is_empty());
    }
    // Without the CA, even the right certificate is refused; a refused connection reads
    // otherwise.
    let s = Server::start(
        vec![ok(message("x"))],
        Some(server_tls(&ours, &["127.0.0.1"])),
    )
    .await;
    let reason = failed(&Run::new(config(&s)).send("x").await).to_string();
    assert!(reason.contains("certificate error"), "{reason}");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = HttpConfig::new(&format!("https://127.0.0.1:{port}/v1"), "m");
    c.max_retries = 0;
    let reason = failed(&Run::new(c).send("x").await).to_string();
    assert!(
        reason.contains("cannot connect") && !reason.contains("certificate"),
        "{reason}"
    );
}

// ---- the session -----------------------------------------------------------------

/// A HOME and a project folder for real `mur` processes.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let w = World {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(w.home()).unwrap();
        std::fs::create_dir_all(w.proj()).unwrap();
        w
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn proj(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn mur(&self, dir: &Path, args: &[&str]) -> tokio::process::Command {
        // The one clean-environment mur (no MURMUR_*/MUR_TEST_* of the caller), one time scale.
        let mut cmd = tokio::process::Command::from(crate::support::mur());
        cmd.args(args)
            .current_dir(dir)
            .env("HOME", self.home())
            .kill_on_drop(true);
        cmd
    }

    async fn ok(&self, dir: &Path, args: &[&str]) {
        let out = self.mur(dir, args).output().await.unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `mur new --roster team`, each member's `agent` replaced as given, installed.
    async fn team(&self, lead: &str, helper: &str) -> PathBuf {
        self.ok(&self.proj(), &["new", "--roster", "team"]).await;
        let team = self.proj().join("team");
        for (member, agent) in [("lead", lead), ("helper", helper)] {
            let path = team.join(member).join("murmur.yaml");
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.replace(
                "agent:\n  # The built-in offline model: runs with no API key and no network.\n  transport: builtin\n",
                agent,
            );
            assert!(text.contains(agent), "the scaffold's agent section moved");
            std::fs::write(&path, text).unwrap();
            if agent.contains("driver") {
                std::fs::write(team.join(member).join("driver.wasm"), b"\0asm").unwrap();
            }
        }
        self.ok(&team, &["install", "lead", "helper"]).await;
        team
    }

    /// Writes and installs the capsule `local/<name>` 1.0.0 with this `agent` section.
    async fn capsule(&self, name: &str, agent: &str) {
        let src = self.dir.path().join("src").join(name);
        std::fs::create_dir_all(&src).unwrap();
        let text = format!("name: {name}\nversion: 1.0.0\ndescription: A test capsule.\n{agent}");
        std::fs::write(src.join("murmur.yaml"), text).unwrap();
        self.ok(&self.proj(), &["install", src.to_str().unwrap()])
            .await;
    }

    /// `mur run --task` of `local/<name>`, its exit code, stdout and stderr.
    async fn run_task(&self, name: &str, env: &[(&str, &Path)]) -> (Option<i32>, String, String) {
        let capsule = format!("local/{name}");
        let mut cmd = self.mur(
            &self.proj(),
            &[
                "run",
                "--capsule",
                &capsule,
                "--capsule-version",
                "1.0.0",
                "--task",
                "hi",
            ],
        );
        cmd.env_remove(mur::agent::http::SSL_CERT_FILE);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().await.unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    }

    /// Every trace.jsonl under the records, as JSON records.
    fn traces(&self) -> Vec<Vec<Value>> {
        let mut found = Vec::new();
        let mut stack = vec![self.home().join(".murmur/records")];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.file_name().is_some_and(|n| n == "trace.jsonl") {
                    let t = mur::trace::read(&p).unwrap();
                    found.push(
                        t.records
                            .iter()
                            .map(|r| serde_json::to_value(r).unwrap())
                            .collect(),
                    );
                }
            }
        }
        found
    }
}

fn http_agent(base: &str, extra: &str) -> String {
    format!("agent:\n  transport: http\n  base_url: \"{base}\"\n  model: m\n{extra}")
}

/// A capsule whose key variable is unset or empty, or with a driver, refuses to start:
/// an E-AGT code, no readiness line, no task taken.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_refuses_at_start_what_would_fail_every_task() {
    let base = "http://127.0.0.1:9/v1";
    let cases = [
        (
            "  api_key_env: MUR_TEST_MODELS_UNSET\n",
            "E-AGT-001",
            "not set",
        ),
        (
            "  api_key_env: MUR_TEST_MODELS_EMPTY\n",
            "E-AGT-001",
            "empty",
        ),
        ("  driver: driver.wasm\n", "E-AGT-002", "cannot load driver"),
        ("  ca_file: missing.pem\n", "E-AGT-003", "missing.pem"),
    ];
    for (extra, code, says) in cases {
        let w = World::new();
        let team = w
            .team(&http_agent(base, extra), &http_agent(base, ""))
            .await;
        let mut run = w.mur(&team.join("lead"), &["run", "--json", "--task", "x"]);
        run.env("MUR_TEST_MODELS_EMPTY", "");
        let out = run.output().await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{code}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{code}: a readiness line was printed"
        );
        assert!(
            stderr.contains(code) && stderr.contains(says),
            "{code}: {stderr}"
        );
        let traces = w.traces();
        assert_eq!(traces.len(), 1);
        let end = traces[0].last().unwrap();
        assert_eq!(
            (&end["type"], &end["error_code"]),
            (&json!("session_end"), &json!(code))
        );
        assert!(!traces[0].iter().any(|r| r["type"] == "a2a_task_received"));
    }
}

/// A formation whose member refuses at start does not launch: E-RUN-045 with the
/// member's own reason.
#[tokio::test(flavor = "multi_thread")]
async fn a_formation_refuses_its_launch_when_a_member_refuses_at_start() {
    let w = World::new();
    let helper = http_agent(
        "http://127.0.0.1:9/v1",
        "  api_key_env: MUR_TEST_MODELS_UNSET\n",
    );
    let team = w.team("agent:\n  transport: builtin\n", &helper).await;
    let out = w
        .mur(&team, &["run", "--roster", "--task", "Say hello."])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("E-RUN-045") && stderr.contains("helper"),
        "{stderr}"
    );
    assert!(
        stderr.contains("E-AGT-001") && stderr.contains("MUR_TEST_MODELS_UNSET"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).starts_with("completed"));
}

/// A formation on the http transport, end to end: lead's model calls helper through
/// call-member, both members' models are the local server, no request body holds a
/// formation token, and each session_end sums its usage.
#[tokio::test(flavor = "multi_thread")]
async fn a_formation_on_http_runs_and_sends_no_token_to_the_model() {
    let call = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "call-member",
            "arguments": json!({"member": "helper", "task": "Say hello."}).to_string()}}]}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}});
    // Lead's first turn calls helper; every later request (helper's turn, lead's
    // turns after) gets an answer.
    let s = Server::start(vec![ok(call), ok(message("hello from the model"))], None).await;
    let w = World::new();
    let agent = http_agent(&s.base, "  temperature: 0\n");
    let team = w.team(&agent, &agent).await;
    let out = w
        .mur(&team, &["run", "--roster", "--task", "Say hello."])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello from the model"));
    let bodies = s.bodies();
    assert!(bodies.len() >= 3, "{bodies:?}");
    assert!(bodies.iter().all(|b| b["temperature"] == 0));
    let traces = w.traces();
    let lead = traces
        .iter()
        .find(|t| t[0]["formation_member"] == "lead")
        .expect("lead's trace");
    assert!(lead.iter().any(|r| r["type"] == "member_answer"));
    let end = lead.last().unwrap();
    assert_eq!(end["type"], "session_end");
    let sum: u64 = lead
        .iter()
        .filter(|r| r["type"] == "model_request")
        .filter_map(|r| r["usage"]["total_tokens"].as_u64())
        .sum();
    assert!(sum >= 25 + 14, "{sum}");
    assert_eq!(end["usage"]["total_tokens"], sum);
}

/// An SSE response's events (`data:` lines as JSON), read until `done` says so.
async fn read_sse(
    resp: &mut reqwest::Response,
    events: &mut Vec<Value>,
    buf: &mut String,
    done: impl Fn(&[Value]) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(events) {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, resp.chunk())
            .await
            .unwrap_or_else(|_| panic!("the awaited events within 30 s: {events:?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the stream ended: {events:?}"));
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            for line in event.lines() {
                if let Some(data) = line.strip_prefix("data:") {
                    events.push(serde_json::from_str(data.trim()).unwrap());
                }
            }
        }
    }
}

fn partial_text(events: &[Value], at: &str) -> String {
    events
        .iter()
        .filter_map(|e| e.pointer(at))
        .filter(|u| u["artifact"]["name"] == "partial output")
        .map(|u| u["artifact"]["parts"][0]["text"].as_str().unwrap_or(""))
        .collect()
}

/// With `stream: true`, the model's text shows through SubscribeToTask and
/// murmur.WatchSession as TaskArtifactUpdateEvents while the model still streams.
#[tokio::test(flavor = "multi_thread")]
async fn streamed_text_is_seen_through_subscribe_to_task_and_watch_session_as_it_comes() {
    let d = |text: &str| json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let gate = Arc::new(tokio::sync::Notify::new());
    let s = Server::start(
        vec![Act::Gated(
            vec![d("Hel"), d("lo ")],
            gate.clone(),
            vec![d("world")],
        )],
        None,
    )
    .await;
    let w = World::new();
    w.capsule("streamer", &http_agent(&s.base, "  stream: true\n"))
        .await;
    let mut child = w
        .mur(
            &w.proj(),
            &[
                "run",
                "--capsule",
                "local/streamer",
                "--capsule-version",
                "1.0.0",
                "--json",
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(30),
        tokio::io::AsyncBufReadExt::read_line(&mut stdout, &mut line),
    )
    .await
    .expect("a readiness line within 30 s")
    .unwrap();
    let ready: Value = serde_json::from_str(&line).unwrap();
    let (id, door) = (
        ready["session_id"].as_str().unwrap(),
        ready["door"].as_str().unwrap(),
    );
    let token =
        std::fs::read_to_string(w.home().join(format!(".murmur/running/{id}.token"))).unwrap();
    let token = token.trim();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let call = |method: &str, params: Value| {
        client
            .post(format!("{door}/"))
            .bearer_auth(token)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
    };
    let mut watch = call("murmur.WatchSession", json!({})).await.unwrap();
    let sent: Value = call(
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "greet"}]},
               "configuration": {"returnImmediately": true}}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let task_id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let mut sub = call("SubscribeToTask", json!({"id": task_id}))
        .await
        .unwrap();
    let (mut events, mut buf) = (Vec::new(), String::new());
    // "Hel" shows while the model is held mid-answer.
    read_sse(&mut sub, &mut events, &mut buf, |e| {
        partial_text(e, "/result/artifactUpdate") == "Hel"
    })
    .await;
    assert_eq!(events[0]["result"]["task"]["id"], task_id.as_str());
    gate.notify_one();
    read_sse(&mut sub, &mut events, &mut buf, |e| {
        e.iter().any(|e| {
            e.pointer("/result/statusUpdate/status/state") == Some(&json!("TASK_STATE_COMPLETED"))
        })
    })
    .await;
    assert_eq!(
        partial_text(&events, "/result/artifactUpdate"),
        "Hello world"
    );
    let updates: Vec<&Value> = events
        .iter()
        .filter_map(|e| e.pointer("/result/artifactUpdate"))
        .collect();
    assert_eq!(updates[0]["artifact"]["artifactId"], "partial-1");
    assert!(updates[0].get("append").is_none() && updates[1]["append"] == true);
    assert_eq!(updates.last().unwrap()["lastChunk"], true);
    let (mut watched, mut wbuf) = (Vec::new(), String::new());
    // The partial text, then the turn's model_request record, in that order.
    read_sse(&mut watch, &mut watched, &mut wbuf, |e| {
        e.iter().any(|e| e["result"]["type"] == "model_request")
    })
    .await;
    assert_eq!(
        partial_text(&watched, "/result/artifactUpdate"),
        "Hello world"
    );
    call("murmur.StopSession", json!({})).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the session ends within 30 s")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    s.bodies();
}

/// `SSL_CERT_FILE` adds its CA to the public roots, in a real session; without it the
/// same server's certificate is refused, and a file that does not load is E-AGT-003.
#[tokio::test(flavor = "multi_thread")]
async fn ssl_cert_file_trusts_a_private_ca_in_a_real_session() {
    let ours = ca("our CA");
    let s = Server::start(
        vec![ok(message("trusted"))],
        Some(server_tls(&ours, &["127.0.0.1"])),
    )
    .await;
    let w = World::new();
    let pem = write_pem(w.dir.path(), &ours.pem);
    w.capsule("tls", &http_agent(&s.base, "  max_retries: 0\n"))
        .await;

    let (code, stdout, stderr) = w.run_task("tls", &[("SSL_CERT_FILE", &pem)]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("trusted"), "{stdout}");

    let (code, stdout, stderr) = w.run_task("tls", &[]).await;
    assert_ne!(code, Some(0), "{stdout}");
    assert!(
        format!("{stdout}{stderr}").contains("certificate error"),
        "{stdout}{stderr}"
    );

    let missing = w.dir.path().join("nope.pem");
    let (code, stdout, stderr) = w.run_task("tls", &[("SSL_CERT_FILE", &missing)]).await;
    assert_eq!(code, Some(1));
    assert!(
        stdout.is_empty() && stderr.contains("E-AGT-003"),
        "{stderr}"
    );
    assert_eq!(s.bodies().len(), 1);
}

/// The key goes to the server as a bearer token and into no trace record, even when
/// the model repeats it.
#[tokio::test(flavor = "multi_thread")]
async fn the_key_is_sent_as_a_bearer_token_and_never_traced() {
    let key = "sk-test-0123456789abcdef";
    let s = Server::start(vec![ok(message(&format!("your key is {key}")))], None).await;
    let w = World::new();
    w.capsule(
        "keyed",
        &http_agent(&s.base, "  api_key_env: MUR_TEST_MODELS_KEY\n"),
    )
    .await;
    let capsule_args = [
        "run",
        "--capsule",
        "local/keyed",
        "--capsule-version",
        "1.0.0",
        "--task",
        "hi",
    ];
    let out = w
        .mur(&w.proj(), &capsule_args)
        .env("MUR_TEST_MODELS_KEY", key)
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(*s.auth.lock().unwrap(), [Some(format!("Bearer {key}"))]);
    let traces = w.traces();
    assert_eq!(traces.len(), 1);
    let text = serde_json::to_string(&traces[0]).unwrap();
    assert!(!text.contains(key), "the key is in the trace");
    assert!(traces[0].iter().any(|r| r["type"] == "model_request"));
}
