//! What failed in a formation, said when it ends (docs/formation.md, "What the
//! launcher prints"): one stderr line per member whose tasks failed, read from each
//! member's trace once every member stopped, and the same list in the `--json`
//! outcome. The exit code stays the entry member's (the spec's).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::formation::exits::ExitRecord;
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
/// `records_root` hold a task that ended `failed`, or, for a member `exited` lists
/// (it exited while the formation ran), a task its trace leaves unfinished: the
/// process that ran it is gone, so it never ends. A member with no trace (it never
/// came up) has nothing to say.
pub fn of(
    records_root: &Path,
    members: &[(MemberName, String)],
    exited: &[ExitRecord],
) -> Vec<Failed> {
    let sessions = crate::records::find_sessions(records_root);
    members
        .iter()
        .filter_map(|(member, session_id)| {
            let records = sessions.iter().find(|r| &r.session_id == session_id)?;
            let trace = crate::trace::read(&records.trace_path()).ok()?;
            let exit = exited.iter().find(|e| &e.member == member);
            let events = trace.records.iter().map(|r| &r.event);
            failed(member, session_id, events, exit.map(ExitRecord::how))
        })
        .collect()
}

/// One trace's failed tasks: each task's last state. `exited` (how the member's
/// process ended, when it exited while the formation ran) fails every task still
/// unfinished, with that as its reason.
fn failed<'a>(
    member: &MemberName,
    session_id: &str,
    events: impl Iterator<Item = &'a Event>,
    exited: Option<String>,
) -> Option<Failed> {
    // Each task's last state and reason, and the tasks in the order they last moved.
    let mut last: BTreeMap<String, (RecordedState, Option<String>)> = BTreeMap::new();
    let mut moved: Vec<String> = Vec::new();
    for event in events {
        if let Event::TaskState {
            task_id,
            to,
            reason,
            ..
        } = event
        {
            let id = task_id.to_string();
            moved.retain(|t| *t != id);
            moved.push(id.clone());
            last.insert(id, (*to, reason.clone()));
        }
    }
    if let Some(how) = exited {
        // The exit came after every recorded move: its tasks are the last to fail.
        let reason = format!("it exited with {how} while the task ran");
        let mut unfinished = Vec::new();
        for (id, (state, why)) in last.iter_mut().filter(|(_, (s, _))| !s.is_terminal()) {
            *state = RecordedState::Failed;
            *why = Some(reason.clone());
            unfinished.push(id.clone());
        }
        moved.retain(|t| !unfinished.contains(t));
        moved.extend(unfinished);
    }
    let is_failed = |id: &String| {
        last.get(id)
            .is_some_and(|(s, _)| *s == RecordedState::Failed)
    };
    let failed = moved.iter().filter(|id| is_failed(id)).count();
    let reason = moved
        .iter()
        .rev()
        .find(|id| is_failed(id))
        .and_then(|id| last.get(id)?.1.as_deref())
        .map(crate::call_member::cut);
    (failed > 0).then(|| Failed {
        member: member.clone(),
        session_id: session_id.to_string(),
        failed,
        tasks: last.len(),
        reason,
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
        let f = failed(&helper, "ses_1", events.iter(), None).unwrap();
        assert_eq!((f.failed, f.tasks), (2, 3));
        assert_eq!(
            f.line(),
            "[mur run] helper: 2 of 3 tasks failed; the last: timed out"
        );
        let one = [state("t1", Failed, Some("no answer"))];
        assert_eq!(
            failed(&helper, "ses_1", one.iter(), None).unwrap().line(),
            "[mur run] helper: 1 of 1 task failed; no answer"
        );
        // A task that failed and then moved on (it was resumed) is not a failure;
        // canceled tasks (a wind-down) are not either.
        let fine = [
            state("t1", Failed, Some("x")),
            state("t1", Completed, None),
            state("t2", Canceled, Some("formation ended")),
        ];
        assert_eq!(failed(&helper, "ses_1", fine.iter(), None), None);
    }

    #[test]
    fn a_member_that_exited_fails_every_task_it_left_unfinished_and_that_is_the_last_reason() {
        use RecordedState::*;
        let helper: MemberName = "helper".parse().unwrap();
        let events = [
            state("t1", Working, None),
            state("t2", Working, None),
            state("t2", Failed, Some("the model server answered 500")),
            state("t3", Working, None),
            state("t3", Completed, None),
            state("t4", Submitted, None),
        ];
        let how = Some("status 137 (SIGKILL)".to_string());
        let f = failed(&helper, "ses_1", events.iter(), how).unwrap();
        assert_eq!((f.failed, f.tasks), (3, 4));
        assert_eq!(
            f.line(),
            "[mur run] helper: 3 of 4 tasks failed; the last: it exited with status 137 (SIGKILL) while the task ran"
        );
        // The same trace of a member still running at the end: only t2 failed.
        let f = failed(&helper, "ses_1", events.iter(), None).unwrap();
        assert_eq!((f.failed, f.tasks), (1, 4));
        // An exited member whose tasks all ended has nothing to add.
        let ended = [state("t1", Completed, None)];
        let how = Some("status 0".to_string());
        assert_eq!(failed(&helper, "ses_1", ended.iter(), how), None);
    }

    #[test]
    fn the_reason_is_the_last_task_that_ended_failed_not_one_resumed_since() {
        use RecordedState::*;
        let helper: MemberName = "helper".parse().unwrap();
        let events = [
            state("t1", Failed, Some("first")),
            state("t2", Failed, Some("second")),
            state("t2", Completed, None),
        ];
        let f = failed(&helper, "ses_1", events.iter(), None).unwrap();
        assert_eq!(f.line(), "[mur run] helper: 1 of 2 tasks failed; first");
    }
}
