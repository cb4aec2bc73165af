//! A real door on 127.0.0.1 with an echo runner, and a client that speaks to it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mur::a2a::Artifact;
use mur::credential::FormationKey;
use mur::door::{
    Acceptance, DeclaredToken, Door, DoorConfig, FormationMember, Limits, WorkReceiver,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

pub const OPERATOR: &str = "op-0123456789abcdef";
pub const DECLARED: &str = "declared-secret-value";
pub const SESSION: &str = "ses_0199c4e2f1b7712a9d3e4f5061728394";
/// This door's roster name in formation fixtures.
pub const ME: &str = "coder";

/// How the door under test is set up.
#[derive(Clone)]
pub struct Setup {
    pub public: bool,
    pub accept_peer_tasks: bool,
    pub formation: bool,
    pub acceptance: Acceptance,
    pub limits: Limits,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            public: false,
            accept_peer_tasks: true,
            formation: true,
            acceptance: Acceptance::Queue { depth: 16 },
            limits: Limits::default(),
        }
    }
}

pub struct Fixture {
    pub door: Door,
    pub url: String,
    pub client: reqwest::Client,
    /// The formation's signing key, as the launcher holds it.
    pub key: FormationKey,
    /// Each permit lets one `hold` task finish.
    pub gate: Arc<Semaphore>,
    pub stops: Arc<AtomicUsize>,
    pub _files: tempfile::TempDir,
}

pub async fn start(setup: Setup) -> Fixture {
    let key = FormationKey::mint().expect("random bytes");
    let files = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(files.path().join("out")).unwrap();
    std::fs::write(files.path().join("out/result.txt"), "done\n").unwrap();
    let stops = Arc::new(AtomicUsize::new(0));
    let mut config = DoorConfig::new(SESSION, OPERATOR);
    config.card.name = "echo".into();
    config.public = setup.public;
    config.accept_peer_tasks = setup.accept_peer_tasks;
    config.bearer_tokens = vec![DeclaredToken {
        env_name: "CLIENT_TOKEN".into(),
        token: DECLARED.into(),
    }];
    config.formation = setup.formation.then(|| FormationMember {
        verify_key: key.verify_key(),
        member: ME.parse().unwrap(),
    });
    config.acceptance = setup.acceptance;
    config.files_root = Some(files.path().to_path_buf());
    let counter = stops.clone();
    config.on_stop = Some(Arc::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    }));
    config.limits = setup.limits;
    let (door, work) = Door::start(config).await.expect("door starts");
    let gate = Arc::new(Semaphore::new(0));
    tokio::spawn(echo(work, gate.clone()));
    Fixture {
        url: door.url(),
        door,
        client: mur::door::client().build().unwrap(),
        key,
        gate,
        stops,
        _files: files,
    }
}

/// The echo runner: one task at a time, as a session runs them.
/// `hold…` waits for a gate permit (or cancellation), `ask:<q>` asks for input and
/// echoes the reply, `fail` fails, `drop` drops the task unended, anything else is
/// echoed as an artifact.
async fn echo(mut work: WorkReceiver, gate: Arc<Semaphore>) {
    while let Some(w) = work.next().await {
        let h = w.handle.clone();
        let text = w.message.text_content();
        let _ = h.working();
        if text.starts_with("hold") {
            tokio::select! {
                p = gate.acquire() => p.expect("gate open").forget(),
                _ = w.cancel.cancelled() => continue,
            }
        }
        if let Some(question) = text.strip_prefix("ask:") {
            if let Ok(reply) = h.input_required(question).await {
                let _ = h.complete(format!("echo: {}", reply.text_content()));
            }
            continue;
        }
        if text == "drop" {
            continue; // a runner bug: the task is dropped without being ended
        }
        if text == "fail" {
            let _ = h.fail("asked to fail");
            continue;
        }
        // The artifact's description names who started the task, for the tests.
        let mut artifact = Artifact::text("echo", format!("echo: {text}"));
        artifact.description = Some(w.caller.to_string());
        let _ = h.artifact(artifact, false, true);
        let _ = h.complete(format!("echo: {text}"));
    }
}

pub fn message(text: &str) -> Value {
    json!({"message": {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]}})
}

impl Fixture {
    pub fn token(&self, from: &str, to: &str) -> String {
        self.key.issue(from, to).expose().to_string()
    }

    /// A token for this door from `from`.
    pub fn peer(&self, from: &str) -> String {
        self.token(from, ME)
    }

    /// POSTs a JSON-RPC call; returns the HTTP status and the body.
    pub async fn call(
        &self,
        token: Option<&str>,
        method: &str,
        params: Value,
    ) -> (StatusCode, Value) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut req = self.client.post(&self.url).json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.expect("door answers");
        let status = resp.status();
        let value = resp.json::<Value>().await.unwrap_or(Value::Null);
        (status, value)
    }

    /// A call that must succeed; returns its `result`.
    pub async fn ok(&self, token: Option<&str>, method: &str, params: Value) -> Value {
        let (status, body) = self.call(token, method, params).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body.get("error").is_none(), "{method} failed: {body}");
        body["result"].clone()
    }

    /// A call that must fail with a JSON-RPC error; returns its code.
    pub async fn err_code(&self, token: Option<&str>, method: &str, params: Value) -> i64 {
        let (status, body) = self.call(token, method, params).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error: {body}"))
    }

    /// Sends `text` without waiting; returns the task id.
    pub async fn start_task(&self, token: Option<&str>, text: &str) -> String {
        let mut params = message(text);
        params["configuration"] = json!({"returnImmediately": true});
        let r = self.ok(token, "SendMessage", params).await;
        r["task"]["id"].as_str().expect("task id").to_string()
    }

    /// Opens an SSE stream: when this returns, the door has subscribed.
    pub async fn open_stream(
        &self,
        token: Option<&str>,
        method: &str,
        params: Value,
    ) -> reqwest::Response {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut req = self.client.post(&self.url).json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.expect("door answers");
        assert_eq!(resp.status(), StatusCode::OK);
        let ctype = resp.headers()["content-type"].to_str().unwrap().to_string();
        assert!(ctype.starts_with("text/event-stream"), "{ctype}");
        resp
    }

    /// Reads an SSE response to its end (within 10 s); each `data:` parsed.
    pub async fn stream(&self, token: Option<&str>, method: &str, params: Value) -> Vec<Value> {
        read_stream(self.open_stream(token, method, params).await).await
    }

    /// Waits (up to 10 s) until the task reaches `state`.
    pub async fn wait_state(&self, id: &str, state: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let t = self.ok(Some(OPERATOR), "GetTask", json!({"id": id})).await;
            if t["status"]["state"] == state {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "task {id} never reached {state}: {t}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

pub async fn read_stream(resp: reqwest::Response) -> Vec<Value> {
    let text = tokio::time::timeout(Duration::from_secs(10), resp.text())
        .await
        .expect("stream ends within 10 s")
        .expect("stream reads");
    parse_sse(&text)
}

impl Fixture {
    /// Waits (up to 10 s) until some task the operator sees is in `state`.
    pub async fn wait_state_any(&self, state: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let l = self
                .ok(Some(OPERATOR), "ListTasks", json!({"status": state}))
                .await;
            if l["totalSize"].as_u64() > Some(0) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no task reached {state}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

pub fn parse_sse(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            (!data.is_empty())
                .then(|| serde_json::from_str(&data.join("\n")).expect("event is JSON"))
        })
        .collect()
}
