//! One `mur run` session beside the peers a user could pick instead, measured in the
//! same run, in alternating rounds:
//! - the official Rust A2A SDK (a2a-server-lf 0.4, benches/rust_sdk_server), an echo
//!   executor, bearer auth as an axum layer;
//! - a bare axum floor (the same binary, `--floor`: the bearer layer and a canned
//!   answer), what any Rust HTTP server with auth costs at least;
//! - the official Python SDK (`a2a-sdk` 1.3.0, benches/a2a_sdk_server/server.py).
//!
//! First each server is started 15 times, in turn with the others and back to back:
//! start-up (spawn to the Agent Card answering) and idle RSS. Then each round starts
//! each server afresh for SendMessage, GetTask and ListTasks from 8 and from 64
//! kept-alive connections, each for `MUR_BENCH_SECS` (default 2); that ListTasks lists
//! whatever the round's tens of thousands of tasks left (mur keeps 1,000, the Rust SDK
//! every one). ListTasks like for like follows: a fresh server sent exactly 1,000
//! SendMessages, so every store holds 1,000 tasks, then ListTasks at both counts.
//! Goals (issue 19): SendMessage ≥ 1.2× the Rust SDK's requests/s, GetTask ≥ 1.5×
//! and ≥ 0.8× the floor, ListTasks at 1,000 tasks ≥ 3×, start-up and idle RSS no
//! worse than the Rust SDK's.
//!
//! `just bench` (or `cargo bench --bench session` after `just bench-setup`, which builds
//! the Rust SDK server and the a2a-sdk venv). `MUR_BENCH_ROUNDS` sets the rounds
//! (default 5); `MUR_BENCH_METHODS` some of the calls (`ListTasks` alone: the like for
//! like ListTasks); `MUR_BENCH_RSS_TASKS` the tasks of the RSS curve (0: none);
//! `MUR_A2A_SDK_PYTHON` names another interpreter than `.venv/bin/python`.
//! A peer that is not built is skipped and said so.

// A bench is a program that prints its figures; it uses some of the dev-dependencies.
#![allow(
    unused_crate_dependencies,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use mur_test::clean;
use mur_test::measure;

use measure::{Conn, cpu_of, load, median, vm_rss_mib};

const RUNS: usize = 5;
/// Fresh starts of each server for its start-up and idle RSS (`Peer::start_once`).
const STARTS: usize = 15;
/// A bound on each throughput run besides its length.
const MAX_REQUESTS: u64 = 500_000;

/// A server process under measurement; ended (SIGTERM, then SIGKILL) when dropped,
/// so no run leaves one behind, even when it panics.
struct Server {
    child: Child,
    url: String,
    token: String,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A project with one installed capsule on the built-in transport, whose door needs a
/// token, queueing enough tasks for 64 blocking callers.
fn project(home: &Path) -> PathBuf {
    let project = home.join("project");
    let capsule = project.join("src").join("echo");
    std::fs::create_dir_all(&capsule).unwrap();
    std::fs::write(
        capsule.join("murmur.yaml"),
        "name: echo\nversion: 1.0.0\ndescription: Bench session.\nagent:\n  transport: builtin\n\
         lifecycle:\n  task_acceptance: queue\n  queue_depth: 128\nnetwork:\n  authentication: {}\n",
    )
    .unwrap();
    let out = clean::clean_mur()
        .env("HOME", home)
        .arg("install")
        .arg(&capsule)
        .current_dir(&project)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    project
}

/// GET the Agent Card over a fresh connection; its body.
fn card(url: &str) -> String {
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut stream = TcpStream::connect(&addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
}

/// Spawns `mur run --json`; the server and the time from spawn to the card answering.
fn start_mur(home: &Path, project: &Path) -> (Server, Duration) {
    let started = Instant::now();
    let mut child = clean::clean_mur()
        .env("HOME", home)
        .args(["run", "--json", "--capsule", "local/echo"])
        .args(["--capsule-version", "1.0.0"])
        .current_dir(project)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    // The guard from here on, so a failed start leaves no process behind.
    let mut server = Server {
        child,
        url: String::new(),
        token: String::new(),
        stdout,
    };
    let mut line = String::new();
    server.stdout.read_line(&mut line).unwrap();
    let ready: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("no readiness line from mur run ({e}): {line:?}"));
    let url = ready["door"].as_str().unwrap().to_string();
    let body = card(&url);
    let took = started.elapsed();
    let session = ready["session_id"].as_str().unwrap();
    assert!(body.contains(session), "the card names the session");
    let token_file = home.join(format!(".murmur/running/{session}.token"));
    server.token = std::fs::read_to_string(token_file)
        .unwrap()
        .trim()
        .to_string();
    server.url = format!("{}/", url.trim_end_matches('/'));
    (server, took)
}

/// Spawns a peer server that takes its bearer token on stdin (never on the command
/// line) and prints its port: the a2a-sdk server, the Rust SDK server, the floor.
/// The server and the time from spawn to the card answering.
fn start_peer(mut cmd: Command) -> (Server, Duration) {
    let token = mur::running::new_token();
    let started = Instant::now();
    let mut child = clean::as_installed(&mut cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    // The guard from here on, so a failed start leaves no process behind.
    let mut server = Server {
        child,
        url: String::new(),
        token,
        stdout,
    };
    writeln!(stdin, "{}", server.token).unwrap();
    drop(stdin);
    let mut line = String::new();
    server.stdout.read_line(&mut line).unwrap();
    let port: u16 = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no port from the peer server: {line:?}"));
    server.url = format!("http://127.0.0.1:{port}/");
    card(&server.url);
    (server, started.elapsed())
}

fn python_peer(python: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/a2a_sdk_server/server.py"
    ));
    cmd
}

/// The Rust SDK server (benches/rust_sdk_server), built by `just bench-setup`; with
/// `floor`, its bare axum route instead of the SDK.
fn rust_peer(floor: bool) -> Result<Command, String> {
    let bin = Path::new(RUST_SDK_SERVER);
    if !bin.is_file() {
        return Err(format!("{RUST_SDK_SERVER} is not built"));
    }
    let mut cmd = Command::new(bin);
    if floor {
        cmd.arg("--floor");
    }
    Ok(cmd)
}

const RUST_SDK_SERVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/target/rust_sdk_server/release/rust-sdk-server"
);

/// The interpreter with the SDK, or why there is none.
fn python_with_sdk() -> Result<PathBuf, String> {
    let python: PathBuf = std::env::var_os("MUR_A2A_SDK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python").into());
    let check = "import importlib.metadata as m, uvicorn, uvloop, httptools, a2a.server.routes; \
                 assert m.version('a2a-sdk') == '1.3.0', m.version('a2a-sdk')";
    match Command::new(&python)
        .args(["-c", check])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(out) if out.status.success() => Ok(python),
        Ok(out) => Err(format!(
            "{} lacks a2a-sdk 1.3.0 with uvicorn, uvloop and httptools: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Err(e) => Err(format!("{}: {e}", python.display())),
    }
}

fn send_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}})
}

/// From writing a SendStreamingMessage on an open connection to the whole first
/// event of its stream (a `data:` line and the blank line after it). The streaming
/// call stands for SubscribeToTask, whose first event needs a task still running,
/// which no server's echo ever has. None when the answer is no stream (the floor's
/// canned answer).
fn first_event(server: &Server) -> Option<Duration> {
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "s", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let request = request(server, &addr, &body);
    let mut stream = TcpStream::connect(&addr).unwrap();
    stream.set_nodelay(true).unwrap();
    // A bench never hangs on a server that stops short.
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    stream.write_all(&request).unwrap();
    let (mut seen, mut chunk) = (Vec::new(), [0u8; 16 * 1024]);
    loop {
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "the stream closed before its first event");
        seen.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&seen).replace("\r\n", "\n");
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        let Some(head_end) = text.find("\n\n") else {
            continue;
        };
        if !text[..head_end]
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream")
        {
            return None;
        }
        if let Some(at) = text[head_end..].find("data:")
            && text[head_end + at..].contains("\n\n")
        {
            return Some(started.elapsed());
        }
    }
}

/// A throughput run: requests/s, and the server's CPU µs per request.
#[derive(Clone, Copy)]
struct Rate {
    rps: f64,
    server_cpu_us: f64,
    /// Calls answered.
    calls: u64,
}

/// The bytes of one POST of `body` to `server`, with its bearer token.
fn request(server: &Server, addr: &str, body: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(body).unwrap();
    let mut request = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n",
        server.token,
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    request
}

/// The bytes of one call of `method` to `server`. GetTask reads one finished task,
/// which a SendMessage makes first (and checks: the echo completed); SendMessage and
/// ListTasks add nothing to the store.
fn call_of(server: &Server, method: &str) -> Vec<u8> {
    let addr = addr_of(server);
    let body = match method {
        "GetTask" => {
            let first = one_call(server, &send_body());
            let task = &first["result"]["task"];
            assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{first}");
            json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task["id"]}})
        }
        "ListTasks" => json!({"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {}}),
        "SendMessage" => send_body(),
        other => panic!("no call {other}"),
    };
    request(server, &addr, &body)
}

fn addr_of(server: &Server) -> String {
    server
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string()
}

/// One call of `body` on a connection of its own; its answer.
fn one_call(server: &Server, body: &Value) -> Value {
    let addr = addr_of(server);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut conn = Conn::open(&addr).await;
        let answer = conn.call(&request(server, &addr, body)).await;
        serde_json::from_slice::<Value>(answer).unwrap()
    })
}

/// `connections` callers send `request` (one call's bytes, `call_of`) for `run` or
/// until exactly `limit` calls are answered, whichever comes first; every answer must
/// be a JSON-RPC result, never an error.
///
/// The callers are one thread multiplexing kept-alive connections (as wrk does),
/// each sending the same request bytes: a request costs the client a write and a
/// read or two, so on two cores the servers, not the client, set the pace.
fn throughput(
    server: &Server,
    request: &[u8],
    connections: usize,
    run: Duration,
    limit: u64,
) -> Rate {
    let addr = addr_of(server);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let request = Arc::new(request.to_vec());
    // A caller takes a call's place before sending it: never more than `limit`.
    let claimed = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let cpu_start = cpu_of(server.pid());
    let start = Instant::now();
    let deadline = start + run;
    rt.block_on(async {
        let callers: Vec<_> = (0..connections)
            .map(|_| {
                let (addr, request) = (addr.clone(), request.clone());
                let (claimed, done) = (claimed.clone(), done.clone());
                tokio::spawn(async move {
                    let mut conn = Conn::open(&addr).await;
                    while Instant::now() < deadline
                        && claimed.fetch_add(1, Ordering::Relaxed) < limit
                    {
                        let answer = conn.call(&request).await;
                        assert!(
                            !answer.windows(8).any(|w| w == b"\"error\":"),
                            "{}",
                            String::from_utf8_lossy(answer)
                        );
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for c in callers {
            c.await.unwrap();
        }
    });
    let elapsed = start.elapsed().as_secs_f64();
    let n = done.load(Ordering::Relaxed);
    let cpu = (cpu_of(server.pid()) - cpu_start).as_secs_f64();
    Rate {
        rps: n as f64 / elapsed,
        server_cpu_us: cpu * 1e6 / n as f64,
        calls: n,
    }
}

/// The calls measured in each round, each at every connection count, on the store
/// the round's own calls left (mur keeps the last [`STORE_TASKS`] ended tasks, the
/// Rust SDK every one). `MUR_BENCH_METHODS` (a comma list) picks some of them.
const METHODS: [&str; 3] = ["SendMessage", "GetTask", "ListTasks"];
const CONNECTIONS: [usize; 2] = [8, 64];
/// The like-for-like ListTasks: every server's store holds this many tasks, mur's
/// bound (`max_tasks`, docs/design/door.md).
const STORE_TASKS: u64 = 1_000;
/// Its key in [`Peer::rates`].
const LIST_AT_1000: &str = "ListTasks at 1,000 tasks";
/// The round's ListTasks, on whatever the round's calls left in each store: its key.
const LIST_AFTER_ROUND: &str = "ListTasks after the round";

/// The calls `MUR_BENCH_METHODS` names (all of [`METHODS`] when unset).
fn methods() -> Vec<&'static str> {
    let Ok(list) = std::env::var("MUR_BENCH_METHODS") else {
        return METHODS.to_vec();
    };
    list.split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| {
            METHODS
                .into_iter()
                .find(|k| *k == m)
                .unwrap_or_else(|| panic!("MUR_BENCH_METHODS: no call `{m}` (one of {METHODS:?})"))
        })
        .collect()
}

/// One server under measurement: how to start it, and what it measured.
struct Peer {
    name: &'static str,
    start: Box<dyn Fn() -> (Server, Duration)>,
    start_up: Vec<Duration>,
    /// Each streamed call's first event (`first_event`).
    first_event: Vec<Duration>,
    /// MiB, 300 ms after each start.
    idle_rss: Vec<f64>,
    rss_after: f64,
    /// The tasks each round's calls made (what the Rust SDK's store then holds).
    round_tasks: Vec<u64>,
    /// (call, connections) -> each round's rate; the call is a method, or
    /// [`LIST_AT_1000`] or [`LIST_AFTER_ROUND`].
    rates: std::collections::BTreeMap<(&'static str, usize), Vec<Rate>>,
}

impl Peer {
    fn new(name: &'static str, start: impl Fn() -> (Server, Duration) + 'static) -> Peer {
        Peer {
            name,
            start: Box::new(start),
            start_up: Vec::new(),
            first_event: Vec::new(),
            idle_rss: Vec::new(),
            rss_after: 0.0,
            round_tasks: Vec::new(),
            rates: Default::default(),
        }
    }

    /// A fresh server's start-up to its card and its RSS once idle; then it ends.
    fn start_once(&mut self) {
        let (server, took) = (self.start)();
        self.start_up.push(took);
        self.record("start_up", json!({}), took.as_secs_f64() * 1e3, "ms");
        // Let start-up's last allocations settle before reading the idle footprint.
        std::thread::sleep(Duration::from_millis(300));
        let rss = vm_rss_mib(server.pid());
        self.idle_rss.push(rss);
        self.record("idle_rss", json!({}), rss, "MiB");
    }

    /// The median idle RSS, MiB.
    fn idle_rss(&self) -> f64 {
        let mut v = self.idle_rss.clone();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// One round: a fresh server, every call picked (`methods`) at every count, then
    /// the streamed call's first event; and ListTasks like for like (`list_at_1000`).
    fn round(&mut self, run: Duration, methods: &[&'static str]) {
        let (server, _) = (self.start)();
        // Tasks the round's calls made: what the Rust SDK's store then holds.
        let mut made = 0;
        for &method in methods {
            // On a store the SendMessages did not fill, ListTasks shows nothing.
            if method == "ListTasks" && !methods.contains(&"SendMessage") {
                continue;
            }
            let (key, labels) = match method {
                "ListTasks" => (LIST_AFTER_ROUND, json!({"tasks": "round"})),
                _ => (method, json!({})),
            };
            let call = call_of(&server, method);
            made += u64::from(method == "GetTask");
            for connections in CONNECTIONS {
                let rate = throughput(&server, &call, connections, run, MAX_REQUESTS);
                if method == "SendMessage" {
                    made += rate.calls;
                }
                self.measured(key, method, labels.clone(), connections, rate);
            }
        }
        if made > 0 {
            self.record("round_tasks", json!({}), made as f64, "tasks");
            self.round_tasks.push(made);
        }
        for _ in 0..measure::sized(20, 3) {
            let Some(took) = first_event(&server) else {
                break;
            };
            self.first_event.push(took);
            self.record("first_event", json!({}), took.as_secs_f64() * 1e3, "ms");
        }
        self.rss_after = vm_rss_mib(server.pid());
        drop(server);
        if methods.contains(&"ListTasks") {
            self.list_at_1000(run);
        }
    }

    /// ListTasks like for like: a fresh server sent exactly [`STORE_TASKS`]
    /// SendMessages, so that every store holds as many tasks (mur's bound, which the
    /// rounds' tens of thousands of tasks otherwise leave far below the Rust SDK's
    /// every task). Checked: the list counts them all. Not for the floor, whose
    /// canned answer lists nothing.
    fn list_at_1000(&mut self, run: Duration) {
        if self.name == "floor" {
            return;
        }
        let (server, _) = (self.start)();
        let send = call_of(&server, "SendMessage");
        let filled = throughput(&server, &send, 8, Duration::from_secs(3600), STORE_TASKS);
        assert_eq!(filled.calls, STORE_TASKS, "{}", self.name);
        let list = one_call(
            &server,
            &json!({"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {}}),
        );
        assert_eq!(
            list["result"]["totalSize"], STORE_TASKS,
            "{}'s store holds every task sent: {list}",
            self.name
        );
        let call = call_of(&server, "ListTasks");
        for connections in CONNECTIONS {
            let rate = throughput(&server, &call, connections, run, MAX_REQUESTS);
            let labels = json!({"tasks": STORE_TASKS});
            self.measured(LIST_AT_1000, "ListTasks", labels, connections, rate);
        }
    }

    /// One throughput run's figures, under `key` in [`Peer::rates`].
    fn measured(
        &mut self,
        key: &'static str,
        method: &str,
        mut labels: Value,
        connections: usize,
        rate: Rate,
    ) {
        labels["method"] = json!(method);
        labels["connections"] = json!(connections);
        self.record("rps", labels.clone(), rate.rps, "requests/s");
        self.record("server_cpu", labels, rate.server_cpu_us, "µs");
        self.rates.entry((key, connections)).or_default().push(rate);
    }

    /// One figure of this server's, for the report.
    fn record(&self, figure: &str, mut labels: Value, value: f64, unit: &str) {
        labels["server"] = json!(self.name);
        measure::record("session", figure, labels, value, unit);
    }

    /// RSS across `tasks` SendMessages from 8 connections to a fresh server, read
    /// every `step` tasks: what it keeps of ended tasks.
    fn rss_across(&self, tasks: u64, step: u64) -> Vec<(u64, f64)> {
        let (server, _) = (self.start)();
        let mut curve = vec![(0, vm_rss_mib(server.pid()))];
        let send = call_of(&server, "SendMessage");
        let mut sent = 0;
        while sent < tasks {
            let rate = throughput(&server, &send, 8, Duration::from_secs(3600), step);
            sent += rate.calls;
            curve.push((sent, vm_rss_mib(server.pid())));
        }
        for &(n, rss) in &curve {
            self.record("rss_tasks", json!({"tasks": n}), rss, "MiB");
        }
        curve
    }

    /// The median requests/s of a call (a [`Peer::rates`] key), and the spread
    /// (min–max) of the rounds; `None` when it was not measured.
    fn rps(&self, key: &str, connections: usize) -> Option<(f64, f64, f64)> {
        let mut v: Vec<f64> = self
            .rates
            .iter()
            .find(|((m, c), _)| *m == key && *c == connections)?
            .1
            .iter()
            .map(|r| r.rps)
            .collect();
        v.sort_by(f64::total_cmp);
        Some((v[v.len() / 2], v[0], v[v.len() - 1]))
    }

    fn cpu_us(&self, key: &str, connections: usize) -> Option<f64> {
        let mut v: Vec<f64> = self
            .rates
            .iter()
            .find(|((m, c), _)| *m == key && *c == connections)?
            .1
            .iter()
            .map(|r| r.server_cpu_us)
            .collect();
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2])
    }
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

fn main() {
    let secs: f64 = measure::knob("MUR_BENCH_SECS", 2.0, 0.1);
    let rounds: usize = measure::knob("MUR_BENCH_ROUNDS", RUNS, 1);
    let run = Duration::from_secs_f64(secs);
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    let project = project(&home);
    let load_before = load();

    let mut peers = vec![Peer::new("mur", {
        let (home, project) = (home.clone(), project.clone());
        move || start_mur(&home, &project)
    })];
    let mut skipped = Vec::new();
    match rust_peer(false) {
        Ok(_) => {
            peers.push(Peer::new("rust-sdk", || {
                start_peer(rust_peer(false).unwrap())
            }));
            peers.push(Peer::new("floor", || start_peer(rust_peer(true).unwrap())));
        }
        Err(why) => skipped.push(format!("Rust SDK and floor: {why}")),
    }
    match python_with_sdk() {
        Ok(python) => peers.push(Peer::new("a2a-sdk", move || {
            start_peer(python_peer(&python))
        })),
        Err(why) => skipped.push(format!("a2a-sdk: {why}")),
    }
    // Start-up and idle RSS first: each server in turn, back to back, so every binary
    // is as warm in the page cache as the others. In the rounds below a server sits
    // idle for minutes, and this VM's DAMON reclaim pages out a binary unused for a
    // minute, so a start there reads back part of its binary (docs/benchmarks.md).
    for _ in 0..measure::sized(STARTS, 2) {
        for peer in &mut peers {
            peer.start_once();
        }
    }
    // Alternating rounds: each server in turn, so a busy minute hits all alike.
    let methods = methods();
    for _ in 0..rounds {
        for peer in &mut peers {
            peer.round(run, &methods);
        }
    }
    // What a server keeps of ended tasks: mur's bound against the SDK's every task.
    // `MUR_BENCH_RSS_TASKS=0` leaves it out.
    let tasks: u64 = measure::knob("MUR_BENCH_RSS_TASKS", 150_000, 2_000);
    let step = measure::sized(1_000, 500);
    let curves: Vec<(&str, Vec<(u64, f64)>)> = peers
        .iter()
        .filter(|p| tasks > 0 && (p.name == "mur" || p.name == "rust-sdk"))
        .map(|p| (p.name, p.rss_across(tasks, step)))
        .collect();
    measure::record(
        "session",
        "load_average",
        json!({}),
        load_before
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap_or(0.0),
        "",
    );

    println!(
        "session: `mur run` (built-in transport, token required) beside the Rust A2A SDK \
         (a2a-server-lf 0.4, axum, bearer layer), a bare axum floor (bearer layer, a canned \
         answer) and a2a-sdk 1.3.0 (uvicorn); {rounds} alternating rounds of {secs} s per call"
    );
    println!("  load average {load_before} before, {} after", load());
    print!("  {:<34}", "");
    for p in &peers {
        print!(" {:>20}", p.name);
    }
    println!();
    let row = |label: String, f: &dyn Fn(&Peer) -> String| {
        print!("  {label:<34}");
        for p in &peers {
            print!(" {:>20}", f(p));
        }
        println!();
    };
    row("start-up to Agent Card (median)".into(), &|p| {
        format!("{:.1} ms", median(p.start_up.clone()).as_secs_f64() * 1e3)
    });
    row("idle RSS (median)".into(), &|p| {
        format!("{:.1} MiB", p.idle_rss())
    });
    for key in ["SendMessage", "GetTask", LIST_AT_1000, LIST_AFTER_ROUND] {
        for c in CONNECTIONS {
            if peers.iter().all(|p| p.rps(key, c).is_none()) {
                continue;
            }
            row(
                format!("{key} c{c}, requests/s"),
                &|p| match p.rps(key, c) {
                    Some((m, lo, hi)) => format!("{m:.0} ({lo:.0}–{hi:.0})"),
                    None => "—".into(),
                },
            );
            row("  server CPU µs per call".into(), &|p| {
                p.cpu_us(key, c).map_or("—".into(), |us| format!("{us:.0}"))
            });
        }
    }
    if peers.iter().any(|p| !p.round_tasks.is_empty()) {
        row("tasks a round made (median)".into(), &|p| {
            let mut v = p.round_tasks.clone();
            v.sort_unstable();
            v.get(v.len() / 2).map_or("—".into(), |n| n.to_string())
        });
    }
    row(
        "first streamed event (median)".into(),
        &|p| match p.first_event.len() {
            0 => "no stream".into(),
            _ => format!(
                "{:.2} ms",
                median(p.first_event.clone()).as_secs_f64() * 1e3
            ),
        },
    );
    row("RSS after the last round".into(), &|p| {
        format!("{:.1} MiB", p.rss_after)
    });
    for (name, curve) in &curves {
        // The first reading at or past 10,000 tasks, and the last.
        let at = |n: u64| {
            curve
                .iter()
                .find(|(t, _)| *t >= n)
                .unwrap_or(curve.last().unwrap())
        };
        let (t10, r10) = at(10_000);
        let (tn, rn) = curve.last().unwrap();
        println!("  {name}: RSS {r10:.1} MiB after {t10} tasks, {rn:.1} MiB after {tn}");
    }
    for why in &skipped {
        println!("  skipped: {why} (make it with `just bench-setup`)");
    }

    let find = |name: &str| peers.iter().find(|p| p.name == name);
    let mur = find("mur").unwrap();
    let start_ms = median(mur.start_up.clone()).as_secs_f64() * 1e3;
    println!(
        "  goal start-up < 20 ms: {} ({start_ms:.1} ms)",
        verdict(start_ms < 20.0)
    );
    println!(
        "  goal idle RSS < 15 MiB: {} ({:.1} MiB)",
        verdict(mur.idle_rss() < 15.0),
        mur.idle_rss()
    );
    // mur's figure over another's, when both were measured.
    let ratio = |other: &Peer, key: &str, c: usize| Some(mur.rps(key, c)?.0 / other.rps(key, c)?.0);
    if let Some(sdk) = find("rust-sdk") {
        for (key, goal) in [("SendMessage", 1.2), ("GetTask", 1.5), (LIST_AT_1000, 3.0)] {
            for c in CONNECTIONS {
                if let Some(r) = ratio(sdk, key, c) {
                    println!(
                        "  goal {key} c{c} ≥ {goal}× the Rust SDK: {} ({r:.2}×)",
                        verdict(r >= goal)
                    );
                }
            }
        }
        for c in CONNECTIONS {
            if let Some(r) = ratio(sdk, LIST_AFTER_ROUND, c) {
                println!(
                    "  {LIST_AFTER_ROUND} c{c} against the Rust SDK, which keeps every task: {r:.1}×"
                );
            }
        }
        let (ours, theirs) = (median(mur.start_up.clone()), median(sdk.start_up.clone()));
        println!(
            "  goal start-up no slower than the Rust SDK: {} ({:.1} ms against {:.1} ms)",
            verdict(ours <= theirs),
            ours.as_secs_f64() * 1e3,
            theirs.as_secs_f64() * 1e3
        );
        println!(
            "  goal idle RSS no more than the Rust SDK: {} ({:.1} MiB against {:.1} MiB)",
            verdict(mur.idle_rss() <= sdk.idle_rss()),
            mur.idle_rss(),
            sdk.idle_rss()
        );
    }
    if let Some(floor) = find("floor") {
        for c in CONNECTIONS {
            if let Some(r) = ratio(floor, "GetTask", c) {
                println!(
                    "  goal GetTask c{c} ≥ 0.8× the floor: {} ({r:.2}×)",
                    verdict(r >= 0.8)
                );
            }
        }
    }
    if let Some(py) = find("a2a-sdk") {
        for key in ["SendMessage", "GetTask", LIST_AT_1000] {
            if let Some(r) = ratio(py, key, 8) {
                println!("  {key} c8 against a2a-sdk: {r:.1}×");
            }
        }
    }
}
