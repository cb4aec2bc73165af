//! The rightful caller's latency at a real `mur run` session while hostile callers
//! load its door: 10,000 idle keep-alive connections plus 64 callers sending bad
//! tokens as fast as they can. Goal (issue 18): p99 within 2× of the unloaded p99.
//!
//! `cargo bench --bench hostile` (MUR_BENCH_CALLS sets the calls per phase, default 2,000).

// A bench is a program that prints its figures; it uses some of the dev-dependencies.
#![allow(
    unused_crate_dependencies,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use mur_test::clean;
use mur_test::measure;

struct Session(Child);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    let calls: usize = measure::knob("MUR_BENCH_CALLS", 2000, 20);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().to_path_buf();
    let capsule = home.join("src/echo");
    std::fs::create_dir_all(&capsule).unwrap();
    std::fs::write(
        capsule.join("murmur.yaml"),
        "name: echo\nversion: 1.0.0\ndescription: Bench.\nagent:\n  transport: builtin\n\
         network:\n  authentication: {}\n",
    )
    .unwrap();
    mur(&home).arg("install").arg(&capsule).output().unwrap();
    let mut child = mur(&home)
        .args([
            "run",
            "--json",
            "--capsule",
            "local/echo",
            "--capsule-version",
            "1.0.0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let session = Session(child);
    let ready: Value = serde_json::from_str(&line).unwrap();
    let id = ready["session_id"].as_str().unwrap();
    let url = ready["door"].as_str().unwrap().to_string();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let token = std::fs::read_to_string(home.join(format!(".murmur/running/{id}.token")))
        .unwrap()
        .trim()
        .to_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = mur::door::client().build().unwrap();
        let quiet = p99(&client, &url, &token, calls).await;
        println!("rightful SendMessage, unloaded: p99 {quiet:?}");
        let mut idle = Vec::new();
        for _ in 0..measure::sized(10_000, 100) {
            match TcpStream::connect(&addr).await {
                Ok(s) => idle.push(s),
                Err(_) => break,
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(AtomicU64::new(0));
        let mut hammers = Vec::new();
        for _ in 0..64 {
            let (addr, stop, refused) = (addr.clone(), stop.clone(), refused.clone());
            hammers.push(tokio::spawn(async move {
                let req = format!(
                    "POST / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer mft1.bad\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
                );
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut s) = TcpStream::connect(&addr).await else { continue };
                    let _ = s.write_all(req.as_bytes()).await;
                    let mut buf = Vec::new();
                    let _ = s.read_to_end(&mut buf).await;
                    if buf.starts_with(b"HTTP/1.1 401") {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        let t0 = Instant::now();
        // The rightful caller is another client than the hammers: its own thread and
        // runtime, so its latency is the door's, not this process's scheduler's.
        let loaded = {
            let (client, url, token) = (client.clone(), url.clone(), token.clone());
            tokio::task::spawn_blocking(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(p99(&client, &url, &token, calls))
            })
            .await
            .unwrap()
        };
        stop.store(true, Ordering::Relaxed);
        for h in hammers {
            let _ = h.await;
        }
        let rate = refused.load(Ordering::Relaxed) as f64 / t0.elapsed().as_secs_f64();
        for (load, p99) in [("unloaded", quiet), ("hostile", loaded)] {
            measure::record_ms("hostile", "rightful_p99", json!({"load": load}), &[p99]);
        }
        println!(
            "rightful SendMessage with {} idle connections and 64 bad-token callers ({rate:.0} 401/s): p99 {loaded:?}, {:.2}× unloaded (goal < 2×)",
            idle.len(),
            loaded.as_secs_f64() / quiet.as_secs_f64()
        );
    });
    drop(session);
}

/// `mur` with HOME at `home`, run in `home/proj`: a project folder that holds
/// ~/.murmur is refused (E-APR-002, docs/approval.md).
fn mur(home: &Path) -> Command {
    let proj = home.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let mut cmd = clean::clean_mur();
    cmd.env("HOME", home).current_dir(proj).stdin(Stdio::null());
    cmd
}

async fn p99(client: &reqwest::Client, url: &str, token: &str, calls: usize) -> Duration {
    let mut took = Vec::with_capacity(calls);
    for i in 0..calls {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params":
            {"message": {"messageId": format!("m{i}"), "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
        let t0 = Instant::now();
        let resp = client
            .post(url)
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success());
        let _ = resp.bytes().await.unwrap();
        took.push(t0.elapsed());
    }
    took.sort();
    took[(calls * 99 / 100).min(calls - 1)]
}
