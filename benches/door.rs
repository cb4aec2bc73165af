//! Door throughput on loopback, and what a formation token check costs.
//!
//! `cargo bench --bench door` (MUR_BENCH_SECS sets each run's length, default 3).
//! Client and door share the machine, so requests/s include the client's own cost.

// A bench is a program that prints its figures; it uses some of the dev-dependencies.
#![allow(
    unused_crate_dependencies,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mur::a2a::Artifact;
use mur::credential::{FormationKey, Verifier};
use mur::door::{Acceptance, Door, DoorConfig, FormationMember, Limits, WorkReceiver};
use serde_json::json;

use mur_test::measure;

const CONCURRENCY: usize = 32;

fn main() {
    let run = Duration::from_secs_f64(measure::knob("MUR_BENCH_SECS", 3.0, 0.2));
    token_checks();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (rps, cpu) = baseline(run).await;
        println!("baseline: bare axum route, same client: {rps:.0} requests/s, {cpu:.1} µs CPU per request (client + server)");
        for cache in [true, false] {
            let label = if cache { "cached" } else { "uncached" };
            let (rps, cpu) = door_rps("GetTask", cache, run).await;
            println!(
                "door GetTask, formation token ({label} verify): {rps:.0} requests/s, {cpu:.1} µs CPU per request (client + door)"
            );
        }
        let (rps, cpu) = door_rps("SendMessage", true, run).await;
        println!(
            "door SendMessage (blocking, echo runner), formation token: {rps:.0} requests/s, {cpu:.1} µs CPU per request (client + door)"
        );
    });
}

/// The per-request cost of checking a formation token, with and without the
/// verified-token cache, and the launcher's cost of issuing one.
fn token_checks() {
    let key = FormationKey::mint().unwrap();
    let token = key.issue("planner", "coder");
    for (label, verifier) in [
        ("cached", Verifier::new(key.verify_key(), "coder")),
        (
            "uncached",
            Verifier::without_cache(key.verify_key(), "coder"),
        ),
    ] {
        let n = if label == "cached" { 2_000_000 } else { 20_000 } / measure::sized(1, 1000);
        assert!(verifier.check(token.expose()).is_ok());
        let start = Instant::now();
        for _ in 0..n {
            std::hint::black_box(verifier.check(std::hint::black_box(token.expose())).is_ok());
        }
        let per = start.elapsed().as_nanos() as f64 / n as f64;
        println!("token check ({label}): {:.2} µs per request", per / 1000.0);
        measure::record(
            "door",
            "token_check",
            json!({"cache": label}),
            per / 1000.0,
            "µs",
        );
    }
    // What the launcher pays per edge of the roster: one ed25519 signature.
    let n = 20_000 / measure::sized(1, 1000);
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(key.issue(std::hint::black_box("planner"), "coder"));
    }
    let per = start.elapsed().as_nanos() as f64 / n as f64;
    println!("token issue: {:.2} µs per token", per / 1000.0);
    measure::record("door", "token_issue", json!({}), per / 1000.0, "µs");
}

async fn echo(mut work: WorkReceiver) {
    while let Some(w) = work.next().await {
        let text = w.message.text_content();
        let _ = w.handle.working();
        let _ = w
            .handle
            .artifact(Artifact::text("echo", text.clone()), false, true);
        let _ = w.handle.complete(text);
    }
}

/// This process's user + system CPU time.
fn cpu_time() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    use nix::sys::time::TimeValLike;
    let usage = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage of this process");
    let tv = |t: nix::sys::time::TimeVal| Duration::from_micros(t.num_microseconds() as u64);
    tv(usage.user_time()) + tv(usage.system_time())
}

/// Requests per second, and CPU microseconds per request (client and door together).
async fn door_rps(method: &str, cache: bool, run: Duration) -> (f64, f64) {
    let key = FormationKey::mint().unwrap();
    let mut config = DoorConfig::new("ses_bench", "operator");
    config.public = false;
    config.accept_peer_tasks = true;
    config.formation = Some(FormationMember {
        verify_key: key.verify_key(),
        member: "coder".parse().unwrap(),
    });
    config.acceptance = Acceptance::Queue { depth: 4096 };
    config.limits = Limits {
        cache_verified_tokens: cache,
        ..Limits::default()
    };
    let (door, work) = Door::start(config).await.unwrap();
    tokio::spawn(echo(work));
    let token = key.issue("planner", "coder").expose().to_string();
    let client = mur::door::client().build().unwrap();
    let url = door.url();
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let first: serde_json::Value = client
        .post(&url)
        .bearer_auth(&token)
        .json(&send)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task_id = first["result"]["task"]["id"].as_str().unwrap().to_string();
    let body = if method == "GetTask" {
        json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}})
    } else {
        send
    };
    let result = hammer(&client, &url, &token, &body, run).await;
    door.shutdown().await;
    result
}

/// `CONCURRENCY` clients POST `body` to `url` for `run`; requests/s and CPU µs each.
async fn hammer(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    body: &serde_json::Value,
    run: Duration,
) -> (f64, f64) {
    let body = Arc::new(serde_json::to_vec(body).unwrap());
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + run;
    let mut clients = Vec::new();
    let start = Instant::now();
    let cpu_start = cpu_time();
    for _ in 0..CONCURRENCY {
        let (client, url, token, body, done) = (
            client.clone(),
            url.to_string(),
            token.to_string(),
            body.clone(),
            done.clone(),
        );
        clients.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                let resp = client
                    .post(&url)
                    .bearer_auth(&token)
                    .header("content-type", "application/json")
                    .body(body.as_ref().clone())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(resp.status(), 200);
                let bytes = resp.bytes().await.unwrap();
                assert!(!bytes.windows(8).any(|w| w == b"\"error\":"));
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    let n = done.load(Ordering::Relaxed) as f64;
    let cpu = (cpu_time() - cpu_start).as_secs_f64() * 1e6 / n;
    (n / start.elapsed().as_secs_f64(), cpu)
}

/// The same client against a bare axum route returning a fixed JSON body: what the
/// HTTP stack and the client cost on this machine right now, without the door.
async fn baseline(run: Duration) -> (f64, f64) {
    use axum::routing::post;
    let app = axum::Router::new().route(
        "/",
        post(|| async {
            (
                [("content-type", "application/json")],
                r#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let result = hammer(
        &mur::door::client().build().unwrap(),
        &url,
        "x",
        &json!({"jsonrpc": "2.0"}),
        run,
    )
    .await;
    server.abort();
    result
}
