//! A call-member round trip on loopback (goal: under 5 ms), beside a bare HTTP round
//! trip in the same run; and a WASM component's call of the same callee at its
//! virtual address (`http://coder.formation.invalid`), through murmur:message/send and
//! through a wasi:http POST of SendMessage (goal: within 1.5× of call-member).
//!
//! `cargo bench --bench call_member` (MUR_BENCH_ITERS sets the iterations, default
//! 2000). The round trip is what a caller pays for one call: `Calls::call` (SendMessage
//! with returnImmediately at a real door, formation token) until `Calls::wait_all`
//! holds the answer (SubscribeToTask, then GetTask). The callee answers at once. A
//! component's round trip is one call of the probe tool (tests' guest, a fresh instance
//! from the InstancePre, as every tool call is) that makes the call and returns the
//! answer.

// A bench is a program that prints its figures; it uses some of the dev-dependencies.
#![allow(
    unused_crate_dependencies,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use mur::call_member::{CallConfig, Calls, CallsSpec, Peers, Trust};
use mur::credential::FormationKey;
use mur::door::{Acceptance, Door, DoorConfig, FormationMember, WorkReceiver};
use tokio_util::sync::CancellationToken;

use mur_test::guests;
use mur_test::measure;

fn main() {
    let iters: usize = measure::knob("MUR_BENCH_ITERS", 2000, 20);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let bare = bare_http(iters).await;
        report(
            "bare",
            "bare HTTP round trip (reqwest -> axum, keep-alive)",
            &bare,
        );
        let (door, peers) = callee().await;
        let call = call_member(iters, &peers).await;
        let base = report(
            "call-member",
            "call-member round trip (call -> answer back)",
            &call,
        );
        let tmp = tempfile::tempdir().unwrap();
        for (via, label, op) in [
            (
                "murmur:message/send",
                "component murmur:message/send to the virtual address",
                send_op(),
            ),
            (
                "wasi:http",
                "component wasi:http POST SendMessage to the virtual address",
                post_op(),
            ),
        ] {
            let took = component(iters, &peers, tmp.path(), op).await;
            let median = report(via, label, &took);
            println!(
                "  {:.2}x call-member's median (goal: within 1.5x)",
                median.as_secs_f64() / base.as_secs_f64()
            );
        }
        drop(door);
    });
}

/// Prints and records the samples' figures; returns their median.
fn report(via: &str, label: &str, samples: &[Duration]) -> Duration {
    measure::summary(
        "call_member",
        "round_trip",
        serde_json::json!({"via": via}),
        label,
        samples,
    )
}

async fn bare_http(iters: usize) -> Vec<Duration> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let app = Router::new().route(
        "/",
        post(|body: String| async move { format!("{{\"len\":{}}}", body.len()) }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = mur::door::client().build().unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#;
    let mut out = Vec::with_capacity(iters);
    for i in 0..iters + 50 {
        let start = Instant::now();
        let resp = client.post(&url).body(body).send().await.unwrap();
        let _ = resp.bytes().await.unwrap();
        if i >= 50 {
            out.push(start.elapsed());
        }
    }
    out
}

async fn echo(mut work: WorkReceiver) {
    while let Some(w) = work.next().await {
        let text = w.message.text_content();
        let _ = w.handle.working();
        let _ = w.handle.complete(format!("done: {text}"));
    }
}

/// coder's door, answering every task at once, and planner's peers (it may call coder).
async fn callee() -> (Door, Arc<Peers>) {
    let key = FormationKey::mint().unwrap();
    let mut config = DoorConfig::new("ses_bench", "operator-token-0123456789");
    config.public = false;
    config.accept_peer_tasks = true;
    config.formation = Some(FormationMember {
        verify_key: key.verify_key(),
        member: "coder".parse().unwrap(),
    });
    config.acceptance = Acceptance::Single;
    config.limits.max_tasks = 100_000;
    let (door, work) = Door::start(config).await.unwrap();
    tokio::spawn(echo(work));
    let token = key.issue("planner", "coder");
    let peers = Peers::new(
        vec![("coder".parse().unwrap(), token)],
        vec!["localhost".into()],
    )
    .unwrap();
    peers.add_doors([("coder".parse().unwrap(), door.url())].into());
    (door, Arc::new(peers))
}

async fn call_member(iters: usize, peers: &Arc<Peers>) -> Vec<Duration> {
    let cancel = CancellationToken::new();
    let mut out = Vec::with_capacity(iters);
    for i in 0..iters + 50 {
        let calls = Calls::new(CallsSpec {
            task_id: format!("t{i}").into(),
            peers: peers.clone(),
            trace: None,
            trust: Trust::Trusted,
            config: CallConfig::default(),
            span: None,
            session_deadline: None,
            chain: None,
        });
        let start = Instant::now();
        let told = calls.call("c1", "coder", "write it").await;
        let answers = calls.wait_all(&cancel).await;
        let took = start.elapsed();
        assert!(!told.is_error, "{}", told.output);
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].text, "done: write it");
        if i >= 50 {
            out.push(took);
        }
    }
    out
}

fn send_op() -> serde_json::Value {
    serde_json::json!({"op": "send", "url": "http://coder.formation.invalid", "text": "write it"})
}

fn post_op() -> serde_json::Value {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER",
        "parts": [{"text": "write it"}]}}});
    serde_json::json!({"op": "request", "scheme": "http",
        "authority": "coder.formation.invalid", "path": "/",
        "headers": [["a2a-version", "1.0"], ["content-type", "application/json"]],
        "body": body.to_string()})
}

/// `iters` calls of the probe tool with `op` (each a call of coder), in a planner
/// capsule whose network reaches localhost.
async fn component(
    iters: usize,
    peers: &Arc<Peers>,
    tmp: &std::path::Path,
    op: serde_json::Value,
) -> Vec<Duration> {
    use mur::agent::ToolCall;
    use mur::component::{Catalog, Grants, Host};
    let dir = tmp.join("planner");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::copy(guests::guest("test-probe"), dir.join("tools/probe.wasm")).unwrap();
    std::fs::write(
        dir.join("murmur.yaml"),
        "name: planner\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n\
         capabilities:\n  network:\n    allow: [localhost]\n\
         tools:\n  - name: probe\n    path: tools/probe.wasm\n    description: p\n",
    )
    .unwrap();
    let m = mur::manifest::load(&dir.join("murmur.yaml")).unwrap();
    let grants = Grants::of(&m, &dir, None).with_peers(Some(peers.clone()));
    let host = Host::new(Catalog::open(&dir, &m).unwrap(), grants).with_cache(tmp.join("cache"));
    let calls = Calls::new(CallsSpec {
        task_id: "t1".into(),
        peers: peers.clone(),
        trace: None,
        trust: Trust::Trusted,
        config: CallConfig::default(),
        span: None,
        session_deadline: None,
        chain: None,
    });
    let tools = host.tools(Trust::Trusted, Some(calls)).await;
    let call = ToolCall {
        id: "c1".into(),
        name: "probe".into(),
        arguments: op,
    };
    let mut out = Vec::with_capacity(iters);
    for i in 0..iters + 50 {
        let start = Instant::now();
        let got = tools[0].call(&call).await;
        let took = start.elapsed();
        assert!(!got.is_error, "{}", got.output);
        assert!(got.output.contains("done: write it"), "{}", got.output);
        if i >= 50 {
            out.push(took);
        }
    }
    out
}
