//! A capsule's WASM components (docs/components.md), built from components/ and run
//! by real `mur run` sessions: through a process-transport harness that makes the tool
//! calls a test lists, and through the http transport with the test model server.

mod bounds;
mod driver;
mod formation;
mod grants;
mod hooks;
mod http;
mod network;
mod pack;
mod peers;
mod tools;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::World;
use crate::support::guests::guest;

/// A harness that records its task line in `$HOME/task.json`, makes each call of the
/// capsule's calls.jsonl in turn (reading each result), then completes.
const HARNESS: &str = r#"IFS= read -r task
printf '%s\n' "$task" > "$HOME/task.json"
while IFS= read -r call <&3; do
  printf '%s\n' "$call"
  IFS= read -r result
done 3< calls.jsonl
echo '{"type":"message","text":"done"}'
"#;

/// One tool call line for the harness.
fn call(id: &str, tool: &str, arguments: Value) -> Value {
    json!({"type": "tool_call", "id": id, "name": tool, "arguments": arguments})
}

/// Compiled components shared by every test's HOME (each test a fresh HOME would
/// compile every component again): `~/.murmur/cache/components` is a link to it.
fn share_cache(w: &World) {
    let shared = Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache");
    std::fs::create_dir_all(&shared).unwrap();
    let cache = w.home.join(".murmur/cache");
    std::fs::create_dir_all(&cache).unwrap();
    let link = cache.join("components");
    if !link.exists() {
        std::os::unix::fs::symlink(&shared, link).unwrap();
    }
}

/// Installs `local/<name>` 1.0.0 on the harness above: `files` are (path in the
/// capsule, guest crate) pairs copied in, `extra` is appended to murmur.yaml.
fn install(w: &World, name: &str, extra: &str, files: &[(&str, &str)], calls: &[Value]) {
    share_cache(w);
    let src = w.dir.path().join("src").join(name);
    for (rel, crate_name) in files {
        let dest = src.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(guest(crate_name), dest).unwrap();
    }
    let lines: String = calls.iter().map(|c| format!("{c}\n")).collect();
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("calls.jsonl"), lines).unwrap();
    w.install(name, extra, Some(HARNESS));
}

/// `tools:` entries for murmur.yaml: (name, path) with a description each.
fn tools_yaml(tools: &[(&str, &str)]) -> String {
    let mut y = String::from("tools:\n");
    for (name, path) in tools {
        y.push_str(&format!(
            "  - name: {name}\n    path: {path}\n    description: The {name} tool.\n"
        ));
    }
    y
}

/// The one session's trace after a `mur run --task` that exited 0.
fn ran(w: &World, out: &std::process::Output) -> Vec<Value> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let ids = w.sessions();
    w.trace(ids.last().expect("a session"))
}

/// Each tool_result of a trace by call id: (is_error, output).
fn results(trace: &[Value]) -> std::collections::HashMap<String, (bool, String)> {
    trace
        .iter()
        .filter(|r| r["type"] == "tool_result")
        .map(|r| {
            (
                r["call_id"].as_str().unwrap().to_string(),
                (
                    r["is_error"].as_bool().unwrap(),
                    r["output"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

/// The last task state of a trace.
fn final_state(trace: &[Value]) -> String {
    trace
        .iter()
        .rev()
        .find(|r| r["type"] == "task_state")
        .map(|r| r["to"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

/// A web server on 127.0.0.1 that answers every request with `body` and keeps each
/// connection it accepted and each request head it read.
struct Web {
    addr: SocketAddr,
    connections: Arc<Mutex<usize>>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Web {
    fn start(body: &'static str) -> Web {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(Mutex::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (c, h) = (connections.clone(), heads.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                *c.lock().unwrap() += 1;
                let mut buf = Vec::new();
                let mut byte = [0u8; 1];
                while !buf.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    buf.push(byte[0]);
                }
                h.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf).into_owned());
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Web {
            addr,
            connections,
            heads,
        }
    }

    fn connections(&self) -> usize {
        *self.connections.lock().unwrap()
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// The records folder of the world's only session.
fn records(w: &World) -> PathBuf {
    let ids = w.sessions();
    w.records(ids.last().unwrap())
}
