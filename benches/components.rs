//! A capsule's WASM components (docs/components.md), on the guests of components/:
//! - a tool call: cold (compiled, empty cache), the first call from the on-disk cache
//!   (a new session's), and warm (the same session again) — goals: from the cache
//!   under 20 ms, warm under 1 ms;
//! - session start-up with 8 tools declared: `mur run --json` spawned to its readiness
//!   line, beside the same capsule with none — goal: under 20 ms.
//!
//! `cargo bench --bench components` (the guests are built first, as the tests do).

// A bench is a program that prints its figures; it uses some of the dev-dependencies.
#![allow(
    unused_crate_dependencies,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mur::agent::ToolCall;
use mur::component::{Catalog, Grants, Host};

use mur_test::clean;
use mur_test::guests;
use mur_test::measure;

use measure::median;
use serde_json::json;

const RUNS: usize = 10;
const WARM_CALLS: usize = 1000;

fn capsule(dir: &Path, tools: usize) {
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::copy(guests::guest("tool-echo"), dir.join("tools/echo.wasm")).unwrap();
    let mut yaml =
        String::from("name: bench\nversion: 0.1.0\ndescription: d\nagent:\n  transport: builtin\n");
    if tools > 0 {
        yaml.push_str("tools:\n");
    }
    for i in 0..tools {
        // Eight files with different bytes: eight components to read, check and hash.
        let rel = format!("tools/echo{i}.wasm");
        let mut bytes = std::fs::read(dir.join("tools/echo.wasm")).unwrap();
        // A custom section (id 0) naming the copy: a component still, bytes apart.
        let name = format!("copy{i}");
        bytes.extend_from_slice(&[0, (name.len() + 1) as u8, name.len() as u8]);
        bytes.extend_from_slice(name.as_bytes());
        std::fs::write(dir.join(&rel), bytes).unwrap();
        yaml.push_str(&format!(
            "  - name: echo{i}\n    path: {rel}\n    description: Echo {i}.\n"
        ));
    }
    std::fs::write(dir.join("murmur.yaml"), yaml).unwrap();
}

fn host(dir: &Path, cache: &Path) -> Arc<Host> {
    let m = mur::manifest::load(&dir.join("murmur.yaml")).unwrap();
    let catalog = Catalog::open(dir, &m).unwrap();
    Host::new(catalog, Grants::of(&m, dir, None)).with_cache(cache.to_path_buf())
}

fn call() -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: "echo0".into(),
        arguments: serde_json::json!({"text": "hello"}),
    }
}

/// The first call of a new session's tool: its schema, then the call.
async fn first_call(dir: &Path, cache: &Path) -> Duration {
    let started = Instant::now();
    let tools = host(dir, cache)
        .tools(mur::call_member::Trust::Trusted, None)
        .await;
    let out = tools[0].call(&call()).await;
    let took = started.elapsed();
    assert!(!out.is_error && out.output == "hello", "{out:?}");
    took
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// `mur run --json` in `dir` spawned to its readiness line.
fn start_up(dir: &Path, home: &Path) -> Duration {
    let started = Instant::now();
    let mut child = clean::clean_mur()
        .args(["run", "--json"])
        .current_dir(dir)
        .env("HOME", home)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let took = started.elapsed();
    assert!(line.contains("ses_"), "no readiness line: {line}");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    child.wait().unwrap();
    took
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    // One tool for the calls (a first call fetches every tool's schema); eight for
    // the start-up.
    let dir = tmp.path().join("one");
    capsule(&dir, 1);
    let eight = tmp.path().join("eight");
    capsule(&eight, 8);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut cold = Vec::new();
        for i in 0..3 {
            cold.push(first_call(&dir, &tmp.path().join(format!("cold{i}"))).await);
        }
        let cache = tmp.path().join("cache");
        first_call(&dir, &cache).await;
        let mut cached = Vec::new();
        for _ in 0..RUNS {
            cached.push(first_call(&dir, &cache).await);
        }
        let tools = host(&dir, &cache)
            .tools(mur::call_member::Trust::Trusted, None)
            .await;
        tools[0].call(&call()).await;
        let mut warm = Vec::new();
        for _ in 0..WARM_CALLS {
            let started = Instant::now();
            let out = tools[0].call(&call()).await;
            warm.push(started.elapsed());
            assert!(!out.is_error);
        }
        for (state, samples) in [("cold", &cold), ("cached", &cached), ("warm", &warm)] {
            measure::record_ms("components", "tool_call", json!({"state": state}), samples);
        }
        println!(
            "tool call, cold (compile, empty cache): median {}",
            ms(median(cold))
        );
        println!(
            "tool call, first from the on-disk cache: median {} (goal < 20 ms)",
            ms(median(cached))
        );
        println!("tool call, warm: median {} (goal < 1 ms)", ms(median(warm)));
    });
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let plain = tmp.path().join("plain");
    capsule(&plain, 0);
    let mut with = Vec::new();
    let mut without = Vec::new();
    for _ in 0..RUNS {
        with.push(start_up(&eight, &home));
        without.push(start_up(&plain, &home));
    }
    measure::record_ms("components", "start_up", json!({"tools": 8}), &with);
    measure::record_ms("components", "start_up", json!({"tools": 0}), &without);
    println!(
        "session start-up, 8 tools: median {} (goal < 20 ms)",
        ms(median(with))
    );
    println!("session start-up, no tools: median {}", ms(median(without)));
}
