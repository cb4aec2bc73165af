//! Helpers for the `mur run` tests: capsules installed with the real `mur install`,
//! sessions started as real processes, their readiness
//! line, trace and records read back, and a launcher's side of a formation (channel,
//! lifeline, credentials) built with the library's own types.

use std::io::{BufRead, BufReader, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use command_fds::{CommandFdExt, FdMapping};
use mur::channel::{self, Credentials, Line};
use mur::credential::FormationKey;
use mur::lifeline::Lifeline;
use serde_json::Value;

use super::{KillOnDrop, World};

/// A harness that takes its task and sleeps (SIGTERM to its group ends it).
pub const SLEEPER: &str =
    "read line\n: > \"$HOME/started\"\nsleep 30\necho '{\"type\":\"message\",\"text\":\"woke\"}'\n";
/// A harness that ignores SIGTERM (and so does its sleep): teardown waits for SIGKILL.
pub const STUBBORN: &str = "trap '' TERM\nread line\n: > \"$HOME/started\"\nsleep 30\necho '{\"type\":\"message\",\"text\":\"woke\"}'\n";

/// Sessions, records and traces of a world.
impl World {
    /// `mur run` of the installed capsule `local/<name>` 1.0.0.
    pub fn run(&self, name: &str) -> Command {
        let mut cmd = self.mur();
        cmd.args(["run", "--capsule", &format!("local/{name}")])
            .args(["--capsule-version", "1.0.0"]);
        cmd
    }

    /// `mur run --task <task>` of the installed capsule `local/<name>`, to its end.
    pub fn run_task(&self, name: &str, task: &str) -> std::process::Output {
        self.run(name).args(["--task", task]).output().unwrap()
    }

    /// Writes a capsule source folder and installs it into the project store.
    /// `harness`: a process harness script, else the builtin model.
    pub fn install(&self, name: &str, extra: &str, harness: Option<&str>) {
        let src = self.dir.path().join("src").join(name);
        std::fs::create_dir_all(&src).unwrap();
        let agent = match harness {
            Some(script) => {
                std::fs::write(src.join("harness.sh"), script).unwrap();
                "agent:\n  transport: process\n  command: [\"sh\", \"harness.sh\"]\n"
            }
            None => "agent:\n  transport: builtin\n",
        };
        std::fs::write(
            src.join("murmur.yaml"),
            format!("name: {name}\nversion: 1.0.0\ndescription: A test capsule.\n{agent}{extra}"),
        )
        .unwrap();
        let out = self.mur().arg("install").arg(&src).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn records_root(&self) -> PathBuf {
        self.home.join(".murmur/records")
    }

    pub fn running_dir(&self) -> PathBuf {
        self.home.join(".murmur/running")
    }

    /// The records directory of session `id`.
    pub fn records(&self, id: &str) -> PathBuf {
        find(&self.records_root(), id).unwrap_or_else(|| panic!("no records for {id}"))
    }

    /// Every session id with records, in start order.
    pub fn sessions(&self) -> Vec<String> {
        let mut found = Vec::new();
        walk_sessions(&self.records_root(), &mut found);
        found.sort();
        found
    }

    pub fn trace(&self, id: &str) -> Vec<Value> {
        read_trace(&self.records(id).join("trace.jsonl"))
    }

    pub fn result(&self, id: &str) -> String {
        std::fs::read_to_string(self.records(id).join("out/result.txt")).unwrap_or_default()
    }

    pub fn token(&self, id: &str) -> String {
        std::fs::read_to_string(self.running_dir().join(format!("{id}.token")))
            .unwrap()
            .trim()
            .to_string()
    }
}

fn find(dir: &Path, id: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if !p.is_dir() {
            continue;
        }
        if e.file_name() == id {
            return Some(p);
        }
        if let Some(found) = find(&p, id) {
            return Some(found);
        }
    }
    None
}

fn walk_sessions(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with("ses_") && e.path().join("trace.jsonl").is_file() {
            out.push(name);
        } else if e.path().is_dir() {
            walk_sessions(&e.path(), out);
        }
    }
}

pub fn read_trace(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub fn types(trace: &[Value]) -> Vec<String> {
    trace
        .iter()
        .map(|r| r["type"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A running session: its process, stdout lines as they come, and stderr collected.
/// A test that fails before `wait` leaves no session behind ([`KillOnDrop`]).
pub struct Session {
    pub child: KillOnDrop,
    pub lines: mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Session {
    pub fn spawn(mut cmd: Command) -> Session {
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Session {
            child: KillOnDrop::pid(child),
            lines: rx,
            stderr: Some(stderr),
        }
    }

    /// The first stdout line, parsed: the readiness line.
    pub fn ready(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a readiness line within 30 s");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig).unwrap();
    }

    /// What the session wrote to stderr, once it has closed it.
    fn stderr(&mut self) -> String {
        self.stderr
            .take()
            .map(|t| t.join().unwrap())
            .unwrap_or_default()
    }

    /// Waits for the exit (at most `limit`) and returns its code (128+signal) and stderr.
    pub fn wait(mut self, limit: Duration) -> (i32, String) {
        use std::os::unix::process::ExitStatusExt;
        let until = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let code = status
                    .code()
                    .or_else(|| status.signal().map(|s| 128 + s))
                    .unwrap();
                return (code, self.stderr());
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "the session did not exit within {limit:?}: {}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Waits (polling, at most 30 s) until `cond` holds.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until session `id`'s trace holds a record of `kind`.
pub fn wait_record(w: &World, kind: &str) -> String {
    let mut found = String::new();
    wait_for(kind, || {
        for id in w.sessions() {
            if types(&w.trace(&id)).iter().any(|t| t == kind) {
                found = id;
                return true;
            }
        }
        false
    });
    found
}

/// Waits until a harness of session `id` has its task (it writes `$HOME/started`).
pub fn wait_harness(w: &World) -> String {
    let mut found = String::new();
    wait_for("the harness to start", || {
        for id in w.sessions() {
            if w.records(&id).join("home/started").exists() {
                found = id;
                return true;
            }
        }
        false
    });
    found
}

/// One JSON-RPC call to a door with a bearer token: its answer.
pub fn rpc(door: &str, token: &str, method: &str, params: Value) -> Value {
    let (status, answer) = rpc_status(door, token, method, params);
    answer.unwrap_or_else(|| panic!("HTTP {status} with no JSON answer"))
}

/// One JSON-RPC call to a door with a bearer token: the HTTP status, and the answer
/// where it is JSON (a refused token may have none).
pub fn rpc_status(door: &str, token: &str, method: &str, params: Value) -> (u16, Option<Value>) {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let response = mur::door::client()
            .build()
            .unwrap()
            .post(format!("{door}/"))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap();
        (status, serde_json::from_slice(&bytes).ok())
    })
}

/// The launcher's side of one member: its formation key, channel and lifeline.
pub struct Launcher {
    pub key: FormationKey,
    pub channel: channel::Writer,
    pub lifeline: Lifeline,
    channel_read: Option<OwnedFd>,
    lifeline_read: Option<OwnedFd>,
}

impl Default for Launcher {
    fn default() -> Self {
        Launcher::new()
    }
}

impl Launcher {
    pub fn new() -> Launcher {
        let (channel, channel_read) = channel::Writer::new().unwrap();
        let (lifeline, lifeline_read) = Lifeline::new().unwrap();
        Launcher {
            key: FormationKey::mint().unwrap(),
            channel,
            lifeline,
            channel_read: Some(channel_read),
            lifeline_read: Some(lifeline_read),
        }
    }

    pub fn formation(&self) -> String {
        self.key.formation_id().to_string()
    }

    /// Credentials for member `name` calling `callees`, bound to `sha256`.
    pub fn credentials(
        &self,
        w: &World,
        name: &str,
        callees: &[&str],
        sha256: &str,
    ) -> Credentials {
        Credentials {
            formation: self.formation().parse().unwrap(),
            member: name.parse().unwrap(),
            entry: false,
            verify_key: self.key.verify_key().key_text(),
            tokens: callees
                .iter()
                .map(|c| (c.parse().unwrap(), self.key.issue(name, c)))
                .collect(),
            project_dir: w.proj.clone(),
            workdir: w.proj.clone(),
            artifact_sha256: sha256.parse().unwrap(),
            deadline_unix_ms: None,
            otlp: None,
        }
    }

    pub fn send(&mut self, creds: Credentials) {
        self.channel.send(&Line::Credentials(creds)).unwrap();
    }

    /// The read end of the lifeline, for a test that hands descriptors itself.
    pub fn take_lifeline_read(&mut self) -> OwnedFd {
        self.lifeline_read.take().unwrap()
    }

    /// Hands `cmd` the member's environment, lifeline (fd 3) and channel (fd 4).
    pub fn attach(&mut self, cmd: &mut Command, lifeline: bool) {
        cmd.env("MURMUR_FORMATION_ID", self.formation())
            .env("MURMUR_FORMATION_CHANNEL", "4");
        let mut maps = vec![FdMapping {
            parent_fd: self.channel_read.take().unwrap(),
            child_fd: 4,
        }];
        let read = self.lifeline_read.take().unwrap();
        if lifeline {
            cmd.env("MURMUR_FORMATION_LIFELINE", "3");
            maps.push(FdMapping {
                parent_fd: read,
                child_fd: 3,
            });
        }
        cmd.fd_mappings(maps).unwrap();
    }
}

/// The sha256 the project store holds for `local/<name>` 1.0.0.
pub fn installed_sha(w: &World, name: &str) -> String {
    let zip = w
        .proj
        .join(format!(".murmur/artifacts/local/{name}/1.0.0.mur.zip"));
    let bytes = std::fs::read(&zip).unwrap_or_else(|e| panic!("{}: {e}", zip.display()));
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(&bytes))
}
