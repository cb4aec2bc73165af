//! One task the door accepted, run through the agent loop: its trace records, its
//! progress on the door, and its `out/result.txt`.

use std::sync::Arc;

use crate::a2a;
use crate::agent::{self, Agent, AgentSpec, Outcome, PromptParts, TransportConfig};
use crate::door::{TaskHandle, Work};
use crate::manifest::HookEvent;
use crate::output;
use crate::records::Records;
use crate::trace::{Event, RecordedState, TraceWriter};

/// What every task of a session shares.
pub(crate) struct TaskEnv {
    pub trace: Arc<TraceWriter>,
    pub records: Records,
    pub transport: TransportConfig,
    pub max_turns: u32,
    /// `inference.parallel_tools`.
    pub parallel_tools: u32,
    /// The system prompt (built once per session).
    pub system: String,
    /// In a formation: call-member's callees (None: no call-member).
    pub peers: Option<Arc<crate::call_member::Peers>>,
    /// The session's deadline: no busy member is offered a task past it.
    pub deadline: Option<tokio::time::Instant>,
    /// Makes the trace and out/result.txt durable off the task's path.
    pub flusher: crate::records::Flusher,
    /// murmur.WatchSession's events: streamed partial output goes there too.
    pub events: Option<crate::door::SessionEvents>,
    /// `capabilities.shell`: the shell tool's work folder and environment.
    pub shell: Option<Arc<crate::shell::ShellConfig>>,
    /// `capabilities.spawn.allow`: the delegate tool's children.
    pub delegation: Option<Arc<crate::delegation::DelegationConfig>>,
    /// The capsule's WASM tools and hooks (None: it declares none).
    pub components: Option<Arc<crate::component::Host>>,
}

impl TaskEnv {
    /// out/result.txt, then a mark for the flusher.
    fn write_result(&self, outcome: &Outcome, cancel_reason: &str) -> crate::diag::Result<()> {
        let written = self.records.write_result(outcome, cancel_reason);
        self.flusher.mark();
        written
    }

    /// The system prompt: the `[Capsule]` block on http, the instructions, MURMUR.md,
    /// and for a resumed session what was said before.
    pub(crate) fn system_prompt(parts: &PromptParts, earlier: Option<&str>) -> String {
        let mut system = agent::system_prompt(parts);
        if let Some(earlier) = earlier.filter(|e| !e.trim().is_empty()) {
            if !system.is_empty() {
                system.push('\n');
            }
            system.push_str("## Earlier in this session\n\n");
            system.push_str(earlier.trim_end());
            system.push('\n');
        }
        system
    }

    fn record(&self, event: Event) {
        self.trace.record(event);
    }

    fn state(
        &self,
        task_id: &crate::a2a::TaskId,
        from: Option<RecordedState>,
        to: RecordedState,
        reason: Option<String>,
    ) {
        tracing::info!(
            "task {task_id}: {}",
            serde_json::to_string(&to)
                .unwrap_or_default()
                .trim_matches('"')
        );
        self.record(Event::TaskState {
            task_id: task_id.clone(),
            from,
            to,
            reason,
        });
    }
}

/// Runs `work` to its end and returns the state it ended in; the capsule's task_end
/// hooks run once it has ended.
pub(crate) async fn run(env: Arc<TaskEnv>, work: Work) -> RecordedState {
    let task_id = work.task_id.clone();
    let state = run_task(env.clone(), work).await;
    if let Some(host) = &env.components {
        let record = serde_json::json!({"task_id": task_id, "state": state});
        let _ = host.fire(HookEvent::TaskEnd, record).await;
    }
    state
}

async fn run_task(env: Arc<TaskEnv>, work: Work) -> RecordedState {
    let task_id = work.task_id.clone();
    let mut text = work.message.text_content();
    env.record(Event::A2aTaskReceived {
        task_id: task_id.clone(),
        context_id: Some(work.context_id.clone()),
        credential: work.caller.to_string(),
        text: Some(text.clone()),
        trust: Some(work.trust.as_str().to_string()),
        trace_id: Some(work.span.span.trace_id),
        span_id: Some(work.span.span.span_id),
        parent_span_id: work.span.parent,
        link: work.span.link,
    });
    if let Some(host) = &env.components {
        let record = serde_json::json!({"task_id": task_id, "context_id": work.context_id,
            "text": text, "trust": work.trust.as_str()});
        let _ = host.fire(HookEvent::TaskReceived, record).await;
    }
    let handle = work.handle;
    let cancel = work.cancel;
    if handle.working().is_err() {
        // Canceled (or refused) before it began.
        return finish(&env, &handle, RecordedState::Submitted, Outcome::Canceled);
    }
    env.state(
        &task_id,
        Some(RecordedState::Submitted),
        RecordedState::Working,
        None,
    );
    // The capsule's agent.driver, run with its capabilities for this task's trust.
    let driver = env.components.as_ref().and_then(|h| h.driver(work.trust));
    let transport = match agent::transport(&env.transport, driver) {
        Ok(t) => t,
        Err(reason) => {
            return finish(
                &env,
                &handle,
                RecordedState::Working,
                Outcome::Failed { reason },
            );
        }
    };
    let calls = env.peers.clone().map(|peers| {
        crate::call_member::Calls::new(crate::call_member::CallsSpec {
            task_id: task_id.clone(),
            peers,
            trace: Some(env.trace.clone()),
            trust: work.trust,
            config: crate::call_member::CallConfig::default(),
            span: Some(work.span.span),
            session_deadline: env.deadline,
            chain: crate::agent::waits_for_answers(env.max_turns).then(|| work.chain.clone()),
        })
    });
    let mut tools: Vec<Arc<dyn agent::Tool>> = Vec::new();
    let call_tool = calls.clone().and_then(crate::call_member::CallMember::new);
    let calling = call_tool.is_some();
    if let Some(tool) = call_tool {
        tools.push(tool);
    }
    // The host's own tools (docs/shell.md, docs/delegation.md).
    if let Some(shell) = &env.shell {
        tools.push(crate::shell::Shell::tool(shell.clone()));
    }
    let delegations = env
        .delegation
        .clone()
        .map(|config| crate::delegation::Delegations::new(config, Some(work.span.span)));
    if let Some(d) = &delegations {
        tools.push(d.tool());
    }
    // The capsule's WASM tools, and its before_tool/after_tool hooks around every tool.
    if let Some(host) = &env.components {
        tools.extend(host.tools(work.trust, calls.clone()).await);
        tools = host.hooked(task_id.as_str(), tools);
    }
    let mut agent = Agent::new(AgentSpec {
        task_id: task_id.clone(),
        system: env.system.clone(),
        max_turns: env.max_turns,
        tools,
        transport,
        trace: Some(env.trace.clone()),
    });
    // One turn end waits for owed answers. E-MAN-003 keeps the call-member tool (a
    // member with callees) and delegation apart; a member with no callee that may
    // delegate waits for its children.
    match (calls, delegations) {
        (Some(calls), d) if calling || d.is_none() => agent = agent.with_turn_end(calls),
        (_, Some(d)) => agent = agent.with_turn_end(d),
        _ => {}
    }
    agent = agent
        .with_progress(partial_output(&env, &handle))
        .with_parallel_tools(env.parallel_tools);
    loop {
        let outcome = agent.send(&text, &cancel).await;
        let Outcome::InputRequired { question } = &outcome else {
            return finish(&env, &handle, RecordedState::Working, outcome);
        };
        env.state(
            &task_id,
            Some(RecordedState::Working),
            RecordedState::InputRequired,
            Some(question.clone()),
        );
        if let Err(d) = env.write_result(&outcome, "") {
            output::stderr_line(&d);
        }
        match handle.input_required(question.clone()).await {
            Ok(reply) => {
                text = reply.text_content();
                env.state(
                    &task_id,
                    Some(RecordedState::InputRequired),
                    RecordedState::Working,
                    None,
                );
            }
            Err(_) => {
                agent.close().await;
                return finish(
                    &env,
                    &handle,
                    RecordedState::InputRequired,
                    Outcome::Canceled,
                );
            }
        }
    }
}

/// Reports a final outcome on the door, writes out/result.txt and the task's last
/// task_state record. The door's word wins: a task the door already canceled ends
/// canceled whatever the agent made of it meanwhile.
fn finish(
    env: &TaskEnv,
    handle: &TaskHandle,
    from: RecordedState,
    outcome: Outcome,
) -> RecordedState {
    // result.txt first, so a caller that sees the task end finds its result; it is
    // written again below if the door canceled the task meanwhile.
    if !matches!(outcome, Outcome::Canceled)
        && let Err(d) = env.write_result(&outcome, "")
    {
        output::stderr_line(&d);
    }
    let reported = match &outcome {
        Outcome::Completed { message, artifacts } => {
            let mut ok = true;
            for artifact in artifacts {
                if let Some(a) = to_wire(artifact) {
                    ok &= handle.artifact(a, false, true).is_ok();
                }
            }
            ok && match message {
                Some(text) => handle.complete(text.clone()).is_ok(),
                None => handle.set_status(a2a::TaskState::Completed, None).is_ok(),
            }
        }
        Outcome::Rejected { reason } => handle.reject(reason.clone()).is_ok(),
        Outcome::Failed { reason } => handle.fail(reason.clone()).is_ok(),
        Outcome::Canceled | Outcome::InputRequired { .. } => false,
    };
    let snapshot = handle.snapshot();
    let (outcome, reason) = if reported {
        (outcome, None)
    } else {
        // Ended by the door: the status message says who canceled it and why.
        let why = snapshot
            .as_ref()
            .and_then(|t| t.status.message.as_ref())
            .map(|m| m.text_content())
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| "canceled".to_string());
        (Outcome::Canceled, Some(why))
    };
    if !reported && let Err(d) = env.write_result(&outcome, reason.as_deref().unwrap_or("")) {
        output::stderr_line(&d);
    }
    let to = outcome.state();
    let detail = match &outcome {
        Outcome::Rejected { reason } | Outcome::Failed { reason } => Some(reason.clone()),
        _ => reason,
    };
    env.state(handle.id(), Some(from), to, detail);
    to
}

/// Where a streaming model's text goes as it arrives: each streamed turn is one
/// artifact `partial-<n>` (n from 1 in the task), named `partial output`, its text
/// appended chunk by chunk and closed with `lastChunk` when the turn's stream ends. The
/// door sends each chunk to SubscribeToTask (and SendStreamingMessage) streams as a
/// `TaskArtifactUpdateEvent`; murmur.WatchSession gets the same event as
/// `{"artifactUpdate": …}`.
fn partial_output(env: &Arc<TaskEnv>, handle: &TaskHandle) -> agent::Progress {
    use std::sync::Mutex;
    let (handle, events) = (handle.clone(), env.events.clone());
    // The current turn's number, whether its artifact has begun, and the piece held
    // back so that the last one can carry `lastChunk` (an artifact has at least one part).
    let state = Mutex::new((0u32, false, None::<String>));
    Arc::new(move |text: &str, last: bool| {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        let held = s.2.take();
        if !last {
            s.2 = Some(text.to_string());
        }
        let Some(piece) = held else {
            return;
        };
        let append = s.1;
        if !append {
            s.0 += 1;
        }
        s.1 = !last;
        let artifact = a2a::Artifact {
            artifact_id: format!("partial-{}", s.0),
            name: Some("partial output".into()),
            description: None,
            parts: vec![a2a::Part::text(piece)],
            metadata: None,
            extensions: Vec::new(),
        };
        drop(s);
        if let Some(events) = &events {
            let event = a2a::StreamResponse::ArtifactUpdate(a2a::TaskArtifactUpdateEvent {
                task_id: handle.id().clone(),
                context_id: handle.context_id().to_string(),
                artifact: artifact.clone(),
                append,
                last_chunk: last,
                metadata: None,
            });
            if let Ok(v) = serde_json::to_value(&event) {
                events.publish(v);
            }
        }
        let _ = handle.artifact(artifact, append, last);
    })
}

/// The agent's artifact in the door's wire type: both are A2A 1.0's shape.
fn to_wire(artifact: &agent::Artifact) -> Option<a2a::Artifact> {
    serde_json::to_value(artifact)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
}
