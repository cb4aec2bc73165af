//! The A2A methods: SendMessage, SendStreamingMessage, GetTask, ListTasks,
//! CancelTask, SubscribeToTask, and the SSE framing they share.

use std::sync::Arc;

use axum::response::Response;
use tokio::sync::{broadcast, mpsc};

use super::chain::CallChain;
use super::rpc::{Call, Shared, frame, json_bytes, params, rpc_error, sse};
use super::tasks::trim_history;
use super::trust::Trust;
use super::{Credential, Work, operator};
use crate::a2a::{
    self, GetTaskRequest, Id, ListTasksRequest, Message, Role, RpcError, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskIdRequest, TaskStatusUpdateEvent,
};
use crate::trace::context::TaskSpan;

/// Frames a stream holds for a slow client before the producer waits.
const STREAM_BUFFER: usize = 64;

pub(crate) async fn dispatch(
    s: Arc<Shared>,
    caller: Credential,
    origin: (Trust, TaskSpan, CallChain),
    call: Call,
) -> Response {
    let id = call.id.clone();
    let result = match call.method.as_str() {
        a2a::SEND_MESSAGE => send_message(&s, caller, origin, call, false).await,
        a2a::SEND_STREAMING_MESSAGE => send_message(&s, caller, origin, call, true).await,
        a2a::GET_TASK => get_task(&s, &caller, call),
        a2a::LIST_TASKS => list_tasks(&s, &caller, call),
        a2a::CANCEL_TASK => cancel_task(&s, &caller, call),
        a2a::SUBSCRIBE_TO_TASK => subscribe(&s, &caller, call),
        a2a::WATCH_SESSION | a2a::STOP_SESSION | a2a::RESOURCES_FILES => {
            operator::dispatch(&s, call).await
        }
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => Err(RpcError::new(
            -32003,
            "Push notifications are not supported by this door",
        )),
        "GetExtendedAgentCard" => Err(RpcError::new(
            -32007,
            "This door has no extended Agent Card",
        )),
        other => {
            let shown: String = other.chars().take(64).collect();
            Err(RpcError::method_not_found(&shown))
        }
    };
    match result {
        Ok(resp) => resp,
        Err(e) => rpc_error(id, e),
    }
}

/// A result body, serialized straight from `value` (no intermediate JSON tree).
fn ok(id: Id, value: impl serde::Serialize) -> Result<Response, RpcError> {
    #[derive(serde::Serialize)]
    struct Ok<'a, T> {
        jsonrpc: &'static str,
        id: &'a Id,
        result: T,
    }
    let body = serde_json::to_vec(&Ok {
        jsonrpc: "2.0",
        id: &id,
        result: value,
    })
    .map_err(RpcError::internal)?;
    Ok(json_bytes(body))
}

/// As [`ok`], around a result already serialized: `open`, `json`, `close`.
fn ok_json(id: &Id, open: &[u8], json: &[u8], close: &[u8]) -> Result<Response, RpcError> {
    let mut body = Vec::with_capacity(json.len() + 64);
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut body, id).map_err(RpcError::internal)?;
    body.extend_from_slice(br#","result":"#);
    for part in [open, json, close, b"}"] {
        body.extend_from_slice(part);
    }
    Ok(json_bytes(body))
}

fn check_message(m: &Message) -> Result<(), RpcError> {
    if m.message_id.is_empty() {
        return Err(RpcError::invalid_params(
            "message.messageId must not be empty",
        ));
    }
    if m.role != Role::User {
        return Err(RpcError::invalid_params("message.role must be ROLE_USER"));
    }
    if m.parts.is_empty() {
        return Err(RpcError::invalid_params(
            "message.parts must hold at least one part",
        ));
    }
    if let Some(i) = m.parts.iter().position(|p| !p.is_well_formed()) {
        return Err(RpcError::invalid_params(format!(
            "message.parts[{i}] must set exactly one of text, raw, url and data"
        )));
    }
    Ok(())
}

async fn send_message(
    s: &Arc<Shared>,
    caller: Credential,
    (trust, span, chain): (Trust, TaskSpan, CallChain),
    call: Call,
    streaming: bool,
) -> Result<Response, RpcError> {
    let req: SendMessageRequest = params(call.params)?;
    check_message(&req.message)?;
    let config = req.configuration.unwrap_or_default();
    let (task_id, mut state) = if let Some(id) = req.message.task_id.clone() {
        // A reply to a task waiting for input.
        let (handle, state) = s.store.reply(&caller, &id, req.message)?;
        (handle.id().clone(), state)
    } else {
        // Before the busy check: a member busy with the task that waits on this call
        // would otherwise be offered it until the call's deadline.
        let live = |id: &a2a::TaskId| {
            s.store
                .snapshot(id)
                .is_some_and(|t| !t.status.state.is_terminal())
        };
        if let Some(cycle) = chain.closes(live) {
            return Err(RpcError::wait_cycle(&cycle));
        }
        let created = s.store.create(caller.clone(), req.message.clone())?;
        let task_id = created.snapshot.id.clone();
        let mut message = req.message;
        message.task_id = Some(task_id.clone());
        message.context_id = Some(created.snapshot.context_id.clone());
        let work = Work {
            task_id: task_id.clone(),
            context_id: created.snapshot.context_id.clone(),
            message,
            caller: caller.clone(),
            trust,
            span,
            chain,
            cancel: created.handle.cancellation().clone(),
            handle: created.handle,
        };
        if s.work.send(work).is_err() {
            s.store.fail_unhanded(&task_id);
            return Err(RpcError::internal("the session is not taking tasks"));
        }
        (task_id, created.state)
    };
    if streaming {
        let (snapshot, events) = s.store.subscribe(&caller, &task_id)?;
        return Ok(task_stream(s, call.id, caller, snapshot, events));
    }
    if !config.return_immediately {
        tokio::select! {
            _ = state.wait_for(|st| st.is_terminal() || st.is_interrupted()) => {}
            _ = s.shutdown.cancelled() => {}
        }
    }
    if config.history_length.is_none() {
        let task = s.store.get_json(&caller, &task_id)?;
        return ok_json(&call.id, br#"{"task":"#, &task, b"}");
    }
    let task = trim_history(s.store.get(&caller, &task_id)?, config.history_length);
    ok(call.id, SendMessageResponse::Task(task))
}

fn get_task(s: &Arc<Shared>, caller: &Credential, call: Call) -> Result<Response, RpcError> {
    let req: GetTaskRequest = params(call.params)?;
    if req.history_length.is_none() {
        return ok_json(&call.id, b"", &s.store.get_json(caller, &req.id)?, b"");
    }
    let task = s.store.get(caller, &req.id)?;
    ok(call.id, trim_history(task, req.history_length))
}

fn list_tasks(s: &Arc<Shared>, caller: &Credential, call: Call) -> Result<Response, RpcError> {
    let req: ListTasksRequest = params(call.params)?;
    ok(call.id, s.store.list(caller, &req)?)
}

fn cancel_task(s: &Arc<Shared>, caller: &Credential, call: Call) -> Result<Response, RpcError> {
    let req: TaskIdRequest = params(call.params)?;
    ok(call.id, s.store.cancel(caller, &req.id)?)
}

fn subscribe(s: &Arc<Shared>, caller: &Credential, call: Call) -> Result<Response, RpcError> {
    let req: TaskIdRequest = params(call.params)?;
    let (snapshot, events) = s.store.subscribe(caller, &req.id)?;
    if snapshot.status.state.is_terminal() {
        // A plain JSON-RPC error, not an error inside a stream (a2a-java#791).
        return Err(RpcError::unsupported("the task has already ended"));
    }
    Ok(task_stream(s, call.id, caller.clone(), snapshot, events))
}

/// The Task snapshot first, then each status and artifact update, ending after the
/// update that makes the task terminal.
fn task_stream(
    s: &Arc<Shared>,
    id: Id,
    caller: Credential,
    snapshot: Task,
    mut events: broadcast::Receiver<StreamResponse>,
) -> Response {
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let shared = s.clone();
    tokio::spawn(async move {
        let task_id = snapshot.id.clone();
        let ended = snapshot.status.state.is_terminal();
        if tx
            .send(frame(&id, StreamResponse::Task(snapshot)))
            .await
            .is_err()
            || ended
        {
            return;
        }
        loop {
            let event = tokio::select! {
                _ = shared.shutdown.cancelled() => return,
                _ = tx.closed() => return,
                event = events.recv() => event,
            };
            let event = match event {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    // Fell behind: resynchronise with the task's current status.
                    let Ok(task) = shared.store.get(&caller, &task_id) else {
                        return;
                    };
                    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                        task_id: task.id,
                        context_id: task.context_id,
                        status: task.status,
                        metadata: None,
                    })
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            let end =
                matches!(&event, StreamResponse::StatusUpdate(u) if u.status.state.is_terminal());
            if tx.send(frame(&id, event)).await.is_err() || end {
                return;
            }
        }
    });
    sse(rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::TaskState;

    async fn body(resp: Result<Response, RpcError>) -> axum::body::Bytes {
        axum::body::to_bytes(resp.unwrap().into_body(), usize::MAX)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_result_around_kept_json_is_the_bytes_serde_writes() {
        let store = super::super::TaskStore::new(1, 10);
        let c = store
            .create(
                Credential::Operator,
                Message::text(Role::User, "hi \"there\""),
            )
            .unwrap();
        c.handle.complete("done").unwrap();
        let id = c.handle.id().clone();
        let task = store.get(&Credential::Operator, &id).unwrap();
        assert_eq!(task.status.state, TaskState::Completed);
        let json = store.get_json(&Credential::Operator, &id).unwrap();
        for rpc_id in [Id::Int(7), Id::Str("a\"b".into()), Id::Null] {
            assert_eq!(
                body(ok_json(&rpc_id, b"", &json, b"")).await,
                body(ok(rpc_id.clone(), &task)).await
            );
            assert_eq!(
                body(ok_json(&rpc_id, br#"{"task":"#, &json, b"}")).await,
                body(ok(rpc_id.clone(), SendMessageResponse::Task(task.clone()))).await
            );
        }
    }
}
