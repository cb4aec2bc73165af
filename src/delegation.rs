//! Delegation: the `delegate` tool, offered when the manifest has a non-empty
//! `capabilities.spawn.allow`. It starts an installed capsule as a child `mur run`
//! session (the same stores and lock), gives it the task, and the child's answer
//! comes back into the task at the end of its turn, as call-member's answers do.
//! docs/delegation.md.
//!
//! A child inherits `MURMUR_FORMATION_ID` and nothing else of the formation. It holds
//! a spawner lifeline (`MURMUR_SPAWNER_LIFELINE`) whose write end only this session
//! holds: the child winds down when it closes, however this session ends.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, MutexGuard};

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::agent::awaited::{Awaited, Pending, Reply};
use crate::agent::{BoxFuture, Tool, ToolCall, ToolOutput, TurnEnd};
use crate::catalogue::E_RUN_046;
use crate::diag::{Diagnostic, Result};
use crate::lifeline::Lifeline;
use crate::spawn::{Spawn, Stderr};

/// The tool's name.
pub const NAME: &str = "delegate";
/// `MURMUR_SPAWNER_LIFELINE`
pub const SPAWNER_ENV: &str = crate::env::MURMUR_SPAWNER_LIFELINE;
/// The descriptor number a child inherits its spawner lifeline at.
pub const SPAWNER_FD: i32 = 3;
/// The first line of the answers message a task continues with.
pub const ANSWERS_LEAD: &str =
    "Answers from the capsules you delegated to, each fenced under child:<capsule>@<version>:";
/// How much of a child's result the answer keeps.
const RESULT_CAP: u64 = 1024 * 1024;

/// The child side: the spawner lifeline this session inherited, if it is a delegated
/// child. Refused (E-RUN-046) when the variable names no usable descriptor.
pub fn spawner_lifeline() -> Result<Option<OwnedFd>> {
    crate::proc::take_inherited(SPAWNER_ENV)
        .map(|fd| fd.map(|(fd, _)| fd))
        .map_err(|e| Diagnostic::new(E_RUN_046, e.to_string()))
}

/// Whether `capsule` (`<scope>/<name>`) matches one of `allow`'s patterns
/// (`<scope>/<name>`, or `<scope>/*` for every capsule of a scope).
pub fn allowed(allow: &[String], capsule: &str) -> bool {
    allow.iter().any(|p| match p.strip_suffix("/*") {
        Some(scope) => capsule
            .split_once('/')
            .is_some_and(|(s, name)| s == scope && !name.is_empty()),
        None => p == capsule,
    })
}

/// What a session's delegations share.
#[derive(Debug, Clone)]
pub struct DelegationConfig {
    /// The `mur` children are started from: this one.
    pub program: PathBuf,
    /// The project whose stores and lock the session resolved its capsule from; a
    /// child runs there, so it resolves from the same ones.
    pub project_dir: PathBuf,
    /// `capabilities.spawn.allow`.
    pub allow: Vec<String>,
    /// The session's formation id, passed on (`MURMUR_FORMATION_ID`).
    pub formation_id: Option<String>,
    /// The session's records `logs/` (each child's stderr) and `tmp/` (each task file).
    pub logs: PathBuf,
    pub tmp: PathBuf,
}

impl DelegationConfig {
    /// The program: this executable.
    pub fn program() -> PathBuf {
        std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mur"))
    }
}

/// One child's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub call_id: String,
    pub capsule: String,
    pub version: String,
    /// `completed`, `failed` or `canceled`.
    pub state: &'static str,
    /// The child's out/result.txt, as it printed it.
    pub text: String,
}

struct Entry {
    call_id: String,
    capsule: String,
    version: String,
    /// The write end of the child's spawner lifeline; `None` once closed.
    lifeline: Option<Lifeline>,
    /// The child's pid while it runs (its process group too).
    pid: Option<u32>,
    reply: Reply<Answer>,
}

impl Pending for Entry {
    type Answer = Answer;
    fn reply(&mut self) -> &mut Reply<Answer> {
        &mut self.reply
    }
}

/// One task's delegations: its `delegate` tool and its turn end.
pub struct Delegations {
    config: Arc<DelegationConfig>,
    calls: Awaited<Entry>,
    /// The delegating task's span: a child's task is a child of the `delegate` call's.
    span: Option<crate::trace::context::SpanContext>,
}

impl Delegations {
    pub fn new(
        config: Arc<DelegationConfig>,
        span: Option<crate::trace::context::SpanContext>,
    ) -> Arc<Delegations> {
        Arc::new(Delegations {
            config,
            calls: Awaited::new(),
            span,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.calls.lock()
    }

    /// The tool for this task.
    pub fn tool(self: &Arc<Self>) -> Arc<dyn Tool> {
        Arc::new(Delegate {
            delegations: self.clone(),
            description: format!(
                "Start an installed capsule as a child session, give it a task, and get its \
                 answer: it comes back into this task when your turn ends. State the task in \
                 full: the child sees nothing else of yours. Capsules you may delegate to: {}.",
                self.config.allow.join(", ")
            ),
        })
    }

    /// Starts the child; returns once it runs (its answer comes later).
    pub async fn delegate(
        self: &Arc<Self>,
        call_id: &str,
        capsule: &str,
        version: &str,
        task: &str,
    ) -> ToolOutput {
        if !allowed(&self.config.allow, capsule) {
            return ToolOutput::error(format!(
                "`{capsule}` is not in capabilities.spawn.allow; this capsule may delegate to: {}",
                self.config.allow.join(", ")
            ));
        }
        if self.calls.ended().is_cancelled() {
            return ToolOutput::error("the delegating task has ended; nothing was started");
        }
        let idx = {
            let mut st = self.lock();
            st.push(Entry {
                call_id: call_id.to_string(),
                capsule: capsule.to_string(),
                version: version.to_string(),
                lifeline: None,
                pid: None,
                reply: Reply::awaited(),
            });
            st.len() - 1
        };
        match self.start(idx, capsule, version, task) {
            Ok(()) => ToolOutput::ok(format!(
                "{capsule}@{version} runs the task as a child session. Its answer comes back \
                 into this task, fenced under child:{capsule}@{version}, when your turn ends."
            )),
            Err(e) => {
                // Nothing owed: the call failed here.
                if let Some(entry) = self.lock().get_mut(idx) {
                    entry.reply.delivered = true;
                }
                ToolOutput::error(format!("cannot start {capsule}@{version}: {e}"))
            }
        }
    }

    /// The `traceparent` child `idx` gets: its `delegate` call's span.
    fn parent_of(&self, idx: usize) -> Option<String> {
        let call_id = self.lock().get(idx)?.call_id.clone();
        Some(self.span?.tool_call(&call_id).traceparent())
    }

    fn start(
        self: &Arc<Self>,
        idx: usize,
        capsule: &str,
        version: &str,
        task: &str,
    ) -> std::io::Result<()> {
        let c = &self.config;
        let n = format!("{}-{idx}", std::process::id());
        // The task goes in a file: a command line is no place for it, and `--task`
        // takes a file's content.
        let task_file = c.tmp.join(format!("delegate-{n}.md"));
        std::fs::write(&task_file, task)?;
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(c.logs.join(format!("delegate-{n}.log")))?;
        let (lifeline, read_end) = Lifeline::new()?;
        let mut cmd = Spawn::new(&c.program);
        cmd.arg("run")
            .args(["--capsule", capsule, "--capsule-version", version])
            .arg("--task")
            .arg(&task_file)
            // Beside the task, on the command line mur writes (docs/trace.md).
            .args(
                self.parent_of(idx)
                    .map(|p| ["--trace-parent".to_string(), p])
                    .into_iter()
                    .flatten(),
            )
            // This session's `-v`s: the child's log goes to its delegate-<n>.log.
            .args(crate::output::verbosity_args())
            .current_dir(&c.project_dir)
            // Nothing of the formation but its id.
            .env_remove(crate::env::MURMUR_FORMATION_ID)
            .env_remove(crate::env::MURMUR_FORMATION_CHANNEL)
            .env_remove(crate::env::MURMUR_FORMATION_LIFELINE)
            .env_remove(crate::env::MURMUR_FORMATION_PEERS)
            .env(SPAWNER_ENV, SPAWNER_FD.to_string())
            // This session (or its launcher) already printed the host warnings.
            .env(crate::env::MURMUR_HOST_WARNINGS_REPORTED, "1")
            .stderr(Stderr::To(stderr.into()))
            .own_group()
            .kill_on_drop()
            .fd(read_end, SPAWNER_FD);
        if let Some(id) = &c.formation_id {
            cmd.env(crate::env::MURMUR_FORMATION_ID, id);
        }
        let (mut child, own) = crate::descendants::spawn_owned(|| cmd.spawn(None), |c| c.id())?;
        // The child's end lives on in the child only.
        drop(cmd);
        {
            let mut st = self.lock();
            if let Some(e) = st.get_mut(idx) {
                e.lifeline = Some(lifeline);
                e.pid = child.id();
            }
        }
        let me = self.clone();
        tokio::spawn(async move {
            let mut text = Vec::new();
            if let Some(out) = child.stdout.take() {
                let _ = out.take(RESULT_CAP).read_to_end(&mut text).await;
            }
            let status = child.wait().await.ok();
            drop(own);
            let _ = std::fs::remove_file(&task_file);
            me.settle(idx, status, String::from_utf8_lossy(&text).into_owned());
        });
        Ok(())
    }

    /// The child `idx` exited: its answer.
    fn settle(&self, idx: usize, status: Option<std::process::ExitStatus>, text: String) {
        let mut st = self.lock();
        let Some(e) = st.get_mut(idx) else {
            return;
        };
        e.pid = None;
        let canceled = e.lifeline.as_ref().is_none_or(|l| l.is_closed());
        e.lifeline = None;
        if e.reply.answer.is_none() {
            let state = match status.and_then(|s| s.code()) {
                Some(0) => "completed",
                _ if canceled => "canceled",
                _ => "failed",
            };
            e.reply.answer = Some(Answer {
                call_id: e.call_id.clone(),
                capsule: e.capsule.clone(),
                version: e.version.clone(),
                state,
                text,
            });
        }
        drop(st);
        self.calls.changed();
    }

    /// Whether an answer is still owed to the task.
    pub fn owed(&self) -> bool {
        self.calls.owed()
    }

    /// Waits for every answer not yet delivered; returns them in call order. Returns
    /// what has arrived when `cancel` fires or the task ended.
    pub async fn wait_all(&self, cancel: &CancellationToken) -> Vec<Answer> {
        self.calls.wait_all(cancel).await
    }

    /// Cancels every live delegation: closes its spawner lifeline, so the child winds
    /// down as a closed lifeline makes it; a child still running 25 s (scaled) later
    /// is killed, with everything below it. Returns once every child is gone.
    pub async fn cancel_live(&self) {
        self.calls.ended().cancel();
        let live: Vec<u32> = {
            let mut st = self.lock();
            st.iter_mut()
                .filter_map(|e| {
                    e.lifeline.as_mut()?.close();
                    e.pid
                })
                .collect()
        };
        if live.is_empty() {
            return;
        }
        let mut rx = self.calls.subscribe();
        let grace = crate::timing::scaled(crate::timing::WIND_DOWN_KILL);
        let all_gone = async {
            while self.lock().iter().any(|e| e.pid.is_some()) {
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(grace, all_gone).await.is_err() {
            for pid in live {
                let _ =
                    tokio::task::spawn_blocking(move || crate::descendants::sweep(pid, true)).await;
            }
        }
    }
}

/// The message a task continues with: [`ANSWERS_LEAD`], then every answer fenced.
pub fn render(answers: &[Answer]) -> String {
    let mut out = format!("{ANSWERS_LEAD}\n");
    for a in answers {
        out.push('\n');
        let head = format!("child:{}@{} ({})", a.capsule, a.version, a.state);
        out.push_str(&crate::fence::block(&head, &a.text));
    }
    out
}

impl TurnEnd for Delegations {
    fn continuation<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            if !self.owed() {
                return None;
            }
            let answers = self.wait_all(cancel).await;
            (!answers.is_empty()).then(|| render(&answers))
        })
    }

    /// However the task ended, a child still working for it is canceled: nothing is
    /// left to receive its answer.
    fn task_ended(&self, _canceled: bool) -> BoxFuture<'_, ()> {
        Box::pin(self.cancel_live())
    }
}

struct Delegate {
    delegations: Arc<Delegations>,
    description: String,
}

impl Tool for Delegate {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "capsule": {"type": "string", "description": "The installed capsule, <scope>/<name>."},
                "version": {"type": "string", "description": "Its exact version."},
                "task": {"type": "string", "description": "The task, stated in full."}
            },
            "required": ["capsule", "version", "task"],
            "additionalProperties": false
        })
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let arg = |k: &str| call.arguments.get(k).and_then(|v| v.as_str());
            let (Some(capsule), Some(version), Some(task)) =
                (arg("capsule"), arg("version"), arg("task"))
            else {
                return ToolOutput::error(
                    "delegate needs `capsule` (<scope>/<name>), `version` and `task`, each a string",
                );
            };
            self.delegations
                .delegate(&call.id, capsule, version, task)
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_a_name_or_a_whole_scope() {
        let allow = vec!["acme/*".to_string(), "local/kid".to_string()];
        assert!(allowed(&allow, "acme/anything"));
        assert!(allowed(&allow, "local/kid"));
        assert!(!allowed(&allow, "local/other"));
        assert!(!allowed(&allow, "acme/"));
        assert!(!allowed(&allow, "acmex/y"));
        assert!(!allowed(&[], "local/kid"));
    }

    #[test]
    fn answers_render_fenced_per_child() {
        let text = render(&[Answer {
            call_id: "c1".into(),
            capsule: "local/kid".into(),
            version: "0.1.0".into(),
            state: "completed",
            text: "hi ~~~~ there\n".into(),
        }]);
        assert!(text.starts_with(ANSWERS_LEAD));
        assert!(text.contains("child:local/kid@0.1.0 (completed)\n~~~~~\nhi ~~~~ there\n~~~~~\n"));
    }
}
