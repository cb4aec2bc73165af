//! Readiness: the `--json` readiness line a `mur run` prints first on stdout, and the
//! launcher's wait for a peer to become ready.
//!
//! A peer is ready when the door at the URL its readiness line reported serves an
//! Agent Card naming the session id that line reported. The door is probed every
//! 100 ms until it does, within 180 s of the peer's own start.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::time::Instant;

use crate::spawn::Child;

/// The first stdout line of `mur run --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadinessLine {
    /// Always `"ready"`.
    #[serde(rename = "type")]
    pub kind: String,
    pub session_id: String,
    /// The door's base URL, `http://127.0.0.1:<port>`; absent when the session serves none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub door: Option<String>,
    /// The formation the session was launched in, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formation_id: Option<String>,
    pub pid: u32,
}

impl ReadinessLine {
    pub fn new(session_id: &str, door: Option<String>, formation_id: Option<String>) -> Self {
        ReadinessLine {
            kind: "ready".into(),
            session_id: session_id.into(),
            door,
            formation_id,
            pid: std::process::id(),
        }
    }

    /// Parses a line; `None` when it is not a readiness line.
    pub fn parse(line: &str) -> Option<ReadinessLine> {
        serde_json::from_str::<ReadinessLine>(line.trim_end())
            .ok()
            .filter(|r| r.kind == "ready" && r.session_id.starts_with("ses_"))
    }
}

/// The stdout line of `mur run --json --task` when that task ends (after the
/// readiness line); the launcher of a formation relays its entry member's, adding
/// who it was and the exit code (docs/run.md, docs/formation.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeLine {
    /// Always `"outcome"`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formation_id: Option<String>,
    /// The entry member's roster name (the launcher's outcome only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The task's final state, as `task_state.to` names it; absent when the entry
    /// member ended without reporting one (it was killed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<crate::trace::RecordedState>,
    /// The task's `out/result.txt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The launcher's exit status (the launcher's outcome only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

impl OutcomeLine {
    /// A session's outcome line for its `--task`.
    pub fn task(
        session_id: &str,
        task_id: &str,
        state: crate::trace::RecordedState,
        result: String,
    ) -> Self {
        OutcomeLine {
            kind: "outcome".into(),
            formation_id: None,
            member: None,
            session_id: Some(session_id.into()),
            task_id: Some(task_id.into()),
            state: Some(state),
            result: Some(result),
            exit_code: None,
        }
    }

    /// Parses a line; `None` when it is not an outcome line.
    pub fn parse(line: &str) -> Option<OutcomeLine> {
        serde_json::from_str::<OutcomeLine>(line.trim_end())
            .ok()
            .filter(|o| o.kind == "outcome")
    }
}

/// Why a peer is not ready: the seven causes of E-RUN-045.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotReady {
    #[error("it exited before it reported ({0})")]
    ExitedBeforeReport(String),
    #[error("its first line is not a readiness line: {0:?}")]
    NotReadinessLine(String),
    #[error("it reported no door")]
    NoDoor,
    #[error("it reported formation {got:?}, not {expected}")]
    OtherFormation {
        expected: String,
        got: Option<String>,
    },
    #[error("it did not report within {0:?}")]
    NoReport(Duration),
    #[error("it exited after it reported, before its door answered ({0})")]
    ExitedAfterReport(String),
    #[error("its door {door} did not answer as session {session} within {limit:?}")]
    DoorNotAnswering {
        door: String,
        session: String,
        limit: Duration,
    },
}

/// What a ready peer reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ready {
    pub session_id: String,
    pub door: String,
}

/// Whether an Agent Card names `session`: the door declares it in the card's
/// `capabilities.extensions[]` entry for `door::SESSION_EXTENSION_URI`, as
/// `params.sessionId` (see docs/design/door.md).
pub(crate) fn card_names_session(card: &serde_json::Value, session: &str) -> bool {
    card["capabilities"]["extensions"]
        .as_array()
        .is_some_and(|extensions| {
            extensions.iter().any(|e| {
                e["uri"] == crate::door::SESSION_EXTENSION_URI
                    && e["params"]["sessionId"] == session
            })
        })
}

/// Waits for the peer `child` to become ready: its first stdout line (read from
/// `stdout`) must be a readiness line for `formation` with a door, and the door must
/// answer as that session, all before `deadline`.
pub(crate) async fn wait<R: AsyncBufRead + Unpin>(
    child: &mut Child,
    stdout: &mut R,
    formation: &str,
    started: Instant,
    deadline: Instant,
    http: &reqwest::Client,
) -> Result<Ready, NotReady> {
    let limit = deadline.saturating_duration_since(started);
    let mut first = String::new();
    // Biased toward the line: a peer that printed it and exited at once has its line
    // in the pipe before its exit can be observed.
    let read = tokio::select! {
        biased;
        read = stdout.read_line(&mut first) => read,
        status = child.wait() => return Err(NotReady::ExitedBeforeReport(describe(status))),
        _ = tokio::time::sleep_until(deadline) => return Err(NotReady::NoReport(limit)),
    };
    match read {
        Ok(0) | Err(_) => {
            // stdout closed: the process is gone or about to be.
            let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            let text = match status {
                Ok(status) => describe(status),
                Err(_) => "its stdout closed".into(),
            };
            return Err(NotReady::ExitedBeforeReport(text));
        }
        Ok(_) => {}
    }
    let line = ReadinessLine::parse(&first)
        .ok_or_else(|| NotReady::NotReadinessLine(first.trim_end().chars().take(200).collect()))?;
    let door = line
        .door
        .clone()
        .filter(|d| !d.is_empty())
        .ok_or(NotReady::NoDoor)?;
    if line.formation_id.as_deref() != Some(formation) {
        return Err(NotReady::OtherFormation {
            expected: formation.to_string(),
            got: line.formation_id.clone(),
        });
    }
    let probe = probe(http, &door, &line.session_id, deadline);
    tokio::select! {
        answered = probe => {
            if answered {
                Ok(Ready { session_id: line.session_id, door })
            } else {
                Err(NotReady::DoorNotAnswering { door, session: line.session_id, limit })
            }
        }
        status = child.wait() => Err(NotReady::ExitedAfterReport(describe(status))),
    }
}

/// Probes `door` at once, then every 100 ms, until its card names `session`; false at
/// `deadline`.
async fn probe(http: &reqwest::Client, door: &str, session: &str, deadline: Instant) -> bool {
    let url = format!("{}/.well-known/agent-card.json", door.trim_end_matches('/'));
    // The first probe does not wait on a tick: an interval's first tick, though due at
    // once, waits for the timer's next millisecond, up to 1 ms of every launch.
    let every = crate::timing::scaled(crate::timing::READINESS_PROBE);
    let mut tick = tokio::time::interval_at(Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while Instant::now() < deadline {
        let attempt = http.get(&url).timeout(Duration::from_secs(2)).send();
        let answered = match tokio::time::timeout_at(deadline, attempt).await {
            Err(_) => return false,
            Ok(Ok(resp)) if resp.status().is_success() => resp
                .json::<serde_json::Value>()
                .await
                .is_ok_and(|card| card_names_session(&card, session)),
            Ok(_) => false,
        };
        if answered {
            return true;
        }
        tokio::select! {
            _ = tick.tick() => {}
            _ = tokio::time::sleep_until(deadline) => return false,
        }
    }
    false
}

fn describe(status: std::io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(s) => s.to_string(),
        Err(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests;
