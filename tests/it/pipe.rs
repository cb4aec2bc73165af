//! Every reporting command piped into a reader that goes away (`mur … | head -1`):
//! it ends with its own exit status and no panic (`mur::output`).
//!
//! The pipe is shrunk to one page (F_SETPIPE_SZ) and every command here prints more
//! than that, so after the reader took its first line and closed, the command's next
//! write really meets a closed pipe: it blocks on the full pipe until the close, then
//! gets EPIPE. Commands with only a line or two to say are also run with a pipe
//! closed before they start, so their first write fails.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use mur::trace::{Event, RecordedState, TraceWriter};

use crate::support;

/// The shared world (clean environment, one time scale), with this file's helpers.
struct World(support::World);

impl World {
    fn new() -> Self {
        World(support::World::new())
    }

    fn home(&self) -> PathBuf {
        self.0.home.clone()
    }

    fn proj(&self) -> PathBuf {
        self.0.proj.clone()
    }

    fn mur(&self, args: &[&str]) -> Command {
        let mut cmd = self.0.mur();
        cmd.args(args).stdin(Stdio::null());
        cmd
    }

    /// `count` capsule source folders `c000…` in the project, installed.
    fn install(&self, count: usize) -> Vec<String> {
        let names = self.sources(count);
        let out = self.mur(&["install"]).args(&names).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        names
    }

    fn sources(&self, count: usize) -> Vec<String> {
        (0..count)
            .map(|i| {
                let name = format!("c{i:03}");
                let dir = self.proj().join(&name);
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(
                    dir.join("murmur.yaml"),
                    format!(
                        "name: {name}\nversion: 1.0.0\ndescription: A test capsule.\nagent:\n  transport: builtin\n"
                    ),
                )
                .unwrap();
                name
            })
            .collect()
    }
}

/// What a command did with a reader that went away.
struct Ended {
    status: Option<i32>,
    first_line: String,
    stderr: String,
}

impl Ended {
    /// Exit status `status`, and nothing on stderr that tells of a panic.
    fn quietly(&self, status: i32) {
        assert_eq!(self.status, Some(status), "stderr: {}", self.stderr);
        for panic in ["panicked", "Broken pipe", "RUST_BACKTRACE"] {
            assert!(!self.stderr.contains(panic), "stderr: {}", self.stderr);
        }
    }
}

/// A pipe of one page: (read end, write end).
fn small_pipe() -> (std::fs::File, OwnedFd) {
    // Close-on-exec: a child another test spawns meanwhile must not hold our ends.
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    nix::fcntl::fcntl(&read, nix::fcntl::FcntlArg::F_SETPIPE_SZ(4096)).unwrap();
    (std::fs::File::from(read), write)
}

/// Runs `cmd` with stdout into a one-page pipe; reads one line, byte by byte (so no
/// more than that line leaves the pipe), then closes it, as `head -1` does.
fn head_1(mut cmd: Command) -> Ended {
    let (mut read, write) = small_pipe();
    let child = cmd
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `cmd` still holds the write end: drop it, or the pipe never closes for us.
    drop(cmd);
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while read.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    drop(read);
    let out = child.wait_with_output().unwrap();
    Ended {
        status: out.status.code(),
        first_line: String::from_utf8_lossy(&line).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `cmd` with stdout into a pipe whose reader is gone before it starts.
fn stdout_closed(mut cmd: Command) -> Ended {
    let (read, write) = small_pipe();
    drop(read);
    let out = cmd
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    Ended {
        status: out.status.code(),
        first_line: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `cmd` with stderr into a pipe whose reader is gone before it starts.
fn stderr_closed(mut cmd: Command) -> Option<i32> {
    let (read, write) = small_pipe();
    drop(read);
    cmd.stdout(Stdio::null())
        .stderr(Stdio::from(write))
        .status()
        .unwrap()
        .code()
}

fn long(text: &[u8]) {
    assert!(
        text.len() > 2 * 4096,
        "only {} bytes: too short to fill the pipe",
        text.len()
    );
}

#[test]
fn explain_into_head() {
    let w = World::new();
    long(&w.mur(&["explain", "--markdown"]).output().unwrap().stdout);
    let e = head_1(w.mur(&["explain", "--markdown"]));
    e.quietly(0);
    assert!(e.first_line.starts_with('#'), "{}", e.first_line);
    // --list is shorter than a page: its first write meets the closed pipe.
    stdout_closed(w.mur(&["explain", "--list"])).quietly(0);
    stdout_closed(w.mur(&["explain", "E-ROS-001"])).quietly(0);
}

#[test]
fn install_into_head_installs_everything() {
    let w = World::new();
    let names = w.sources(120);
    let mut install = w.mur(&["install"]);
    install.args(&names);
    let e = head_1(install);
    e.quietly(0);
    assert!(
        e.first_line.starts_with("installed local/c000 1.0.0"),
        "{}",
        e.first_line
    );
    // Every artifact is in the store, though nobody read the report.
    let out = w.mur(&["ls", "--json"]).output().unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 120, "{listed}");
}

#[test]
fn ls_into_head() {
    let w = World::new();
    w.install(120);
    long(&w.mur(&["ls"]).output().unwrap().stdout);
    let e = head_1(w.mur(&["ls"]));
    e.quietly(0);
    assert!(e.first_line.starts_with("STORE"), "{}", e.first_line);
    head_1(w.mur(&["ls", "--json"])).quietly(0);
}

#[test]
fn lock_into_head_still_writes_the_lock() {
    let w = World::new();
    w.install(80);
    let e = head_1(w.mur(&["lock"]));
    e.quietly(0);
    assert!(e.first_line.starts_with("pinned "), "{}", e.first_line);
    let lock = std::fs::read_to_string(w.proj().join("murmur.lock")).unwrap();
    assert!(lock.matches("c0").count() >= 80, "{lock}");
    // Up to date now: one line, into a pipe already closed.
    stdout_closed(w.mur(&["lock"])).quietly(0);
}

#[test]
fn doctor_into_head() {
    let w = World::new();
    let names = w.install(80);
    let mut roster = String::from("roster_version: 1\nmembers:\n");
    for (i, name) in names.iter().enumerate() {
        roster.push_str(&format!(
            "  - name: m{i:03}\n    capsule: local/{name}\n    version: 1.0.0\n"
        ));
        if i == 0 {
            roster.push_str("    entry: true\n");
        }
    }
    std::fs::write(w.proj().join("roster.yaml"), roster).unwrap();
    long(&w.mur(&["doctor"]).output().unwrap().stdout);
    let e = head_1(w.mur(&["doctor"]));
    e.quietly(0);
    assert!(
        e.first_line
            .ends_with("admitted (80 members, 0 edges, 0 warnings)"),
        "{}",
        e.first_line
    );
    stdout_closed(w.mur(&["doctor", "--json"])).quietly(0);
    // Refused, with stderr gone: the status still tells.
    std::fs::write(
        w.proj().join("roster.yaml"),
        "roster_version: 1\nmembers: []\n",
    )
    .unwrap();
    assert_eq!(stderr_closed(w.mur(&["doctor"])), Some(1));
}

#[test]
fn pack_and_new_into_a_closed_pipe() {
    let w = World::new();
    let names = w.sources(1);
    let out = w.proj().join("out");
    let e = stdout_closed(w.mur(&["pack", &names[0], "--out", out.to_str().unwrap()]));
    e.quietly(0);
    assert!(
        out.join("c000-1.0.0.mur.zip").is_file(),
        "packed though nobody read it"
    );
    stdout_closed(w.mur(&["new", "hello"])).quietly(0);
    assert!(w.proj().join("hello/murmur.yaml").is_file());
    stdout_closed(w.mur(&["new", "crew", "--roster"])).quietly(0);
    assert!(w.proj().join("crew/roster.yaml").is_file());
}

/// `~/.murmur/records/<project>/ses_…/trace.jsonl` with `records` task_state records.
fn long_trace(w: &World, session_id: &str, records: usize) {
    let dir = w.home().join(".murmur/records/proj").join(session_id);
    std::fs::create_dir_all(&dir).unwrap();
    let trace = TraceWriter::create(&dir.join(mur::trace::FILE_NAME)).unwrap();
    for i in 0..records {
        trace
            .write(Event::TaskState {
                task_id: format!("task-{i}").into(),
                from: None,
                to: RecordedState::Submitted,
                reason: None,
            })
            .unwrap();
    }
}

#[test]
fn trace_show_into_head() {
    let w = World::new();
    let id = "ses_0199c4e2f1b7712a9d3e4f5061728394";
    long_trace(&w, id, 2000);
    long(&w.mur(&["trace", "show", id]).output().unwrap().stdout);
    let e = head_1(w.mur(&["trace", "show", id]));
    e.quietly(0);
    assert!(e.first_line.contains("task-0"), "{}", e.first_line);
}

/// A running record for this test process (alive, as far as `mur ps` can tell).
fn running_record(w: &World, i: usize) {
    let dir = w.home().join(".murmur/running");
    std::fs::create_dir_all(&dir).unwrap();
    let id = format!("ses_0199c4e2f1b7712a9d3e4f50617{i:05}");
    let record = serde_json::json!({
        "session_id": id,
        "pid": std::process::id(),
        "start_time": null,
        "started_at": "2026-12-03T10:00:00Z",
        "capsule": "local/c000",
        "version": "1.0.0",
        "door_url": "http://127.0.0.1:40000",
        // In the project `mur ps` runs in: it lists that project's sessions.
        "workdir": w.proj(),
        "records_dir": "/tmp",
    });
    std::fs::write(dir.join(format!("{id}.json")), record.to_string()).unwrap();
}

#[test]
fn ps_into_head() {
    let w = World::new();
    for i in 0..120 {
        running_record(&w, i);
    }
    long(&w.mur(&["ps"]).output().unwrap().stdout);
    let e = head_1(w.mur(&["ps"]));
    e.quietly(0);
    assert!(e.first_line.starts_with("SESSION"), "{}", e.first_line);
    head_1(w.mur(&["ps", "--json"])).quietly(0);
}

#[test]
fn ps_with_stderr_gone_and_nothing_running() {
    let w = World::new();
    // "no running sessions" goes to stderr, which nobody reads.
    assert_eq!(stderr_closed(w.mur(&["ps"])), Some(0));
}

/// The one log sink: a warning from deep in mur (a running record that does not
/// parse) reaches the user's stderr in mur's own style.
#[test]
fn warnings_reach_stderr() {
    let w = World::new();
    running_record(&w, 1);
    let bad = w.home().join(".murmur/running/ses_broken.json");
    std::fs::write(&bad, "{not json").unwrap();
    let out = w.mur(&["ps"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want = format!("[mur ps] warning: skipping {}: ", bad.display());
    assert!(
        stderr.lines().any(|l| l.starts_with(&want)),
        "want a line starting {want:?} in {stderr:?}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
