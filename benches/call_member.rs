//! A call-member round trip on loopback (goal: under 5 ms), beside a bare HTTP round
//! trip in the same run.
//!
//! `cargo bench --bench call_member` (MUR_BENCH_ITERS sets the iterations, default
//! 2000). The round trip is what a caller pays for one call: `Calls::call` (SendMessage
//! with returnImmediately at a real door, formation token) until `Calls::wait_all`
//! holds the answer (SubscribeToTask, then GetTask). The callee answers at once.

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

#[path = "support/measure.rs"]
mod measure;

fn main() {
    let iters: usize = measure::knob("MUR_BENCH_ITERS", 2000, 20);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let bare = bare_http(iters).await;
        report("bare HTTP round trip (reqwest -> axum, keep-alive)", &bare);
        let call = call_member(iters).await;
        report("call-member round trip (call -> answer back)", &call);
    });
}

fn report(label: &str, samples: &[Duration]) {
    let mut s = samples.to_vec();
    s.sort();
    let at = |q: f64| s[((s.len() as f64 - 1.0) * q) as usize];
    let mean = s.iter().sum::<Duration>() / s.len() as u32;
    println!(
        "{label}: n={} mean {:.3} ms, median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms",
        s.len(),
        mean.as_secs_f64() * 1e3,
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3
    );
}

async fn bare_http(iters: usize) -> Vec<Duration> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let app = Router::new().route(
        "/",
        post(|body: String| async move { format!("{{\"len\":{}}}", body.len()) }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
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

async fn call_member(iters: usize) -> Vec<Duration> {
    let key = FormationKey::mint().unwrap();
    let mut config = DoorConfig::new("ses_bench", "operator-token-0123456789");
    config.public = false;
    config.accept_peer_tasks = true;
    config.formation = Some(FormationMember {
        verify_key: key.verify_key(),
        member: "coder".parse().unwrap(),
    });
    config.acceptance = Acceptance::Single;
    config.limits.max_tasks = 1000;
    let (door, work) = Door::start(config).await.unwrap();
    tokio::spawn(echo(work));
    let token = key.issue("planner", "coder");
    let peers = Peers::new(
        vec![("coder".parse().unwrap(), token)],
        vec!["localhost".into()],
    )
    .unwrap();
    peers.add_doors([("coder".parse().unwrap(), door.url())].into());
    let peers = Arc::new(peers);
    let cancel = CancellationToken::new();
    let mut out = Vec::with_capacity(iters);
    for i in 0..iters + 50 {
        let calls = Calls::new(CallsSpec {
            task_id: format!("t{i}").into(),
            peers: peers.clone(),
            trace: None,
            trust: Trust::Trusted,
            config: CallConfig::default(),
            session_deadline: None,
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
