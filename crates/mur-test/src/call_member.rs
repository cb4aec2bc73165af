//! Real doors on 127.0.0.1 for the call-member tests: a formation key as the launcher
//! holds it, doors that run each task through the agent loop (built-in model, with
//! call-member when the member may call someone), or hold tasks until released.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use mur::agent::{Agent, AgentSpec, Outcome, Tool, TransportConfig, transport};
use mur::call_member::{CallConfig, CallMember, Calls, CallsSpec, Peers, Trust};
use mur::credential::FormationKey;
use mur::door::{Acceptance, Door, DoorConfig, FormationMember, WorkReceiver};
use mur::trace::context::SpanContext;
use mur::trace::{Event, Record, TraceWriter};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub const OPERATOR: &str = "operator-token-0123456789";

/// A door for member `name` of the formation `key` signs for.
pub async fn door(key: &FormationKey, name: &str, acceptance: Acceptance) -> (Door, WorkReceiver) {
    let mut config = DoorConfig::new(format!("ses_{name}"), OPERATOR);
    config.public = false;
    config.accept_peer_tasks = true;
    config.formation = Some(FormationMember {
        verify_key: key.verify_key(),
        member: name.parse().unwrap(),
    });
    config.acceptance = acceptance;
    Door::start(config).await.expect("door starts")
}

/// `from`'s callees, with tokens the key issued for each edge and the doors known.
pub fn peers(
    key: &FormationKey,
    from: &str,
    callees: &[(&str, &str)],
    allow: &[&str],
) -> Arc<Peers> {
    let tokens = callees
        .iter()
        .map(|(to, _)| (to.parse().unwrap(), key.issue(from, to)))
        .collect();
    let p = Peers::new(tokens, allow.iter().map(|s| s.to_string()).collect()).unwrap();
    p.add_doors(
        callees
            .iter()
            .map(|(to, url)| (to.parse().unwrap(), url.to_string()))
            .collect::<BTreeMap<_, _>>(),
    );
    Arc::new(p)
}

pub fn trace(dir: &Path, name: &str) -> Arc<TraceWriter> {
    Arc::new(TraceWriter::create(&dir.join(format!("{name}.jsonl"))).unwrap())
}

pub fn records(trace: &TraceWriter) -> Vec<Record> {
    mur::trace::read(trace.path()).unwrap().records
}

/// The calls of a trusted task.
pub fn calls(
    task_id: &str,
    peers: Arc<Peers>,
    trace: Option<Arc<TraceWriter>>,
    config: CallConfig,
) -> Arc<Calls> {
    calls_as(task_id, peers, trace, config, Trust::Trusted)
}

/// The calls of a task of class `trust`: each stamps it.
pub fn calls_as(
    task_id: &str,
    peers: Arc<Peers>,
    trace: Option<Arc<TraceWriter>>,
    config: CallConfig,
    trust: Trust,
) -> Arc<Calls> {
    calls_in(
        task_id,
        peers,
        trace,
        config,
        trust,
        Some(SpanContext::root()),
    )
}

/// The calls of a task of class `trust` whose span is `span`: each call is a child.
pub fn calls_in(
    task_id: &str,
    peers: Arc<Peers>,
    trace: Option<Arc<TraceWriter>>,
    config: CallConfig,
    trust: Trust,
    span: Option<SpanContext>,
) -> Arc<Calls> {
    Calls::new(CallsSpec {
        task_id: task_id.into(),
        peers,
        trace,
        trust,
        config,
        span,
        session_deadline: None,
        chain: None,
    })
}

/// An agent on the built-in model, with call-member when `calls` lets it call someone.
pub fn agent(
    task_id: &str,
    max_turns: u32,
    calls: Option<Arc<Calls>>,
    trace: Option<Arc<TraceWriter>>,
) -> Agent {
    let tools: Vec<Arc<dyn Tool>> = calls
        .as_ref()
        .and_then(|c| CallMember::new(c.clone()))
        .map(|t| vec![t as Arc<dyn Tool>])
        .unwrap_or_default();
    let agent = Agent::new(AgentSpec {
        task_id: task_id.into(),
        system: String::new(),
        max_turns,
        tools,
        transport: transport(&TransportConfig::Builtin, None).unwrap(),
        trace,
    });
    match calls {
        Some(c) => agent.with_turn_end(c),
        None => agent,
    }
}

/// Runs each task at the door as a session does: the agent loop, call-member when
/// `peers` lets the member call someone, every record in `trace`.
pub async fn agent_runner(
    mut work: WorkReceiver,
    peers: Option<Arc<Peers>>,
    trace: Arc<TraceWriter>,
) {
    while let Some(w) = work.next().await {
        let text = w.message.text_content();
        trace
            .write(Event::A2aTaskReceived {
                task_id: w.task_id.clone(),
                context_id: None,
                credential: w.caller.to_string(),
                text: Some(text.clone()),
                trust: Some(w.trust.as_str().into()),
                trace_id: Some(w.span.span.trace_id),
                span_id: Some(w.span.span.span_id),
                parent_span_id: w.span.parent,
                link: w.span.link,
            })
            .unwrap();
        let _ = w.handle.working();
        // The door computed the task's class; its calls stamp it on.
        let calls = peers.clone().map(|p| {
            calls_in(
                w.task_id.as_str(),
                p,
                Some(trace.clone()),
                CallConfig::default(),
                w.trust,
                Some(w.span.span),
            )
        });
        let mut agent = agent(w.task_id.as_str(), 8, calls, Some(trace.clone()));
        match agent.send(&text, &w.cancel).await {
            Outcome::Completed { message, .. } => {
                let _ = w.handle.complete(message.unwrap_or_default());
            }
            Outcome::Failed { reason } => {
                let _ = w.handle.fail(reason);
            }
            other => {
                let _ = w.handle.fail(format!("{other:?}"));
            }
        }
    }
}

/// One task at a time: `hold…` waits for a gate permit (or cancellation); every task
/// completes with `done: <text>`.
pub async fn hold_runner(mut work: WorkReceiver, gate: Arc<Semaphore>) {
    while let Some(w) = work.next().await {
        let text = w.message.text_content();
        let _ = w.handle.working();
        if text.starts_with("hold") {
            tokio::select! {
                p = gate.acquire() => p.expect("gate open").forget(),
                _ = w.cancel.cancelled() => continue,
            }
        }
        let _ = w.handle.complete(format!("done: {text}"));
    }
}

/// Starts a task with the operator token; returns its id once the door holds it.
pub async fn operator_task(url: &str, text: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": true}}});
    let v: Value = mur::door::client()
        .build()
        .unwrap()
        .post(url)
        .bearer_auth(OPERATOR)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["result"]["task"]["id"]
        .as_str()
        .expect("task id")
        .to_string()
}

/// Fails if `text` holds a formation token.
pub fn assert_no_token(what: &str, text: &str) {
    assert!(
        !text.contains("mft1."),
        "a token leaked into {what}: {text}"
    );
}

pub fn cancel() -> CancellationToken {
    CancellationToken::new()
}

/// entry → a → b: a and b are real doors on the built-in model, each with its
/// trace; the entry member is the test, calling a through `entry_peers`.
pub struct Chain {
    pub dir: tempfile::TempDir,
    pub a_door: Door,
    pub b_door: Door,
    pub a_trace: Arc<TraceWriter>,
    pub b_trace: Arc<TraceWriter>,
    pub entry_peers: Arc<Peers>,
}

pub async fn chain() -> Chain {
    let key = FormationKey::mint().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (b_door, b_work) = door(&key, "b", Acceptance::Single).await;
    let (a_door, a_work) = door(&key, "a", Acceptance::Single).await;
    let b_trace = trace(dir.path(), "b");
    let a_trace = trace(dir.path(), "a");
    tokio::spawn(agent_runner(b_work, None, b_trace.clone()));
    let a_peers = peers(&key, "a", &[("b", &b_door.url())], &["localhost"]);
    tokio::spawn(agent_runner(a_work, Some(a_peers), a_trace.clone()));
    let entry_peers = peers(&key, "entry", &[("a", &a_door.url())], &["localhost"]);
    Chain {
        dir,
        a_door,
        b_door,
        a_trace,
        b_trace,
        entry_peers,
    }
}
