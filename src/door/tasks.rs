//! The door's task store: every task the door accepted, who started it, its event
//! stream, and the handle through which the session reports progress.
//!
//! One mutex guards everything; every change publishes its event while holding it,
//! so a snapshot taken together with a subscription never misses or repeats an event.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::{broadcast, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::Credential;
use crate::a2a::{
    Artifact, ListTasksRequest, ListTasksResponse, Message, Role, RpcError, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskId, TaskState, TaskStatus, TaskStatusUpdateEvent, new_id, time,
};

/// Events a task stream may fall behind by before it is resynchronised.
const EVENT_BUFFER: usize = 256;
/// ListTasks page size bounds (SPEC §3.1.4).
const DEFAULT_PAGE: u32 = 50;
const MAX_PAGE: u32 = 100;

/// The shared task store. Cheap to clone; every clone sees the same tasks.
#[derive(Clone)]
pub struct TaskStore {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// How many non-terminal tasks the member holds at once.
    holds: u32,
    /// How many tasks are remembered; past it, the oldest ended ones are forgotten.
    max_tasks: usize,
    /// Told of each busy refusal, under the lock: its record is written before the
    /// caller hears `-32050`, and never after the store closed (so never after
    /// `session_end`).
    on_busy: std::sync::OnceLock<super::BusyCallback>,
}

#[derive(Default)]
struct State {
    tasks: HashMap<TaskId, Entry>,
    /// Tasks by the revision of their last status change: newest last.
    by_rev: BTreeMap<u64, TaskId>,
    next_rev: u64,
    /// Non-terminal tasks.
    held: u32,
    closed: bool,
}

struct Entry {
    task: Task,
    owner: Credential,
    rev: u64,
    /// Made by the first subscriber, and `None` again once the task ended: a broadcast
    /// channel holds its whole buffer (~90 KiB) for as long as it lives, so a task no
    /// one streams never makes one, and an ended task drops its sender (live streams
    /// still drain what was sent, then close).
    events: Option<broadcast::Sender<StreamResponse>>,
    state: watch::Sender<TaskState>,
    cancel: CancellationToken,
    reply: Option<oneshot::Sender<Message>>,
    /// The session's handles; weak, so dropping the last one is noticed.
    handle: Weak<HandleInner>,
    /// An ended task's JSON, made at its first read: it never changes again, and a
    /// caller polling it with GetTask is answered without serializing it each time.
    json: Option<axum::body::Bytes>,
}

/// The task has already ended (terminal state); nothing more is recorded for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("task {0} has already ended")]
pub struct TaskEnded(pub TaskId);

/// A newly accepted task, with what the door needs to follow it.
pub(crate) struct Created {
    pub handle: TaskHandle,
    pub snapshot: Task,
    pub state: watch::Receiver<TaskState>,
}

impl TaskStore {
    pub(crate) fn new(holds: u32, max_tasks: usize) -> Self {
        TaskStore {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                holds: holds.max(1),
                max_tasks: max_tasks.max(1),
                on_busy: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Sets who hears of busy refusals (`DoorConfig::on_busy`); once.
    pub(crate) fn set_on_busy(&self, on_busy: super::BusyCallback) {
        let _ = self.shared.on_busy.set(on_busy);
    }

    /// Forgets the oldest ended tasks (a tenth of the cap at a time) once the store
    /// is full, so a long-lived door's memory stays bounded. Live tasks are kept.
    fn evict(&self, state: &mut State) {
        let max = self.shared.max_tasks;
        if state.tasks.len() < max {
            return;
        }
        let batch = (max / 10).max(1);
        let victims: Vec<(u64, TaskId)> = state
            .by_rev
            .iter()
            .filter(|(_, id)| state.tasks[*id].task.status.state.is_terminal())
            .take(batch)
            .map(|(rev, id)| (*rev, id.clone()))
            .collect();
        for (rev, id) in victims {
            state.by_rev.remove(&rev);
            state.tasks.remove(&id);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data (every change is one
        // assignment sequence without early returns), so poisoning is ignored.
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The handle of a task, for the session (any task, whoever started it); `None`
    /// once every handle of it is gone (the task has then ended).
    pub fn handle(&self, task_id: &TaskId) -> Option<TaskHandle> {
        let state = self.lock();
        let inner = state.tasks.get(task_id)?.handle.upgrade()?;
        Some(TaskHandle { inner })
    }

    /// A task's current state, whoever started it (for the session).
    pub fn snapshot(&self, task_id: &TaskId) -> Option<Task> {
        self.lock().tasks.get(task_id).map(|e| e.task.clone())
    }

    /// How many tasks are live (not terminal).
    pub fn live(&self) -> u32 {
        self.lock().held
    }

    /// Refuses every later SendMessage (the session is winding down).
    pub fn close(&self) {
        self.lock().closed = true;
    }

    /// Cancels every live task (session wind-down): each ends CANCELED with `reason`.
    pub fn cancel_all(&self, reason: &str) {
        let mut state = self.lock();
        let ids: Vec<TaskId> = state
            .tasks
            .iter()
            .filter(|(_, e)| !e.task.status.state.is_terminal())
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            let msg = Message::text(Role::Agent, reason);
            set_status(&mut state, &id, TaskState::Canceled, Some(msg));
            if let Some(e) = state.tasks.get(&id) {
                e.cancel.cancel();
            }
        }
    }

    pub(crate) fn create(
        &self,
        owner: Credential,
        mut message: Message,
    ) -> Result<Created, RpcError> {
        let mut state = self.lock();
        if state.closed {
            return Err(RpcError::unsupported(
                "the session is ending and takes no new tasks",
            ));
        }
        if state.held >= self.shared.holds {
            // A public caller's refusals are not reported: anyone could send them
            // without end.
            if owner != Credential::Public
                && let Some(on_busy) = self.shared.on_busy.get()
            {
                on_busy(&super::BusyRefusal {
                    caller: owner,
                    holds: self.shared.holds,
                });
            }
            return Err(RpcError::busy(self.shared.holds));
        }
        self.evict(&mut state);
        let id = TaskId::mint();
        let context_id = message.context_id.clone().unwrap_or_else(|| new_id("ctx"));
        message.task_id = Some(id.clone());
        message.context_id = Some(context_id.clone());
        let task = Task {
            id: id.clone(),
            context_id: context_id.clone(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(time::now()),
            },
            artifacts: Some(Vec::new()),
            history: Some(vec![message]),
            metadata: None,
        };
        let (state_tx, state_rx) = watch::channel(TaskState::Submitted);
        let cancel = CancellationToken::new();
        let rev = state.next_rev;
        state.next_rev += 1;
        state.by_rev.insert(rev, id.clone());
        state.held += 1;
        let snapshot = task.clone();
        let inner = Arc::new(HandleInner {
            store: self.clone(),
            id: id.clone(),
            context_id,
            cancel: cancel.clone(),
        });
        state.tasks.insert(
            id.clone(),
            Entry {
                task,
                owner,
                rev,
                events: None,
                state: state_tx,
                cancel,
                reply: None,
                handle: Arc::downgrade(&inner),
                json: None,
            },
        );
        Ok(Created {
            handle: TaskHandle { inner },
            snapshot,
            state: state_rx,
        })
    }

    /// Marks a task that could not be handed to the session as failed.
    pub(crate) fn fail_unhanded(&self, id: &TaskId) {
        let mut state = self.lock();
        let msg = Message::text(Role::Agent, "the session is not taking tasks");
        set_status(&mut state, id, TaskState::Failed, Some(msg));
    }

    /// A task the caller may see, or `-32001`.
    pub(crate) fn get(&self, caller: &Credential, id: &TaskId) -> Result<Task, RpcError> {
        let state = self.lock();
        visible(&state, caller, id).map(|e| e.task.clone())
    }

    /// As [`TaskStore::get`], the task's JSON: an ended task's is made once and kept.
    pub(crate) fn get_json(
        &self,
        caller: &Credential,
        id: &TaskId,
    ) -> Result<axum::body::Bytes, RpcError> {
        let mut state = self.lock();
        visible(&state, caller, id)?;
        let entry = state.tasks.get_mut(id).expect("visible");
        if let Some(json) = &entry.json {
            return Ok(json.clone());
        }
        let json =
            axum::body::Bytes::from(serde_json::to_vec(&entry.task).map_err(RpcError::internal)?);
        if entry.task.status.state.is_terminal() {
            entry.json = Some(json.clone());
        }
        Ok(json)
    }

    /// The current state and a subscription to a task's events, taken together.
    pub(crate) fn subscribe(
        &self,
        caller: &Credential,
        id: &TaskId,
    ) -> Result<(Task, broadcast::Receiver<StreamResponse>), RpcError> {
        let mut state = self.lock();
        visible(&state, caller, id)?;
        let entry = state.tasks.get_mut(id).expect("visible");
        let events = match &entry.events {
            Some(sender) => sender.subscribe(),
            // An ended task: a subscription that is already closed.
            None if entry.task.status.state.is_terminal() => broadcast::channel(1).1,
            None => {
                let (sender, receiver) = broadcast::channel(EVENT_BUFFER);
                entry.events = Some(sender);
                receiver
            }
        };
        Ok((entry.task.clone(), events))
    }

    /// Cancels a live task the caller may see. Cancelling a CANCELED task again
    /// returns it unchanged; other terminal states are `-32002`.
    pub(crate) fn cancel(&self, caller: &Credential, id: &TaskId) -> Result<Task, RpcError> {
        let mut state = self.lock();
        let entry = visible(&state, caller, id)?;
        match entry.task.status.state {
            TaskState::Canceled => return Ok(entry.task.clone()),
            s if s.is_terminal() => return Err(RpcError::not_cancelable(s)),
            _ => {}
        }
        let msg = Message::text(Role::Agent, super::cancel_reason::by(&caller.to_string()));
        set_status(&mut state, id, TaskState::Canceled, Some(msg));
        let entry = &state.tasks[id];
        entry.cancel.cancel();
        Ok(entry.task.clone())
    }

    /// Delivers a follow-up message to a task waiting for input; returns a watch on
    /// its state so a blocking SendMessage can wait again.
    pub(crate) fn reply(
        &self,
        caller: &Credential,
        id: &TaskId,
        mut message: Message,
    ) -> Result<(TaskHandle, watch::Receiver<TaskState>), RpcError> {
        let mut state = self.lock();
        let entry = visible(&state, caller, id)?;
        if let Some(ctx) = &message.context_id
            && *ctx != entry.task.context_id
        {
            return Err(RpcError::invalid_params(
                "message.contextId does not match the task's contextId",
            ));
        }
        let current = entry.task.status.state;
        if current.is_terminal() {
            return Err(RpcError::unsupported("the task has already ended"));
        }
        if current != TaskState::InputRequired || entry.reply.is_none() {
            return Err(RpcError::unsupported("the task is not waiting for input"));
        }
        message.context_id = Some(entry.task.context_id.clone());
        let entry = state
            .tasks
            .get_mut(id)
            .ok_or_else(RpcError::task_not_found)?;
        let reply = entry.reply.take();
        entry
            .task
            .history
            .get_or_insert_with(Vec::new)
            .push(message.clone());
        let Some(inner) = entry.handle.upgrade() else {
            return Err(RpcError::unsupported("the task has already ended"));
        };
        let handle = TaskHandle { inner };
        set_status(&mut state, id, TaskState::Working, None);
        // Subscribed after WORKING is set, so a waiter sees only what follows.
        let rx = state.tasks[id].state.subscribe();
        if let Some(reply) = reply {
            let _ = reply.send(message);
        }
        Ok((handle, rx))
    }

    /// The caller's tasks, newest status change first, a page at a time. The page
    /// token is the revision to continue below (opaque to clients).
    pub(crate) fn list(
        &self,
        caller: &Credential,
        req: &ListTasksRequest,
    ) -> Result<ListTasksResponse, RpcError> {
        let page_size = match req.page_size {
            None => DEFAULT_PAGE,
            Some(n @ 1..=MAX_PAGE) => n,
            Some(n) => {
                return Err(RpcError::invalid_params(format!(
                    "pageSize must be between 1 and {MAX_PAGE}, not {n}"
                )));
            }
        };
        let below = match req.page_token.as_deref() {
            None | Some("") => u64::MAX,
            Some(t) => t
                .parse::<u64>()
                .map_err(|_| RpcError::invalid_params("pageToken was not issued by this door"))?,
        };
        let after = match req.status_timestamp_after.as_deref() {
            None => None,
            Some(t) => Some(time::parse(t).ok_or_else(|| {
                RpcError::invalid_params("statusTimestampAfter is not an ISO-8601 UTC timestamp")
            })?),
        };
        let state = self.lock();
        let matches = |e: &Entry| {
            caller.sees(&e.owner)
                && req
                    .context_id
                    .as_ref()
                    .is_none_or(|c| *c == e.task.context_id)
                && req.status.is_none_or(|s| s == e.task.status.state)
                && after.is_none_or(|after| {
                    e.task
                        .status
                        .timestamp
                        .as_deref()
                        .and_then(time::parse)
                        .is_some_and(|t| t >= after)
                })
        };
        let mut total = 0u32;
        let mut tasks = Vec::new();
        let mut last_rev = None;
        let mut more = false;
        for (rev, id) in state.by_rev.iter().rev() {
            let entry = &state.tasks[id];
            if !matches(entry) {
                continue;
            }
            total += 1;
            if *rev >= below {
                continue;
            }
            if tasks.len() < page_size as usize {
                let mut task = entry.task.clone();
                if !req.include_artifacts {
                    task.artifacts = None;
                }
                tasks.push(trim_history(task, req.history_length));
                last_rev = Some(*rev);
            } else {
                more = true;
            }
        }
        Ok(ListTasksResponse {
            tasks,
            next_page_token: match (more, last_rev) {
                (true, Some(rev)) => rev.to_string(),
                _ => String::new(),
            },
            page_size,
            total_size: total,
        })
    }
}

/// Keeps the last `n` messages of a task's history; 0 omits the field.
pub(crate) fn trim_history(mut task: Task, n: Option<u32>) -> Task {
    if let Some(n) = n {
        if n == 0 {
            task.history = None;
        } else if let Some(h) = task.history.as_mut() {
            let keep = (n as usize).min(h.len());
            h.drain(..h.len() - keep);
        }
    }
    task
}

fn visible<'a>(state: &'a State, caller: &Credential, id: &TaskId) -> Result<&'a Entry, RpcError> {
    match state.tasks.get(id) {
        Some(e) if caller.sees(&e.owner) => Ok(e),
        _ => Err(RpcError::task_not_found()),
    }
}

/// Records a status change and publishes it. Ignored once the task is terminal.
fn set_status(state: &mut State, id: &TaskId, new: TaskState, message: Option<Message>) -> bool {
    let rev = state.next_rev;
    let Some(entry) = state.tasks.get_mut(id) else {
        return false;
    };
    if entry.task.status.state.is_terminal() {
        return false;
    }
    if let Some(m) = &message {
        entry
            .task
            .history
            .get_or_insert_with(Vec::new)
            .push(m.clone());
    }
    entry.task.status = TaskStatus {
        state: new,
        message,
        timestamp: Some(time::now()),
    };
    let old_rev = entry.rev;
    entry.rev = rev;
    entry.state.send_replace(new);
    if let Some(events) = &entry.events {
        let _ = events.send(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: id.clone(),
            context_id: entry.task.context_id.clone(),
            status: entry.task.status.clone(),
            metadata: None,
        }));
    }
    if new.is_terminal() {
        entry.events = None;
        entry.reply = None;
        state.held = state.held.saturating_sub(1);
    }
    state.next_rev += 1;
    state.by_rev.remove(&old_rev);
    state.by_rev.insert(rev, id.clone());
    true
}

/// The session's handle on one task: report progress, produce artifacts, ask for
/// input, and see whether the caller cancelled. Every method is a no-op returning
/// `Err(TaskEnded)` once the task is terminal (e.g. cancelled by its caller).
///
/// When the session drops the last handle of a task it has not ended (a runner that
/// returned early or panicked), the task ends FAILED, so it never holds the member's
/// place forever.
#[derive(Clone)]
pub struct TaskHandle {
    inner: Arc<HandleInner>,
}

struct HandleInner {
    store: TaskStore,
    id: TaskId,
    context_id: String,
    cancel: CancellationToken,
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        let mut state = self.store.lock();
        let msg = Message::text(
            Role::Agent,
            "the session stopped working on this task without ending it",
        );
        set_status(&mut state, &self.id, TaskState::Failed, Some(msg));
    }
}

impl TaskHandle {
    pub fn id(&self) -> &TaskId {
        &self.inner.id
    }

    pub fn context_id(&self) -> &str {
        &self.inner.context_id
    }

    /// Fires when the task is cancelled (CancelTask, or the session's `cancel_all`).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// The task as it stands.
    pub fn snapshot(&self) -> Option<Task> {
        self.inner.store.snapshot(&self.inner.id)
    }

    /// Sets the task's state, with an optional agent message (also added to history).
    pub fn set_status(&self, state: TaskState, message: Option<Message>) -> Result<(), TaskEnded> {
        let mut guard = self.inner.store.lock();
        if set_status(&mut guard, &self.inner.id, state, message) {
            Ok(())
        } else {
            Err(TaskEnded(self.inner.id.clone()))
        }
    }

    pub fn working(&self) -> Result<(), TaskEnded> {
        self.set_status(TaskState::Working, None)
    }

    /// Ends the task COMPLETED, with `text` as the agent's final message.
    pub fn complete(&self, text: impl Into<String>) -> Result<(), TaskEnded> {
        self.set_status(TaskState::Completed, Some(self.agent_message(text)))
    }

    /// Ends the task FAILED, with `text` saying why.
    pub fn fail(&self, text: impl Into<String>) -> Result<(), TaskEnded> {
        self.set_status(TaskState::Failed, Some(self.agent_message(text)))
    }

    /// Ends the task REJECTED (e.g. a queued task refused at wind-down).
    pub fn reject(&self, text: impl Into<String>) -> Result<(), TaskEnded> {
        self.set_status(TaskState::Rejected, Some(self.agent_message(text)))
    }

    /// Adds a message to the task's history (no stream event: A2A task streams carry
    /// only status and artifact updates).
    pub fn add_message(&self, message: Message) -> Result<(), TaskEnded> {
        let mut guard = self.inner.store.lock();
        match guard.tasks.get_mut(&self.inner.id) {
            Some(e) if !e.task.status.state.is_terminal() => {
                e.task.history.get_or_insert_with(Vec::new).push(message);
                Ok(())
            }
            _ => Err(TaskEnded(self.inner.id.clone())),
        }
    }

    /// Adds an artifact, or a chunk of one: with `append`, parts are added to the
    /// artifact of the same id; `last_chunk` tells streaming clients it is complete.
    pub fn artifact(
        &self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), TaskEnded> {
        let mut guard = self.inner.store.lock();
        let Some(e) = guard.tasks.get_mut(&self.inner.id) else {
            return Err(TaskEnded(self.inner.id.clone()));
        };
        if e.task.status.state.is_terminal() {
            return Err(TaskEnded(self.inner.id.clone()));
        }
        let list = e.task.artifacts.get_or_insert_with(Vec::new);
        match list
            .iter_mut()
            .find(|a| a.artifact_id == artifact.artifact_id)
        {
            Some(existing) if append => existing.parts.extend(artifact.parts.iter().cloned()),
            Some(existing) => *existing = artifact.clone(),
            None => list.push(artifact.clone()),
        }
        if let Some(events) = &e.events {
            let _ = events.send(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: self.inner.id.clone(),
                context_id: self.inner.context_id.clone(),
                artifact,
                append,
                last_chunk,
                metadata: None,
            }));
        }
        Ok(())
    }

    /// Puts the task in INPUT_REQUIRED with `question`, and waits for the caller's
    /// reply (a SendMessage whose `message.taskId` names this task). The task is
    /// WORKING again when this returns. `Err` when the task is cancelled meanwhile.
    pub async fn input_required(&self, question: impl Into<String>) -> Result<Message, TaskEnded> {
        let (tx, rx) = oneshot::channel();
        {
            let mut guard = self.inner.store.lock();
            match guard.tasks.get_mut(&self.inner.id) {
                Some(e) if !e.task.status.state.is_terminal() => e.reply = Some(tx),
                _ => return Err(TaskEnded(self.inner.id.clone())),
            }
            let msg = self.agent_message(question);
            set_status(
                &mut guard,
                &self.inner.id,
                TaskState::InputRequired,
                Some(msg),
            );
        }
        tokio::select! {
            reply = rx => reply.map_err(|_| TaskEnded(self.inner.id.clone())),
            _ = self.inner.cancel.cancelled() => Err(TaskEnded(self.inner.id.clone())),
        }
    }

    fn agent_message(&self, text: impl Into<String>) -> Message {
        let mut m = Message::text(Role::Agent, text);
        m.task_id = Some(self.inner.id.clone());
        m.context_id = Some(self.inner.context_id.clone());
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_tasks_past_the_cap_are_forgotten_oldest_first() {
        let store = TaskStore::new(1, 10);
        let msg = || Message::text(Role::User, "x");
        let mut ids = Vec::new();
        for _ in 0..25 {
            let c = store.create(Credential::Operator, msg()).unwrap();
            c.handle.complete("done").unwrap();
            ids.push(c.handle.id().clone());
        }
        assert!(store.lock().tasks.len() <= 10);
        assert!(store.snapshot(&ids[0]).is_none());
        assert!(store.snapshot(&ids[24]).is_some());
        // A live task is never forgotten (its handle is held).
        let live = store.create(Credential::Operator, msg()).unwrap();
        for _ in 0..3 {
            store.evict(&mut store.lock());
        }
        assert!(store.snapshot(live.handle.id()).is_some());
    }

    #[test]
    fn a_tasks_json_follows_it_while_live_and_is_kept_once_it_ended() {
        let store = TaskStore::new(1, 10);
        let c = store
            .create(Credential::Operator, Message::text(Role::User, "x"))
            .unwrap();
        let id = c.handle.id().clone();
        let json = |store: &TaskStore| {
            let bytes = store.get_json(&Credential::Operator, &id).unwrap();
            serde_json::from_slice::<Task>(&bytes).unwrap()
        };
        assert_eq!(json(&store), store.snapshot(&id).unwrap());
        assert!(
            store.lock().tasks[&id].json.is_none(),
            "a live task's is not kept"
        );
        c.handle.working().unwrap();
        assert_eq!(json(&store).status.state, TaskState::Working);
        c.handle.complete("done").unwrap();
        assert_eq!(json(&store), store.snapshot(&id).unwrap());
        assert!(
            store.lock().tasks[&id].json.is_some(),
            "an ended task's is kept"
        );
        assert_eq!(json(&store), store.snapshot(&id).unwrap());
        // Only a caller who may see the task gets it.
        let other = Credential::Member("other".into());
        assert!(store.get_json(&other, &id).is_err());
    }

    #[test]
    fn a_task_whose_handles_are_all_dropped_unended_fails_and_frees_its_place() {
        let store = TaskStore::new(1, 100);
        let c = store
            .create(Credential::Operator, Message::text(Role::User, "x"))
            .unwrap();
        let id = c.handle.id().clone();
        let again = store.handle(&id).expect("a live handle");
        drop(c);
        assert_eq!(
            store.snapshot(&id).unwrap().status.state,
            TaskState::Submitted
        );
        drop(again);
        assert_eq!(store.snapshot(&id).unwrap().status.state, TaskState::Failed);
        assert_eq!(store.live(), 0);
        assert!(store.handle(&id).is_none());
    }

    #[test]
    fn an_ended_task_keeps_no_event_buffer_and_live_streams_still_drain() {
        let store = TaskStore::new(1, 100);
        let c = store
            .create(Credential::Operator, Message::text(Role::User, "x"))
            .unwrap();
        let id = c.handle.id().clone();
        assert!(
            store.lock().tasks[&id].events.is_none(),
            "no buffer until someone streams the task"
        );
        let (_, mut live) = store.subscribe(&Credential::Operator, &id).unwrap();
        assert!(store.lock().tasks[&id].events.is_some());
        c.handle.complete("done").unwrap();
        assert!(
            store.lock().tasks[&id].events.is_none(),
            "the buffer is dropped"
        );
        // The stream that was open still gets the terminal update, then closes.
        let mut last = None;
        while let Ok(event) = live.try_recv() {
            last = Some(event);
        }
        assert!(matches!(
            last,
            Some(StreamResponse::StatusUpdate(ref u)) if u.status.state == TaskState::Completed
        ));
        assert!(matches!(
            live.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        let (task, mut late) = store.subscribe(&Credential::Operator, &id).unwrap();
        assert_eq!(task.status.state, TaskState::Completed);
        assert!(matches!(
            late.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
    }
}
