//! One `mur run` session beside a minimal A2A server on the official Python SDK
//! (`a2a-sdk` 1.3.0, `benches/a2a_sdk_server/server.py`), measured in the same run:
//! - start-up: spawn to the Agent Card answering (goal for mur: under 20 ms);
//! - idle RSS: VmRSS of the idle server after start-up (goal for mur: under 15 MiB);
//! - throughput: SendMessage and GetTask requests/s on loopback with a bearer token,
//!   from `CONNECTIONS` concurrent connections in this process (goal: mur at least
//!   20 times the a2a-sdk server).
//!
//! `just bench` (or `cargo bench --bench session` after `just bench-setup`).
//! `MUR_BENCH_SECS` sets each throughput run's length (default 2);
//! `MUR_A2A_SDK_PYTHON` names another interpreter than `.venv/bin/python`. Without a
//! Python that has the SDK, mur's numbers are printed and the comparison is skipped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "../tests/it/support/clean.rs"]
mod clean;
#[path = "support/measure.rs"]
mod measure;

use measure::{Conn, cpu_of, load, median, vm_rss_mib};

const RUNS: usize = 5;
const CONNECTIONS: usize = 8;
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
/// token, queueing enough tasks for `CONNECTIONS` blocking callers.
fn project(home: &Path) -> PathBuf {
    let project = home.join("project");
    let capsule = project.join("src").join("echo");
    std::fs::create_dir_all(&capsule).unwrap();
    std::fs::write(
        capsule.join("murmur.yaml"),
        "name: echo\nversion: 1.0.0\ndescription: Bench session.\nagent:\n  transport: builtin\n\
         lifecycle:\n  task_acceptance: queue\n  queue_depth: 64\nnetwork:\n  authentication: {}\n",
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

/// Spawns the a2a-sdk server; the server and the time from spawn to the card answering.
fn start_python(python: &Path) -> (Server, Duration) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/a2a_sdk_server/server.py"
    );
    let token = mur::running::new_token();
    let started = Instant::now();
    let mut child = Command::new(python)
        .arg(script)
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
    // The token goes over stdin, never on the command line.
    writeln!(stdin, "{}", server.token).unwrap();
    drop(stdin);
    let mut line = String::new();
    server.stdout.read_line(&mut line).unwrap();
    let port: u16 = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no port from the a2a-sdk server: {line:?}"));
    server.url = format!("http://127.0.0.1:{port}/");
    card(&server.url);
    let took = started.elapsed();
    (server, took)
}

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

/// A throughput run: requests/s, and the server's CPU µs per request.
struct Rate {
    requests: u64,
    rps: f64,
    server_cpu_us: f64,
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

/// `CONNECTIONS` callers send `method` (SendMessage, or GetTask of one finished task)
/// for `run`; every answer must be a JSON-RPC result, never an error.
///
/// The callers are one thread multiplexing kept-alive connections (as wrk does),
/// each sending the same request bytes: a request costs the client a write and a
/// read or two, so on two cores the servers, not the client, set the pace.
fn throughput(server: &Server, method: &str, run: Duration) -> Rate {
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let first = rt.block_on(async {
        let mut conn = Conn::open(&addr).await;
        let answer = conn.call(&request(server, &addr, &send_body())).await;
        serde_json::from_slice::<Value>(answer).unwrap()
    });
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{first}");
    let body = if method == "GetTask" {
        json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task["id"]}})
    } else {
        send_body()
    };
    let request = Arc::new(request(server, &addr, &body));
    let done = Arc::new(AtomicU64::new(0));
    let cpu_start = cpu_of(server.pid());
    let start = Instant::now();
    let deadline = start + run;
    rt.block_on(async {
        let callers: Vec<_> = (0..CONNECTIONS)
            .map(|_| {
                let (addr, request, done) = (addr.clone(), request.clone(), done.clone());
                tokio::spawn(async move {
                    let mut conn = Conn::open(&addr).await;
                    while Instant::now() < deadline && done.load(Ordering::Relaxed) < MAX_REQUESTS {
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
    let n = done.load(Ordering::Relaxed) as f64;
    let cpu = (cpu_of(server.pid()) - cpu_start).as_secs_f64();
    Rate {
        requests: n as u64,
        rps: n / elapsed,
        server_cpu_us: cpu * 1e6 / n,
    }
}

/// What one server measured.
struct Measured {
    start_up: Duration,
    idle_rss: f64,
    send: Rate,
    get: Rate,
    rss_after: f64,
}

fn measure(start: impl Fn() -> (Server, Duration), run: Duration) -> Measured {
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let (server, took) = start();
        times.push(took);
        drop(server);
    }
    let (server, _) = start();
    // Let start-up's last allocations settle before reading the idle footprint.
    std::thread::sleep(Duration::from_millis(500));
    let idle_rss = vm_rss_mib(server.pid());
    let send = throughput(&server, "SendMessage", run);
    let get = throughput(&server, "GetTask", run);
    let rss_after = vm_rss_mib(server.pid());
    Measured {
        start_up: median(times),
        idle_rss,
        send,
        get,
        rss_after,
    }
}

/// SendMessage throughput of a session whose HOME (records) is on /dev/shm, if any.
fn tmpfs_send(run: Duration) -> Option<Rate> {
    let home = tempfile::tempdir_in("/dev/shm").ok()?;
    let home = home.path().canonicalize().unwrap();
    let project = project(&home);
    let (server, _) = start_mur(&home, &project);
    let rate = throughput(&server, "SendMessage", run);
    drop(server);
    Some(rate)
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

fn main() {
    let secs: f64 = std::env::var("MUR_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let run = Duration::from_secs_f64(secs);
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    let project = project(&home);
    let load_before = load();

    let m = measure(|| start_mur(&home, &project), run);
    // Results and traces are fsynced in the background (records::Flusher); the same
    // session with its records on tmpfs shows what that costs.
    let tmpfs = tmpfs_send(run);
    let py = match python_with_sdk() {
        Ok(python) => Ok(measure(|| start_python(&python), run)),
        Err(why) => Err(why),
    };

    println!(
        "session: `mur run` (built-in transport, token required) beside a2a-sdk 1.3.0 \
         (starlette, uvicorn on uvloop + httptools, bearer checked by Starlette's AuthenticationMiddleware)"
    );
    println!(
        "  load average {load_before} before, {} after; {CONNECTIONS} connections, {secs} s per throughput run",
        load()
    );
    let py_col = |f: &dyn Fn(&Measured) -> String| match &py {
        Ok(p) => f(p),
        Err(_) => "skipped".into(),
    };
    println!("  {:<44} {:>14} {:>14}", "", "mur", "a2a-sdk");
    let row = |label: &str, f: &dyn Fn(&Measured) -> String| {
        println!("  {label:<44} {:>14} {:>14}", f(&m), py_col(f));
    };
    row(
        &format!("start-up to Agent Card (median of {RUNS})"),
        &|x| format!("{:.1} ms", x.start_up.as_secs_f64() * 1e3),
    );
    row("idle RSS (VmRSS)", &|x| format!("{:.1} MiB", x.idle_rss));
    row("SendMessage (blocking), requests/s", &|x| {
        format!("{:.0}", x.send.rps)
    });
    row("  server CPU µs per SendMessage", &|x| {
        format!("{:.0}", x.send.server_cpu_us)
    });
    if let Some(rate) = &tmpfs {
        for (label, value) in [
            (
                "  same, records on tmpfs (no fsync cost)",
                format!("{:.0}", rate.rps),
            ),
            (
                "  server CPU µs per SendMessage on tmpfs",
                format!("{:.0}", rate.server_cpu_us),
            ),
        ] {
            println!("  {label:<44} {value:>14} {:>14}", "-");
        }
    }
    row("GetTask, requests/s", &|x| format!("{:.0}", x.get.rps));
    row("  server CPU µs per GetTask", &|x| {
        format!("{:.0}", x.get.server_cpu_us)
    });
    row("tasks created by the runs", &|x| {
        format!("{}", x.send.requests + 2)
    });
    row("RSS after the throughput runs", &|x| {
        format!("{:.1} MiB", x.rss_after)
    });

    let start_ms = m.start_up.as_secs_f64() * 1e3;
    println!(
        "  goal start-up < 20 ms: {} ({start_ms:.1} ms)",
        verdict(start_ms < 20.0)
    );
    println!(
        "  goal idle RSS < 15 MiB: {} ({:.1} MiB)",
        verdict(m.idle_rss < 15.0),
        m.idle_rss
    );
    match &py {
        Ok(p) => {
            for (name, ours, theirs) in [
                ("SendMessage", &m.send, &p.send),
                ("GetTask", &m.get, &p.get),
            ] {
                let ratio = ours.rps / theirs.rps;
                println!(
                    "  goal {name} ≥ 20× a2a-sdk: {} ({ratio:.1}× the requests/s; the server's CPU per request {:.1}× less)",
                    verdict(ratio >= 20.0),
                    theirs.server_cpu_us / ours.server_cpu_us
                );
            }
        }
        Err(why) => {
            println!("  a2a-sdk comparison skipped: {why} (make it with `just bench-setup`)")
        }
    }
}
