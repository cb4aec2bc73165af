//! What failed in a formation, said when it ends (docs/formation.md, "What the
//! launcher prints"): one stderr line per member whose tasks failed, read from each
//! member's trace once every member stopped, and the same list in the `--json`
//! outcome. The exit code stays the entry member's (the spec's).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::ids::MemberName;
use crate::trace::{Event, RecordedState};

/// One member whose tasks failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failed {
    pub member: MemberName,
    pub session_id: String,
    /// Its tasks that ended `failed`.
    pub failed: usize,
    /// Every task it ran.
    pub tasks: usize,
    /// The reason the last of them failed with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Failed {
    /// `[mur run] helper: 2 of 3 tasks failed; the last: <reason>`
    pub fn line(&self) -> String {
        let of = if self.tasks == 1 {
            "1 task".to_string()
        } else {
            format!("{} tasks", self.tasks)
        };
        let mut line = format!("[mur run] {}: {} of {of} failed", self.member, self.failed);
        if let Some(reason) = &self.reason {
            let last = if self.failed == 1 { "" } else { "the last: " };
            line.push_str(&format!("; {last}{reason}"));
        }
        line
    }
}

/// The members (`(name, session id)`, in roster order) whose traces under
/// `records_root` hold a task that ended `failed`. A member with no trace (it never
/// came up) has nothing to say.
pub fn of(records_root: &Path, members: &[(MemberName, String)]) -> Vec<Failed> {
    let sessions = crate::records::find_sessions(records_root);
    members
        .iter()
        .filter_map(|(member, session_id)| {
            let records = sessions.iter().find(|r| &r.session_id == session_id)?;
            let trace = crate::trace::read(&records.trace_path()).ok()?;
            failed(member, session_id, trace.records.iter().map(|r| &r.event))
        })
        .collect()
}

/// One trace's failed tasks: each task's last state, in the order tasks first moved.
fn failed<'a>(
    member: &MemberName,
    session_id: &str,
    events: impl Iterator<Item = &'a Event>,
) -> Option<Failed> {
    let mut last: BTreeMap<String, (RecordedState, Option<String>)> = BTreeMap::new();
    let mut last_failed: Option<String> = None;
    for event in events {
        if let Event::TaskState {
            task_id,
            to,
            reason,
            ..
        } = event
        {
            last.insert(task_id.to_string(), (*to, reason.clone()));
            if *to == RecordedState::Failed {
                last_failed = Some(task_id.to_string());
            }
        }
    }
    let failed = last
        .values()
        .filter(|(s, _)| *s == RecordedState::Failed)
        .count();
    (failed > 0).then(|| Failed {
        member: member.clone(),
        session_id: session_id.to_string(),
        failed,
        tasks: last.len(),
        reason: last_failed
            .and_then(|id| last.get(&id).and_then(|(_, r)| r.clone()))
            .map(|r| crate::call_member::cut(&r)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(task: &str, to: RecordedState, reason: Option<&str>) -> Event {
        Event::TaskState {
            task_id: task.into(),
            from: None,
            to,
            reason: reason.map(String::from),
        }
    }

    #[test]
    fn only_tasks_that_ended_failed_count_and_the_last_reason_is_said() {
        use RecordedState::*;
        let helper: MemberName = "helper".parse().unwrap();
        let events = [
            state("t1", Working, None),
            state("t1", Failed, Some("the model server answered 500")),
            state("t2", Working, None),
            state("t2", Completed, None),
            state("t3", Failed, Some("timed out")),
        ];
        let f = failed(&helper, "ses_1", events.iter()).unwrap();
        assert_eq!((f.failed, f.tasks), (2, 3));
        assert_eq!(
            f.line(),
            "[mur run] helper: 2 of 3 tasks failed; the last: timed out"
        );
        let one = [state("t1", Failed, Some("no answer"))];
        assert_eq!(
            failed(&helper, "ses_1", one.iter()).unwrap().line(),
            "[mur run] helper: 1 of 1 task failed; no answer"
        );
        // A task that failed and then moved on (it was resumed) is not a failure;
        // canceled tasks (a wind-down) are not either.
        let fine = [
            state("t1", Failed, Some("x")),
            state("t1", Completed, None),
            state("t2", Canceled, Some("formation ended")),
        ];
        assert_eq!(failed(&helper, "ses_1", fine.iter()), None);
    }
}
