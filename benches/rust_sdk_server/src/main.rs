//! A minimal A2A 1.0 server on the official Rust SDK (a2a-server-lf 0.4 over a2a-lf),
//! for benches/session.rs to measure beside `mur run` and the Python a2a-sdk server:
//! an echo executor (a task, working, an artifact, completed: the shape of mur's echo
//! and of benches/a2a_sdk_server), the SDK's JSON-RPC router and in-memory task store,
//! and a bearer check as an axum layer.
//!
//! With `--floor`, the SDK is left out: the same bearer layer in front of one axum
//! route that answers every POST with a canned completed task, and the card route.
//! That is the floor: what any Rust HTTP server with auth costs per call.
//!
//! The token arrives on stdin (never on the command line); the listening socket is
//! bound first and its port printed on stdout, then the server runs until killed.

use std::io::BufRead;
use std::sync::Arc;

use a2a::{
    A2AError, AgentCard, Artifact, Message, Part, Role, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{
    AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore, StaticAgentCard,
};
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::stream::{self, BoxStream};

struct Echo;

fn status(ctx: &ExecutorContext, state: TaskState, message: Option<Message>) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus {
            state,
            message,
            timestamp: None,
        },
        metadata: None,
    })
}

impl AgentExecutor for Echo {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let text = ctx
            .message
            .as_ref()
            .and_then(|m| m.text().map(str::to_string))
            .unwrap_or_default();
        let task = StreamResponse::Task(Task {
            id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: ctx.message.clone().map(|m| vec![m]),
            metadata: None,
        });
        let artifact = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            artifact: Artifact {
                artifact_id: a2a::new_artifact_id(),
                name: Some("echo".into()),
                description: None,
                parts: vec![Part::text(text.clone())],
                metadata: None,
                extensions: None,
            },
            append: None,
            last_chunk: Some(true),
            metadata: None,
        });
        let mut answer = Message::new(Role::Agent, vec![Part::text(text)]);
        answer.task_id = Some(ctx.task_id.clone());
        answer.context_id = Some(ctx.context_id.clone());
        let events = vec![
            Ok(task),
            Ok(status(&ctx, TaskState::Working, None)),
            Ok(artifact),
            Ok(status(&ctx, TaskState::Completed, Some(answer))),
        ];
        Box::pin(stream::iter(events))
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        Box::pin(stream::once(async move {
            Ok(status(&ctx, TaskState::Canceled, None))
        }))
    }
}

fn card(port: u16) -> AgentCard {
    serde_json::from_value(serde_json::json!({
        "name": "echo",
        "description": "Bench peer on the Rust A2A SDK.",
        "version": "0.0.0",
        "supportedInterfaces": [{"url": format!("http://127.0.0.1:{port}/"),
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": []
    }))
    .expect("the card is well formed")
}

#[tokio::main]
async fn main() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut token = String::new();
    std::io::stdin().lock().read_line(&mut token).unwrap();
    let expected: Arc<str> = format!("Bearer {}", token.trim()).into();
    println!("{port}");

    let rpc = if std::env::args().any(|a| a == "--floor") {
        axum::Router::new().route("/", axum::routing::post(floor))
    } else {
        let handler = Arc::new(DefaultRequestHandler::new(Echo, InMemoryTaskStore::new()));
        a2a_server::jsonrpc::jsonrpc_router(handler)
    };
    let rpc = rpc.layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            let expected = expected.clone();
            async move {
                let given = request.headers().get(header::AUTHORIZATION);
                if given.is_some_and(|v| v.as_bytes() == expected.as_bytes()) {
                    Ok::<Response, StatusCode>(next.run(request).await)
                } else {
                    Err(StatusCode::UNAUTHORIZED)
                }
            }
        },
    ));
    let app = rpc.merge(a2a_server::agent_card::agent_card_router(Arc::new(
        StaticAgentCard::new(card(port)),
    )));
    axum::serve(listener, app).await.unwrap();
}

/// The floor's one answer: a completed task, about the size of the SDK's GetTask.
async fn floor() -> ([(header::HeaderName, &'static str); 1], &'static str) {
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"01a23d21-9d83-72b3-813a-e7243e1d62ae","contextId":"01a23d21-9d83-72b3-813a-e725926d689a","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"01a23d21-9d83-72b3-813a-e7273bb89150","role":"ROLE_AGENT","parts":[{"text":"hi"}]}},"artifacts":[{"artifactId":"01a23d21-9d83-72b3-813a-e7261d971a04","name":"echo","parts":[{"text":"hi"}]}],"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}]}}}"#,
    )
}
