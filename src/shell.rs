//! The `shell` tool, offered when the manifest has `capabilities.shell`: `sh -c` in
//! the session's work folder, with the environment `grant::env` gives a shell command
//! (the names in `capabilities.shell.baseline_env`, no credential, plus HOME and
//! TMPDIR: the session's home/ and tmp/), confined with the session's confinement
//! (docs/confinement.md) unless the user opted out. docs/shell.md.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::spawn::{Spawn, Stderr};

use crate::agent::{BoxFuture, Tool, ToolCall, ToolOutput};

/// The tool's name.
pub const NAME: &str = "shell";
/// How much of each of stdout and stderr the result keeps; the rest is read and dropped.
pub const OUTPUT_CAP: usize = 64 * 1024;
/// A command's time limit when the call gives no `timeout_s`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest `timeout_s` a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// After the command exits, how long what it left running may keep its output open.
const OUTPUT_GRACE: Duration = Duration::from_millis(200);

/// Where and with what a session's shell commands run.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// The session's work folder.
    pub workdir: PathBuf,
    /// The whole environment of a command (`grant::env` for a shell command).
    pub env: Vec<(String, String)>,
    /// The session's confinement; `None` under the opt-out.
    pub confine: Option<crate::confine::Confined>,
}

/// The tool, for one task.
pub struct Shell {
    config: Arc<ShellConfig>,
}

impl Shell {
    pub fn tool(config: Arc<ShellConfig>) -> Arc<dyn Tool> {
        Arc::new(Shell { config })
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Ran {
    /// Its exit status; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// It ran past its time limit: its whole process tree was killed.
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    /// How many bytes of stdout (stderr) were dropped past [`OUTPUT_CAP`].
    pub stdout_dropped: u64,
    pub stderr_dropped: u64,
}

/// Kills the command's whole tree unless it was disarmed: a call dropped midway (its
/// task canceled) leaves nothing running.
struct TreeGuard(Option<u32>);

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            crate::descendants::sweep(pid, true);
        }
    }
}

/// Runs `command` with `sh -c` as `config` says, for at most `timeout`.
pub async fn run(config: &ShellConfig, command: &str, timeout: Duration) -> Result<Ran, String> {
    let mut cmd = Spawn::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&config.workdir)
        .env_clear()
        .envs(config.env.iter().map(|(k, v)| (k, v)))
        .stderr(Stderr::Piped)
        .confined(config.confine.as_ref())
        .own_group()
        .parent_death_signal()
        // What the command orphans stays below it, so a timeout finds and kills all of it.
        .child_subreaper()
        .kill_on_drop();
    let (mut child, _own) = crate::descendants::spawn_owned(|| cmd.spawn(None), |c| c.id())
        .map_err(|e| format!("cannot start /bin/sh: {e}"))?;
    let mut guard = TreeGuard(child.id());
    let (out, err) = (Captured::default(), Captured::default());
    let reads = [
        tokio::spawn(out.clone().read(child.stdout.take())),
        tokio::spawn(err.clone().read(child.stderr.take())),
    ];
    let (status, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            if let Some(pid) = guard.0.take() {
                let _ =
                    tokio::task::spawn_blocking(move || crate::descendants::sweep(pid, true)).await;
            }
            (child.wait().await.ok(), true)
        }
    };
    // Exited: what it left running is the session's (swept at its end), not this call's.
    guard.0 = None;
    // What it left running may hold the pipes open (`sleep 100 & echo x`): past the
    // grace, the reads stop and what they read so far is the result.
    let grace = tokio::time::sleep(OUTPUT_GRACE);
    tokio::pin!(grace);
    for read in reads {
        let abort = read.abort_handle();
        if tokio::select! { _ = read => false, _ = &mut grace => true } {
            abort.abort();
        }
    }
    let ((stdout, stdout_dropped), (stderr, stderr_dropped)) = (out.take(), err.take());
    use std::os::unix::process::ExitStatusExt;
    Ok(Ran {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        stdout_dropped,
        stderr_dropped,
    })
}

/// What a read of stdout or stderr has kept so far: the first [`OUTPUT_CAP`] bytes,
/// and how many more came. Shared, so a read stopped midway leaves what it read.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<(Vec<u8>, u64)>>);

impl Captured {
    /// Reads `pipe` to its end.
    async fn read(self, pipe: Option<impl AsyncRead + Unpin>) {
        let Some(mut pipe) = pipe else {
            return;
        };
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut got = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let room = OUTPUT_CAP - got.0.len();
            got.0.extend_from_slice(&buf[..n.min(room)]);
            got.1 += n.saturating_sub(room) as u64;
        }
    }

    fn take(&self) -> (Vec<u8>, u64) {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The call's arguments: `{"command": <text>, "timeout_s": <seconds>?}`.
fn parse(call: &ToolCall) -> Result<(String, Duration), String> {
    let command = call
        .arguments
        .get("command")
        .and_then(|c| c.as_str())
        .ok_or("shell needs `command`: the text for sh -c")?;
    let timeout = match call.arguments.get("timeout_s") {
        None | Some(serde_json::Value::Null) => DEFAULT_TIMEOUT,
        Some(v) => {
            let secs = v
                .as_f64()
                .filter(|s| s.is_finite() && *s > 0.0)
                .ok_or("`timeout_s` must be a number of seconds above 0")?;
            Duration::from_secs_f64(secs).min(MAX_TIMEOUT)
        }
    };
    Ok((command.to_string(), timeout))
}

impl Tool for Shell {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Run a command with `sh -c` in the session's work folder. Returns its exit code, \
         stdout and stderr (each cut at 64 KiB). `timeout_s` (default 120, at most 3600) \
         bounds it: past it the command and everything it started are killed."
    }

    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The text for sh -c."},
                "timeout_s": {"type": "number", "description": "Seconds before the command is killed (default 120)."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (command, timeout) = match parse(call) {
                Ok(p) => p,
                Err(e) => return ToolOutput::error(e),
            };
            match run(&self.config, &command, timeout).await {
                Ok(ran) => {
                    let text = serde_json::to_string(&ran).unwrap_or_default();
                    if ran.timed_out {
                        ToolOutput::error(text)
                    } else {
                        ToolOutput::ok(text)
                    }
                }
                Err(e) => ToolOutput::error(e),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &std::path::Path) -> ShellConfig {
        ShellConfig {
            workdir: dir.to_path_buf(),
            env: vec![("HOME".into(), dir.display().to_string())],
            confine: None,
        }
    }

    #[tokio::test]
    async fn exit_status_and_both_streams_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run(
            &config(dir.path()),
            "echo out; echo err >&2; exit 3",
            DEFAULT_TIMEOUT,
        )
        .await
        .unwrap();
        assert_eq!(ran.exit_code, Some(3));
        assert_eq!(ran.stdout, "out\n");
        assert_eq!(ran.stderr, "err\n");
        assert!(!ran.timed_out);
    }

    #[tokio::test]
    async fn output_past_the_cap_is_counted_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run(
            &config(dir.path()),
            "head -c 100000 /dev/zero | tr '\\0' x",
            DEFAULT_TIMEOUT,
        )
        .await
        .unwrap();
        assert_eq!(ran.stdout.len(), OUTPUT_CAP);
        assert_eq!(ran.stdout_dropped, 100_000 - OUTPUT_CAP as u64);
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_tree_setsid_and_double_forks_included() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("gc.pid");
        let p = pidfile.display();
        let command = format!(
            "( setsid sh -c 'trap \"\" TERM; echo $$ > {p}.tmp; mv {p}.tmp {p}; exec sleep 600' </dev/null >/dev/null 2>&1 & ); while [ ! -e {p} ]; do sleep 0.01; done; sleep 600"
        );
        // Long enough for the grandchild to start and write its pid on a loaded machine.
        let ran = run(&config(dir.path()), &command, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(ran.timed_out);
        assert_eq!(ran.signal, Some(9));
        let pid: u32 = std::fs::read_to_string(&pidfile)
            .expect("the grandchild wrote its pid before the timeout")
            .trim()
            .parse()
            .unwrap();
        let gone = crate::descendants::stat(pid).is_none_or(|p| p.is_zombie());
        assert!(gone, "the grandchild {pid} outlived the timeout");
    }

    #[test]
    fn bad_arguments_are_refused() {
        let call = |args: serde_json::Value| ToolCall {
            id: "c".into(),
            name: NAME.into(),
            arguments: args,
        };
        assert!(parse(&call(serde_json::json!({}))).is_err());
        assert!(parse(&call(serde_json::json!({"command": "x", "timeout_s": 0}))).is_err());
        assert!(parse(&call(serde_json::json!({"command": "x", "timeout_s": "5"}))).is_err());
        let (_, t) = parse(&call(serde_json::json!({"command": "x", "timeout_s": 1e9}))).unwrap();
        assert_eq!(t, MAX_TIMEOUT);
        let (_, t) = parse(&call(serde_json::json!({"command": "x"}))).unwrap();
        assert_eq!(t, DEFAULT_TIMEOUT);
    }
}
