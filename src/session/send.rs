//! `mur send <ses_id|frm_id> "<task>"`: gives a running session (or a formation's
//! entry member) a task with its operator token, shows the task's states as its door
//! streams them, prints the result, and exits with the task's outcome (docs/run.md).

use clap::Args;
use serde_json::{Value, json};

use crate::a2a;
use crate::a2a_client::{ClientError, Endpoint};

use crate::catalogue::{E_RUN_002, E_RUN_003, E_RUN_007};
use crate::diag::{Diagnostic, Result};
use crate::output;
use crate::running::{RunningDir, RunningRecord};

// `mur send`
#[derive(Debug, Clone, Args)]
pub struct SendArgs {
    /// A running session (`ses_…`), or a formation (`frm_…`): its entry member. A
    /// prefix of the id that no other live id shares will do.
    pub id: String,
    /// The task's text.
    pub task: String,
}

/// Sends the task; the exit status is 0 when it completed, 1 otherwise.
pub(crate) fn send(args: &SendArgs) -> Result<i32> {
    let running = RunningDir::default();
    let target = find(&running, &args.id)?;
    let token = running.token(&target.session_id)?;
    let door = target.door_url.clone().ok_or_else(|| {
        Diagnostic::new(
            E_RUN_003,
            format!("{} does not serve a door yet", target.session_id),
        )
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Diagnostic::new(E_RUN_002, format!("cannot start a runtime: {e}")))?;
    runtime.block_on(stream_task(&door, &token, &target.session_id, &args.task))
}

/// The live session `typed` names, or the entry member of the formation it names
/// (either by a unique prefix: `session::pick`).
fn find(running: &RunningDir, typed: &str) -> Result<RunningRecord> {
    let live = running.list()?;
    let known = live.iter().flat_map(|r| {
        let entry_of = r.formation_id.as_deref().filter(|_| r.formation_entry);
        std::iter::once(r.session_id.as_str()).chain(entry_of)
    });
    let none = || {
        Diagnostic::new(
            E_RUN_003,
            format!("no running session or formation entry member is named {typed}"),
        )
    };
    let id = super::pick::pick(typed, known)?.ok_or_else(none)?;
    let found = if id.starts_with("frm_") {
        live.into_iter()
            .find(|r| r.formation_id.as_deref() == Some(id.as_str()) && r.formation_entry)
    } else {
        live.into_iter().find(|r| r.session_id == id)
    };
    found.ok_or_else(none)
}

/// `SendStreamingMessage`, then each event as it comes.
async fn stream_task(door: &str, token: &str, session: &str, task: &str) -> Result<i32> {
    let failed = |what: String| Diagnostic::new(E_RUN_007, what);
    let http = crate::a2a_client::http()
        .build()
        .map_err(|e| failed(format!("cannot make an HTTP client: {e}")))?;
    let endpoint = Endpoint::at(http, door, token).map_err(|e| failed(e.to_string()))?;
    let message = a2a::Message::text(a2a::Role::User, task);
    let mut events = endpoint
        .stream(a2a::SEND_STREAMING_MESSAGE, json!({"message": message}))
        .await
        .map_err(|e| refusal(session, door, e))?;
    let mut seen = Seen::default();
    while let Some(event) = events.next().await {
        seen.take(&event.map_err(|e| refusal(session, door, e))?);
    }
    let Some(state) = seen.state.clone() else {
        return Err(failed(format!(
            "{session}'s door ended the stream before the task ended"
        )));
    };
    if matches!(state.as_str(), "failed" | "canceled" | "rejected") {
        // stdout carries answers only: `answer=$(mur send …)` must not store a reason.
        let reason = seen.text.trim_end();
        let d = Diagnostic::new(
            crate::catalogue::E_RUN_010,
            format!("task {} {state}: {reason}", seen.task_id),
        )
        .hint(format!(
            "`mur trace show {session}` shows what the task did."
        ));
        output::stderr_line(&d);
    } else if !seen.text.is_empty() {
        output::stdout_text(&seen.text);
    }
    output::stderr_line(format_args!("[mur send] {}: {state}", seen.task_id));
    Ok(if state == "completed" { 0 } else { 1 })
}

/// What the stream said so far.
#[derive(Debug, Default)]
struct Seen {
    task_id: String,
    /// The task's final state (`completed`, `failed`, …), once it ended.
    state: Option<String>,
    /// The answer: its artifacts' text, else its final status message's.
    text: String,
    /// The state last said on stderr: a state is said once, however often it comes.
    said: String,
}

impl Seen {
    fn take(&mut self, result: &Value) {
        if let Some(task) = result.get("task") {
            self.task_id = task["id"].as_str().unwrap_or_default().to_string();
            output::banner_line(format_args!("[mur send] task {} submitted", self.task_id));
            self.said = "submitted".to_string();
            self.status(&task["status"]);
        } else if let Some(update) = result.get("statusUpdate") {
            self.status(&update["status"]);
        } else if let Some(update) = result.get("artifactUpdate") {
            self.text.push_str(&texts(&update["artifact"]["parts"]));
        }
    }

    fn status(&mut self, status: &Value) {
        let word = state_word(status["state"].as_str().unwrap_or_default());
        if matches!(
            word.as_str(),
            "completed" | "failed" | "canceled" | "rejected" | "input_required" | "auth_required"
        ) {
            if self.text.is_empty() {
                self.text = texts(&status["message"]["parts"]);
            }
            self.state = Some(word);
        } else if !word.is_empty() && word != self.said {
            output::banner_line(format_args!("[mur send] {word}"));
            self.said = word;
        }
    }
}

/// `TASK_STATE_INPUT_REQUIRED` → `input_required`, as the trace names states.
fn state_word(state: &str) -> String {
    state
        .strip_prefix("TASK_STATE_")
        .unwrap_or(state)
        .to_ascii_lowercase()
}

fn texts(parts: &Value) -> String {
    parts
        .as_array()
        .map(|p| {
            p.iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The door did not answer, refused the task (its JSON-RPC error or HTTP status), or
/// its stream broke.
fn refusal(session: &str, door: &str, e: ClientError) -> Diagnostic {
    let what = match e {
        ClientError::Unreachable(_) | ClientError::TimedOut(_) => {
            format!("{session}'s door {door} did not answer: {e}")
        }
        ClientError::Broken(_) => format!("{session}'s door {door}: {e}"),
        ClientError::Rpc { code, message } => {
            format!("{session}'s door did not take the task: {message} ({code})")
        }
        e => format!("{session}'s door did not take the task: {e}"),
    };
    Diagnostic::new(E_RUN_007, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_as_the_trace_names_them() {
        assert_eq!(state_word("TASK_STATE_INPUT_REQUIRED"), "input_required");
        assert_eq!(state_word("TASK_STATE_COMPLETED"), "completed");
    }

    #[test]
    fn the_answer_is_the_artifacts_else_the_final_message() {
        let mut seen = Seen::default();
        seen.take(&json!({"task": {"id": "t1", "status": {"state": "TASK_STATE_SUBMITTED"}}}));
        seen.take(&json!({"artifactUpdate": {"artifact": {"parts": [{"text": "hello"}]}}}));
        seen.take(
            &json!({"statusUpdate": {"status": {"state": "TASK_STATE_COMPLETED",
            "message": {"parts": [{"text": "ignored"}]}}}}),
        );
        assert_eq!(seen.state.as_deref(), Some("completed"));
        assert_eq!(seen.text, "hello");
        let mut seen = Seen::default();
        seen.take(
            &json!({"statusUpdate": {"status": {"state": "TASK_STATE_FAILED",
            "message": {"parts": [{"text": "no model"}]}}}}),
        );
        assert_eq!(
            (seen.state.as_deref(), seen.text.as_str()),
            (Some("failed"), "no model")
        );
    }
}
