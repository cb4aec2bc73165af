//! `transport: process`: a native harness that speaks JSON lines. mur writes the
//! task, tool results and replies on its stdin; every line the harness writes on its
//! stdout ends one turn. docs/agent.md is the protocol's reference.
//!
//! The harness runs in a process group of its own, so stopping it stops whatever it
//! started too.

use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::spawn::{Child, Pipe, Sender, Spawn, Stderr};

use super::{
    Artifact, BoxFuture, Conversation, Message, ProcessConfig, Reply, ToolCall, Transport,
};

/// A harness line longer than this is refused, so a runaway harness cannot exhaust memory.
pub const MAX_LINE: u64 = 16 * 1024 * 1024;

/// How long a harness has to exit after SIGTERM before it gets SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// The process transport. The harness starts on the first turn and lives until the
/// task ends (across an input-required pause).
pub struct ProcessTransport {
    config: ProcessConfig,
    harness: Option<Harness>,
    /// How many messages of the conversation the harness has seen.
    sent: usize,
}

struct Harness {
    child: Child,
    stdin: Option<Sender>,
    stdout: BufReader<Pipe>,
    /// The harness's process group (its own pid).
    pgid: Option<Pid>,
    /// When it started (field 22 of its /proc stat): what it orphans after it exits
    /// becomes this process's stray, started since.
    start: Option<u64>,
    _own: crate::descendants::Own,
}

impl ProcessTransport {
    pub fn new(config: ProcessConfig) -> Result<Self, String> {
        if config.command.first().is_none_or(|p| p.is_empty()) {
            return Err("transport: process has an empty command".to_string());
        }
        Ok(ProcessTransport {
            config,
            harness: None,
            sent: 0,
        })
    }

    /// The running harness's pid.
    pub fn pid(&self) -> Option<u32> {
        self.harness.as_ref().and_then(|h| h.child.id())
    }

    fn spawn(&self) -> Result<Harness, String> {
        let cfg = &self.config;
        // Looked up in the harness's own PATH, as the shell it is written for would.
        let path = cfg
            .env
            .iter()
            .find(|(k, _)| k == crate::env::PATH)
            .map_or(crate::grant::DEFAULT_PATH, |(_, v)| v.as_str());
        let program =
            crate::spawn::find_program(&cfg.command[0], &cfg.cwd, path).ok_or_else(|| {
                format!(
                    "cannot start `{}`: no such program in PATH {path}",
                    cfg.command.join(" ")
                )
            })?;
        let stderr = match &cfg.stderr {
            Some(path) => crate::fsutil::open_private(path, crate::fsutil::Open::Append)
                .map(|f| Stderr::To(f.into()))
                .map_err(|e| format!("cannot open {} for its stderr: {e}", path.display()))?,
            None => Stderr::Inherit,
        };
        let mut command = Spawn::new(&program);
        command
            .args(&cfg.command[1..])
            .current_dir(&cfg.cwd)
            .env_clear()
            .envs(cfg.env.iter().map(|(k, v)| (k, v)))
            .stdin_piped()
            .stderr(stderr)
            .confined(cfg.confine.as_ref())
            .own_group()
            // Backstop for a mur that is SIGKILLed and so cannot shut its harness
            // down: the kernel kills the harness when the thread that started it dies
            // (a runtime worker, which lives as long as the session's runtime).
            .parent_death_signal()
            // What the harness's children orphan stays below it, so stopping it can
            // find and kill all of it.
            .child_subreaper()
            .kill_on_drop();
        let (mut child, own) = crate::descendants::spawn_owned(|| command.spawn(None), |c| c.id())
            .map_err(|e| format!("cannot start `{}`: {e}", cfg.command.join(" ")))?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the harness has no stdin or stdout".to_string());
        };
        let start = child
            .id()
            .and_then(crate::descendants::stat)
            .map(|p| p.start);
        Ok(Harness {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            pgid,
            start,
            _own: own,
        })
    }

    /// The lines the harness has not seen yet: the task on the first turn, then tool
    /// results and replies.
    fn pending(&mut self, c: &Conversation, first: bool) -> Vec<serde_json::Value> {
        let mut lines = Vec::new();
        if first {
            lines.push(serde_json::json!({
                "type": "task",
                "task_id": c.task_id,
                "text": c.last_user_text().unwrap_or(""),
                "system": c.system,
                "tools": c.tools,
            }));
        } else {
            for m in &c.messages[self.sent.min(c.messages.len())..] {
                match m {
                    Message::Tool {
                        call_id,
                        name,
                        output,
                        is_error,
                    } => lines.push(serde_json::json!({
                        "type": "tool_result",
                        "id": call_id,
                        "name": name,
                        "output": output,
                        "is_error": is_error,
                    })),
                    Message::User { text } => {
                        lines.push(serde_json::json!({"type": "reply", "text": text}));
                    }
                    Message::Assistant { .. } => {}
                }
            }
        }
        self.sent = c.messages.len();
        lines
    }

    async fn exchange(&mut self, c: &Conversation) -> Result<Reply, String> {
        let first = self.harness.is_none();
        if first {
            self.harness = Some(self.spawn()?);
        }
        let lines = self.pending(c, first);
        let Some(h) = self.harness.as_mut() else {
            return Err("the harness is not running".to_string());
        };
        let mut out = Vec::new();
        for line in lines {
            out.extend_from_slice(line.to_string().as_bytes());
            out.push(b'\n');
        }
        if let Some(stdin) = h.stdin.as_mut()
            && let Err(e) = write_all(stdin, &out).await
        {
            let status = exit_status(&mut h.child).await;
            return Err(format!(
                "the harness stopped reading its input ({e}){status}"
            ));
        }
        loop {
            let mut buf = Vec::new();
            let n = (&mut h.stdout)
                .take(MAX_LINE)
                .read_until(b'\n', &mut buf)
                .await
                .map_err(|e| format!("cannot read the harness's output: {e}"))?;
            if n == 0 {
                let status = exit_status(&mut h.child).await;
                return Err(format!(
                    "the harness ended its output without answering{status}"
                ));
            }
            if buf.last() != Some(&b'\n') && n as u64 == MAX_LINE {
                return Err(format!("the harness wrote a line over {MAX_LINE} bytes"));
            }
            let text = String::from_utf8_lossy(&buf);
            if text.trim().is_empty() {
                continue;
            }
            return parse_line(text.trim());
        }
    }
}

async fn write_all(stdin: &mut Sender, bytes: &[u8]) -> std::io::Result<()> {
    stdin.write_all(bytes).await?;
    stdin.flush().await
}

/// How the harness ended, for a failure reason: it closed a pipe, so it is usually
/// exiting; one that keeps running is not waited for beyond [`TERM_GRACE`].
async fn exit_status(child: &mut Child) -> String {
    match tokio::time::timeout(TERM_GRACE, child.wait()).await {
        Ok(Ok(status)) => describe(status),
        _ => String::new(),
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!(": it exited with status {code}"),
        (None, Some(sig)) => format!(": it was killed by signal {sig}"),
        _ => String::new(),
    }
}

impl Transport for ProcessTransport {
    fn name(&self) -> &'static str {
        "process"
    }

    fn turn<'a>(&'a mut self, c: &'a Conversation) -> BoxFuture<'a, Result<Reply, String>> {
        Box::pin(self.exchange(c))
    }

    /// Closes the harness's stdin, sends its process group SIGTERM, gives it
    /// [`TERM_GRACE`], then SIGKILL to the group and to everything that was below the
    /// harness when it was asked to stop (setsid and double forks included: the
    /// harness is a subreaper), and to every stray of this process that started since
    /// the harness did (what it orphaned when it exited, before or during the stop,
    /// reparents here); returns once the harness is reaped.
    fn shutdown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some(mut h) = self.harness.take() else {
                return;
            };
            let tree = match h.child.id() {
                Some(pid) => crate::descendants::pin_tree(pid, false),
                None => Vec::new(),
            };
            drop(h.stdin.take());
            if let Some(pgid) = h.pgid {
                let _ = killpg(pgid, Signal::SIGTERM);
            }
            if tokio::time::timeout(TERM_GRACE, h.child.wait())
                .await
                .is_err()
            {
                if let Some(pgid) = h.pgid {
                    let _ = killpg(pgid, Signal::SIGKILL);
                }
                let _ = h.child.wait().await;
            }
            // Whatever of the group ignored SIGTERM goes too.
            if let Some(pgid) = h.pgid {
                let _ = killpg(pgid, Signal::SIGKILL);
            }
            let until = std::time::Instant::now() + TERM_GRACE;
            let start = h.start;
            let _ = tokio::task::spawn_blocking(move || {
                crate::descendants::kill_pinned(&tree, until);
                if let Some(start) = start {
                    crate::descendants::sweep_strays_since(start);
                }
            })
            .await;
        })
    }
}

impl Drop for ProcessTransport {
    /// A transport dropped without `shutdown` (its task's future was dropped) still
    /// leaves nothing running; once its pid is no longer owned, the session's stray
    /// reaper reaps it.
    fn drop(&mut self) {
        if let Some(pgid) = self.harness.as_ref().and_then(|h| h.pgid) {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

/// A line the harness writes.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum HarnessLine {
    Message {
        text: String,
    },
    ToolCall {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        arguments: serde_json::Value,
        #[serde(default)]
        calls: Vec<ToolCall>,
        #[serde(default)]
        text: Option<String>,
    },
    Result {
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        artifacts: Vec<Artifact>,
    },
    InputRequired {
        question: String,
    },
    Rejected {
        reason: String,
    },
    Failed {
        reason: String,
    },
}

/// One line the harness wrote, read; public for fuzz/ (fuzz_targets/harness_line.rs).
pub fn parse_line(line: &str) -> Result<Reply, String> {
    let parsed: HarnessLine = serde_json::from_str(line).map_err(|e| {
        // serde's message quotes what it refused (an unknown `type`) whole: bound it too.
        let why: String = e.to_string().chars().take(200).collect();
        let shown: String = line.chars().take(200).collect();
        format!("the harness wrote a line that is not one of its messages ({why}): {shown}")
    })?;
    Ok(match parsed {
        HarnessLine::Message { text } => Reply::Answer {
            text: Some(text),
            artifacts: Vec::new(),
        },
        HarnessLine::Result { text, artifacts } => Reply::Answer { text, artifacts },
        HarnessLine::ToolCall {
            id,
            name,
            arguments,
            mut calls,
            text,
        } => {
            if let Some(name) = name {
                calls.insert(
                    0,
                    ToolCall {
                        id: id.unwrap_or_default(),
                        name,
                        arguments,
                    },
                );
            }
            if calls.is_empty() {
                return Err("the harness wrote a tool_call with no `name` and no `calls`".into());
            }
            Reply::ToolCalls { text, calls }
        }
        HarnessLine::InputRequired { question } => Reply::InputRequired { question },
        HarnessLine::Rejected { reason } => Reply::Rejected { reason },
        HarnessLine::Failed { reason } => Reply::Failed { reason },
    })
}

#[cfg(test)]
mod tests;
