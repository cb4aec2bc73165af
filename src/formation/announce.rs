//! What the launcher says about its formation (docs/formation.md, "What the launcher
//! prints"): once every member is up, a banner on stderr naming the formation and each
//! member's session and door, or with `--json` one readiness object on stdout; with
//! `--task`, the entry member's outcome after it ends.
//!
//! The entry member runs with `--json` on a pipe of the launcher's: its readiness
//! line says when it is up and who it is, and its outcome line (`--task`) carries the
//! task's state and result, which the launcher prints as the formation's.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::output;
use crate::readiness::{OutcomeLine, ReadinessLine};
use crate::spawn::Pipe;

/// How the launcher speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Voice {
    /// For people: the banner on stderr (not with `-q`), the `--task` result on stdout.
    #[default]
    Human,
    /// `--json`: the readiness object, then with `--task` the outcome, on stdout.
    Json,
}

/// One member once it is up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberUp {
    pub name: crate::ids::MemberName,
    pub entry: bool,
    pub session_id: String,
    pub door: String,
}

/// `mur run --roster --json`: the first stdout line, once every member is up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormationReady {
    /// Always `"formation_ready"`.
    #[serde(rename = "type")]
    pub kind: String,
    pub formation_id: String,
    /// The launcher's process id (`mur stop <formation_id>` signals it).
    pub pid: u32,
    /// In roster order.
    pub members: Vec<MemberUp>,
}

/// What the entry member's stdout said.
#[derive(Debug, Default)]
pub struct Relayed {
    pub entry: Option<ReadinessLine>,
    pub outcome: Option<OutcomeLine>,
}

/// The progress line while the formation waits for its members, on a terminal only
/// (`output::progress_shown`): who is up, who is still coming, the time elapsed.
#[derive(Debug, Clone)]
pub struct Progress(Option<std::sync::Arc<ProgressState>>);

#[derive(Debug)]
pub struct ProgressState {
    started: Instant,
    /// Each member's name, and whether it is up, in roster order.
    members: std::sync::Mutex<Vec<(String, bool)>>,
    done: tokio_util::sync::CancellationToken,
}

/// How often the progress line is drawn again (the elapsed time moves on).
const PROGRESS_TICK: Duration = Duration::from_millis(250);

impl Progress {
    /// Starts drawing the progress line for `members` (in roster order), unless stderr
    /// is not a terminal or `-q` was given; then it does nothing at all.
    pub fn start(members: Vec<String>, started: Instant) -> Progress {
        if !output::progress_shown() {
            return Progress(None);
        }
        let state = std::sync::Arc::new(ProgressState {
            started,
            members: std::sync::Mutex::new(members.into_iter().map(|m| (m, false)).collect()),
            done: tokio_util::sync::CancellationToken::new(),
        });
        let drawn = state.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(PROGRESS_TICK);
            loop {
                tokio::select! {
                    _ = tick.tick() => output::progress(Some(&drawn.line())),
                    _ = drawn.done.cancelled() => break,
                }
            }
            output::progress(None);
        });
        Progress(Some(state))
    }

    /// `member` is up.
    pub fn up(&self, member: &str) {
        if let Some(state) = &self.0 {
            let mut members = state.members.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(m) = members.iter_mut().find(|(name, _)| name == member) {
                m.1 = true;
            }
            drop(members);
            output::progress(Some(&state.line()));
        }
    }

    /// The wait is over: the line is cleared and no longer drawn.
    pub fn finish(&self) {
        if let Some(state) = &self.0 {
            state.done.cancel();
            output::progress(None);
        }
    }
}

impl ProgressState {
    fn line(&self) -> String {
        let members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        progress_line(&members, self.started.elapsed())
    }
}

/// `[mur run] starting (1.4 s): up helper; coming lead, reviewer`
pub fn progress_line(members: &[(String, bool)], elapsed: Duration) -> String {
    let names = |up: bool| {
        members
            .iter()
            .filter(|(_, u)| *u == up)
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut line = format!("[mur run] starting ({:.1} s):", elapsed.as_secs_f64());
    let (up, coming) = (names(true), names(false));
    if !up.is_empty() {
        line.push_str(&format!(" up {up};"));
    }
    if !coming.is_empty() {
        line.push_str(&format!(" coming {coming}"));
    }
    line.trim_end_matches(';').to_string()
}

/// Who the formation is, for [`relay`] and [`finish`].
#[derive(Debug, Clone)]
pub struct Formation {
    pub id: String,
    pub voice: Voice,
    /// When the launcher started: the banner says how long the members took.
    pub started: Instant,
    /// Every member in roster order; the entry member's session and door are filled
    /// in from its readiness line.
    pub members: Vec<MemberUp>,
    /// Finished once the entry member is up (or gone).
    pub progress: Progress,
}

/// Reads the entry member's stdout to its end: its readiness line (then the formation
/// is up and is announced), then its outcome line.
pub fn relay(stdout: Pipe, formation: Formation) -> JoinHandle<Relayed> {
    tokio::spawn(async move {
        let mut relayed = Relayed::default();
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if relayed.entry.is_none()
                && let Some(ready) = ReadinessLine::parse(&line)
            {
                formation.progress.finish();
                announce(&formation, &ready);
                relayed.entry = Some(ready);
            } else if let Some(outcome) = OutcomeLine::parse(&line) {
                relayed.outcome = Some(outcome);
            }
        }
        formation.progress.finish();
        relayed
    })
}

/// Every member is up: the banner, or the readiness object.
fn announce(formation: &Formation, entry: &ReadinessLine) {
    let members: Vec<MemberUp> = formation
        .members
        .iter()
        .cloned()
        .map(|mut m| {
            if m.entry {
                m.session_id = entry.session_id.clone();
                m.door = entry.door.clone().unwrap_or_default();
            }
            m
        })
        .collect();
    match formation.voice {
        Voice::Json => {
            let ready = FormationReady {
                kind: "formation_ready".into(),
                formation_id: formation.id.clone(),
                pid: std::process::id(),
                members,
            };
            if let Ok(text) = serde_json::to_string(&ready) {
                output::stdout_line(text);
            }
        }
        Voice::Human => {
            output::banner_line(banner(&formation.id, &members, formation.started.elapsed()))
        }
    }
}

/// The banner: the formation, then one line per member, then how to reach it.
pub fn banner(formation: &str, members: &[MemberUp], took: Duration) -> String {
    let width = members
        .iter()
        .map(|m| m.name.as_str().len() + if m.entry { 8 } else { 0 })
        .max()
        .unwrap_or(0);
    let mut text = format!(
        "[mur run] formation {formation} is up ({:.1} s)",
        took.as_secs_f64()
    );
    for m in members {
        let name = if m.entry {
            format!("{} (entry)", m.name)
        } else {
            m.name.to_string()
        };
        text.push_str(&format!(
            "\n[mur run]   {name:<width$}  {}  {}",
            m.session_id, m.door
        ));
    }
    text.push_str(&format!(
        "\n[mur run] follow it with `mur trace show -f {formation}`; end it with `mur stop {formation}`"
    ));
    text
}

/// What the entry member's stdout said, once it ended.
pub async fn relayed(relay: JoinHandle<Relayed>) -> Relayed {
    // The pipe ends with the entry member; a process it left holding it is not waited for.
    tokio::time::timeout(Duration::from_secs(5), relay)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default()
}

/// After the entry member ended (`exit_code` is the launcher's status): with `--task`,
/// the outcome on stdout — the result text for people (not after a signal ended the
/// formation), or one outcome object with `--json`, which lists the members whose
/// tasks failed (`failed_members`) and those that exited while it ran
/// (`exited_members`).
pub fn finish(
    relayed: Relayed,
    formation: &Formation,
    (task, signalled, exit_code): (bool, bool, i32),
    failed: &[crate::formation::failures::Failed],
    exited: &[crate::formation::exits::ExitRecord],
) {
    if !task {
        return;
    }
    let entry = formation.members.iter().find(|m| m.entry);
    match formation.voice {
        Voice::Json => {
            let mut outcome = relayed.outcome.unwrap_or(OutcomeLine {
                kind: "outcome".into(),
                formation_id: None,
                member: None,
                session_id: relayed.entry.map(|r| r.session_id),
                task_id: None,
                state: None,
                result: None,
                exit_code: None,
            });
            outcome.formation_id = Some(formation.id.clone());
            outcome.member = entry.map(|m| m.name.to_string());
            outcome.exit_code = Some(exit_code);
            let Ok(mut value) = serde_json::to_value(&outcome) else {
                return;
            };
            value["failed_members"] = serde_json::to_value(failed).unwrap_or_default();
            value["exited_members"] = serde_json::to_value(exited).unwrap_or_default();
            output::stdout_line(value.to_string());
        }
        Voice::Human => {
            if let Some(result) = relayed.outcome.and_then(|o| o.result)
                && !signalled
            {
                output::stdout_text(&result);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_names_the_formation_and_every_member() {
        let members = [
            MemberUp {
                name: "lead".parse().unwrap(),
                entry: true,
                session_id: "ses_1".into(),
                door: "http://127.0.0.1:1".into(),
            },
            MemberUp {
                name: "helper".parse().unwrap(),
                entry: false,
                session_id: "ses_2".into(),
                door: "http://127.0.0.1:2".into(),
            },
        ];
        let text = banner("frm_1", &members, Duration::from_millis(1300));
        assert_eq!(
            text,
            "[mur run] formation frm_1 is up (1.3 s)\n\
             [mur run]   lead (entry)  ses_1  http://127.0.0.1:1\n\
             [mur run]   helper        ses_2  http://127.0.0.1:2\n\
             [mur run] follow it with `mur trace show -f frm_1`; end it with `mur stop frm_1`"
        );
    }

    #[test]
    fn the_progress_line_says_who_is_up_and_who_is_coming() {
        let m = |n: &str, up: bool| (n.to_string(), up);
        let at = Duration::from_millis(1400);
        assert_eq!(
            progress_line(&[m("lead", false), m("helper", true), m("x", false)], at),
            "[mur run] starting (1.4 s): up helper; coming lead, x"
        );
        assert_eq!(
            progress_line(&[m("lead", false)], at),
            "[mur run] starting (1.4 s): coming lead"
        );
        assert_eq!(
            progress_line(&[m("lead", true)], at),
            "[mur run] starting (1.4 s): up lead"
        );
    }
}
