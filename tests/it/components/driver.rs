//! `agent.driver` (docs/agent.md, "Drivers"): the examples/anthropic capsule, its
//! driver built from components/drivers/anthropic, in real `mur run` sessions against
//! a local server on 127.0.0.1 that speaks the Anthropic Messages API.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::routing::post;

use super::*;

/// A key long enough for the trace to refuse it (and the test to find it).
const KEY: &str = "sk-ant-test-0123456789abcdef";

/// One request the server received: its path, the headers that matter, its body.
#[derive(Debug, Clone)]
struct Got {
    path: String,
    headers: HeaderMap,
    body: Value,
    /// The body's length in bytes.
    len: usize,
}

/// A Messages API server: request `n` gets `script[n]` (the last repeats).
struct Anthropic {
    base: String,
    got: Arc<Mutex<Vec<Got>>>,
}

type Shared = (Arc<Mutex<Vec<Got>>>, Arc<Vec<(u16, Value)>>);

impl Anthropic {
    async fn start(script: Vec<(u16, Value)>) -> Anthropic {
        let got = Arc::new(Mutex::new(Vec::new()));
        let state: Shared = (got.clone(), Arc::new(script));
        let app = axum::Router::new()
            .fallback(post(
                |State((got, script)): State<Shared>,
                 uri: Uri,
                 headers: HeaderMap,
                 body: String| async move {
                    let mut got = got.lock().unwrap();
                    got.push(Got {
                        path: uri.path().to_string(),
                        headers,
                        body: serde_json::from_str(&body).unwrap_or(Value::Null),
                        len: body.len(),
                    });
                    let (status, answer) = script[(got.len() - 1).min(script.len() - 1)].clone();
                    (
                        StatusCode::from_u16(status).unwrap(),
                        [("content-type", "application/json")],
                        answer.to_string(),
                    )
                },
            ))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Anthropic {
            base: format!("http://{addr}"),
            got,
        }
    }

    fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }
}

fn tool_use(id: &str, text: &str) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "text", "text": "Let me echo that."},
                    {"type": "tool_use", "id": id, "name": "echo", "input": {"text": text}}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 40, "output_tokens": 12}})
}

fn end_turn(text: &str) -> Value {
    json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 60, "output_tokens": 5}})
}

fn overloaded() -> Value {
    json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
}

/// examples/anthropic as a capsule folder: its murmur.yaml with base_url set to `base`
/// and network.allow to `allow`, its driver and tool built from components/.
fn example(w: &World, base: &str, allow: &str) -> PathBuf {
    share_cache(w);
    let dir = w.path("anthropic");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/anthropic");
    let text = std::fs::read_to_string(root.join("murmur.yaml")).unwrap();
    let patched = text
        .replace(
            "base_url: https://api.anthropic.com",
            &format!("base_url: {base}"),
        )
        .replace("      - api.anthropic.com", &format!("      - {allow}"));
    assert!(
        patched.contains(base) && patched.contains(allow),
        "the example moved"
    );
    for sub in ["driver", "tools"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(dir.join("murmur.yaml"), patched).unwrap();
    std::fs::copy(guest("driver-anthropic"), dir.join("driver/anthropic.wasm")).unwrap();
    std::fs::copy(guest("tool-echo"), dir.join("tools/echo.wasm")).unwrap();
    dir
}

/// `mur run --task` in the capsule folder with the key set.
fn run(w: &World, dir: &Path, task: &str) -> std::process::Output {
    w.mur_in(dir)
        .args(["run", "--task", task])
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap()
}

/// No file under HOME (records, trace, logs, caches) holds the key.
fn assert_no_key_under(dir: &Path) {
    for f in crate::support::files_under(dir) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "{} holds the API key",
            f.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_anthropic_example_drives_a_tool_use_then_ends_its_turn() {
    let server = Anthropic::start(vec![
        (529, overloaded()),
        (200, tool_use("toolu_1", "hi there")),
        (200, end_turn("All done.")),
    ])
    .await;
    let w = World::new();
    let dir = example(&w, &server.base, "localhost");
    let (w, out) = tokio::task::spawn_blocking(move || {
        let out = run(&w, &dir, "Echo hi there.");
        (w, out)
    })
    .await
    .unwrap();
    let trace = ran(&w, &out);
    assert_eq!(final_state(&trace), "completed");
    assert_eq!(results(&trace)["toolu_1"], (false, "hi there".to_string()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("All done."), "{stdout}");

    let got = server.got();
    assert_eq!(got.len(), 3, "{got:?}");
    for g in &got {
        assert_eq!(g.path, "/v1/messages");
        let h = |k: &str| g.headers.get(k).map(|v| v.to_str().unwrap().to_string());
        assert_eq!(h("x-api-key").as_deref(), Some(KEY));
        assert_eq!(h("anthropic-version").as_deref(), Some("2023-06-01"));
        assert_eq!(h("content-type").as_deref(), Some("application/json"));
        assert_eq!(h("authorization"), None);
        // Sent with its length, not chunked.
        assert_eq!(h("content-length"), Some(g.len.to_string()));
    }
    // The overloaded try was tried again with the same body.
    assert_eq!(got[0].body, got[1].body);
    let first = &got[1].body;
    assert_eq!(first["model"], "claude-sonnet-4-5");
    assert_eq!(first["max_tokens"], 1024);
    assert!(first["system"].as_str().unwrap().contains("anthropic"));
    assert_eq!(
        first["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Echo hi there."}]}])
    );
    let echo = &first["tools"][0];
    assert_eq!(echo["name"], "echo");
    assert_eq!(echo["description"], "Returns the text it is given.");
    assert_eq!(echo["input_schema"]["required"], json!(["text"]));
    let second = got[2].body["messages"].as_array().unwrap();
    assert_eq!(second.len(), 3, "{second:?}");
    assert_eq!(
        second[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me echo that."},
            {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "hi there"}}]})
    );
    assert_eq!(
        second[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
            "content": "hi there", "is_error": false}]})
    );

    // Each try is a model_request: the 529 retried, then two answers with their usage.
    let tries: Vec<&Value> = trace
        .iter()
        .filter(|r| r["type"] == "model_request")
        .collect();
    assert_eq!(tries.len(), 3, "{tries:?}");
    assert_eq!(
        (&tries[0]["result"], &tries[0]["status"]),
        (&json!("retrying"), &json!(529))
    );
    assert!(
        tries[0]["error"]
            .as_str()
            .unwrap()
            .contains("overloaded_error")
    );
    assert_eq!(tries[1]["usage"]["prompt_tokens"], 40);
    assert_eq!(tries[2]["usage"]["total_tokens"], 65);

    // The key went only to the server: not to stdout, stderr, or any file.
    assert!(!stdout.contains(KEY) && !String::from_utf8_lossy(&out.stderr).contains(KEY));
    assert_no_key_under(&w.home);
    assert_no_key_under(&w.path("anthropic"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_driver_may_not_reach_a_host_network_allow_does_not_list() {
    let server = Anthropic::start(vec![(200, end_turn("unreachable"))]).await;
    let w = World::new();
    // As the example ships: only api.anthropic.com may be reached.
    let dir = example(&w, &server.base, "api.anthropic.com");
    let (w, out) = tokio::task::spawn_blocking(move || {
        let out = run(&w, &dir, "Say hi.");
        (w, out)
    })
    .await
    .unwrap();
    assert!(server.got().is_empty(), "the server was reached");
    let ids = w.sessions();
    let trace = w.trace(ids.last().expect("a session"));
    assert_eq!(
        final_state(&trace),
        "failed",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tries: Vec<&Value> = trace
        .iter()
        .filter(|r| r["type"] == "model_request")
        .collect();
    // Refused: final at once, not tried again.
    assert_eq!(tries.len(), 1, "{tries:?}");
    assert_eq!(tries[0]["result"], "failed");
    let error = tries[0]["error"].as_str().unwrap();
    assert!(error.contains("network.allow"), "{error}");
    assert_no_key_under(&w.home);
}

#[test]
fn a_driver_that_is_not_a_driver_component_refuses_the_start_and_the_install() {
    let w = World::new();
    let dir = example(&w, "http://127.0.0.1:9", "localhost");
    // A tool component where the driver should be.
    std::fs::copy(guest("tool-echo"), dir.join("driver/anthropic.wasm")).unwrap();
    for args in [&["run", "--task", "x"][..], &["install", "."][..]] {
        let out = w
            .mur_in(&dir)
            .args(args)
            .env("ANTHROPIC_API_KEY", KEY)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("E-CMP-002")
                && stderr.contains("model driver")
                && stderr.contains("driver/anthropic.wasm"),
            "{args:?}: {stderr}"
        );
    }
    // E-AGT-002 (drivers refused) is retired.
    let explain = w.mur().args(["explain", "E-AGT-002"]).output().unwrap();
    assert_eq!(explain.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&explain.stderr).contains("no code `E-AGT-002`"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_error_that_echoes_the_key_is_redacted_and_not_tried_again() {
    let refused = json!({"type": "error", "error": {"type": "authentication_error",
        "message": format!("invalid x-api-key: {KEY}")}});
    let server = Anthropic::start(vec![(401, refused)]).await;
    let w = World::new();
    let dir = example(&w, &server.base, "localhost");
    let (w, out) = tokio::task::spawn_blocking(move || {
        let out = run(&w, &dir, "Say hi.");
        (w, out)
    })
    .await
    .unwrap();
    assert_eq!(server.got().len(), 1, "a 401 was tried again");
    let ids = w.sessions();
    let trace = w.trace(ids.last().expect("a session"));
    assert_eq!(final_state(&trace), "failed");
    let tries: Vec<&Value> = trace
        .iter()
        .filter(|r| r["type"] == "model_request")
        .collect();
    assert_eq!(tries.len(), 1, "{tries:?}");
    assert_eq!(
        (&tries[0]["result"], &tries[0]["status"]),
        (&json!("failed"), &json!(401))
    );
    let error = tries[0]["error"].as_str().unwrap();
    assert!(
        error.contains("401 (authentication_error): invalid x-api-key: [redacted]"),
        "{error}"
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(KEY), "{all}");
    assert_no_key_under(&w.home);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_results_of_one_turn_go_back_in_one_user_message() {
    let two = json!({"id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_a", "name": "echo", "input": {"text": "a"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "nope", "input": {}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}});
    let server = Anthropic::start(vec![(200, two), (200, end_turn("ok"))]).await;
    let w = World::new();
    let dir = example(&w, &server.base, "localhost");
    let (w, out) = tokio::task::spawn_blocking(move || {
        let out = run(&w, &dir, "Two calls.");
        (w, out)
    })
    .await
    .unwrap();
    assert_eq!(final_state(&ran(&w, &out)), "completed");
    let got = server.got();
    assert_eq!(got.len(), 2, "{got:?}");
    let messages = got[1].body["messages"].as_array().unwrap().clone();
    // user, assistant (two tool_use blocks, no empty text block), user (both results).
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[1]["content"].as_array().unwrap().len(), 2);
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(
        results[0],
        json!({"type": "tool_result", "tool_use_id": "toolu_a", "content": "a", "is_error": false})
    );
    assert_eq!(
        (&results[1]["tool_use_id"], &results[1]["is_error"]),
        (&json!("toolu_b"), &json!(true))
    );
}
