//! `mur trace export`: a pure transform of trace.jsonl records into OTLP/JSON spans
//! (docs/trace.md, OpenTelemetry export). One resource per session; a span for each
//! task (SERVER), model turn (`chat`), tool call (`execute_tool`) and member call
//! (CLIENT); the wind-down and the deadline as events. Ids come from the records
//! (`trace_id`, `span_id`) or are derived from them ([`SpanContext::derived`]), so the
//! same records give the same spans every time.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::context::{SpanContext, SpanId, TraceId};
use super::otlp::{
    Code, Kind, Link, Resource, ResourceSpans, Scope, ScopeSpans, Span, SpanEvent, Status,
    TracesData, kv, kv_int,
};
use super::{Event, ExitStatus, Record, RecordedState, Usage};

/// One session's records, in order.
pub struct Session<'a> {
    pub records: &'a [Record],
}

/// The spans of one session, under its resource.
pub fn session_spans(records: &[Record]) -> ResourceSpans {
    let mut b = Builder::default();
    for r in records {
        b.take(r);
    }
    b.finish()
}

/// Every session's spans, one `TracesData` per session; then, for a formation, one
/// for the launcher: the root span (`invoke_workflow`) each task without a recorded
/// parent in these records was started under (the entry member's `--task`).
pub fn export(sessions: &[Session<'_>], formation_id: Option<&str>) -> Vec<TracesData> {
    let mut out: Vec<ResourceSpans> = sessions.iter().map(|s| session_spans(s.records)).collect();
    if let Some(frm) = formation_id {
        let known: BTreeSet<(String, String)> = out
            .iter()
            .flat_map(|r| r.scope_spans.iter().flat_map(|s| s.spans.iter()))
            .map(|s| (s.trace_id.clone(), s.span_id.clone()))
            .collect();
        // The launcher's span: as long as the tasks it started (the launcher, which
        // sends it live, times it by its own clock: trace::live::Live::send).
        let mut roots: BTreeMap<(String, String), (u128, u128)> = BTreeMap::new();
        for span in out
            .iter()
            .flat_map(|r| r.scope_spans.iter().flat_map(|s| s.spans.iter()))
        {
            if span.kind != Kind::Server || span.parent_span_id.is_empty() {
                continue;
            }
            let key = (span.trace_id.clone(), span.parent_span_id.clone());
            if known.contains(&key) {
                continue;
            }
            let (start, end) = (
                nanos_of(&span.start_time_unix_nano),
                nanos_of(&span.end_time_unix_nano),
            );
            let e = roots.entry(key).or_insert((start, end));
            e.0 = e.0.min(start);
            e.1 = e.1.max(end);
        }
        if !roots.is_empty() {
            let spans = roots
                .into_iter()
                .map(|((trace_id, span_id), (start, end))| {
                    workflow_span(trace_id, span_id, frm, start, end)
                })
                .collect();
            out.push(ResourceSpans {
                resource: launcher_resource(frm),
                scope_spans: vec![scope(spans)],
            });
        }
    }
    out.into_iter()
        .map(|r| TracesData {
            resource_spans: vec![r],
        })
        .collect()
}

/// The launcher's root span of formation `frm`'s task (`invoke_workflow`), from
/// `start` to `end` (ns since the epoch). Ids in hex.
pub fn workflow_span(trace_id: String, span_id: String, frm: &str, start: u128, end: u128) -> Span {
    Span {
        trace_id,
        span_id,
        parent_span_id: String::new(),
        name: format!("invoke_workflow {frm}"),
        kind: Kind::Internal,
        start_time_unix_nano: start.to_string(),
        end_time_unix_nano: end.to_string(),
        attributes: vec![
            kv("gen_ai.operation.name", "invoke_workflow"),
            kv("gen_ai.provider.name", "mur"),
            kv("gen_ai.workflow.name", frm),
            kv("mur.formation.id", frm),
        ],
        events: Vec::new(),
        links: Vec::new(),
        status: ok(),
    }
}

/// The launcher's resource: `mur launcher` of formation `frm`.
pub fn launcher_resource(frm: &str) -> Resource {
    Resource {
        attributes: vec![
            kv("service.name", "mur launcher"),
            kv("mur.formation.id", frm),
        ],
    }
}

fn scope(spans: Vec<Span>) -> ScopeSpans {
    ScopeSpans {
        scope: Scope::mur(),
        spans,
        schema_url: super::otlp::SCHEMA_URL,
    }
}

fn ok() -> Status {
    Status {
        code: Code::Unset,
        message: String::new(),
    }
}

fn nanos_of(s: &str) -> u128 {
    s.parse().unwrap_or(0)
}

/// A record's time in nanoseconds since the epoch (0 for a `ts` that does not parse).
pub fn nanos(ts: &str) -> u128 {
    humantime::parse_rfc3339(ts)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// A span being built: open until its end record.
struct Open {
    span: Span,
    start: u128,
    end: Option<u128>,
}

impl Open {
    fn new(
        ctx: SpanContext,
        parent: Option<SpanId>,
        name: String,
        kind: Kind,
        start: u128,
    ) -> Open {
        Open {
            span: Span {
                trace_id: ctx.trace_id.hex(),
                span_id: ctx.span_id.hex(),
                parent_span_id: parent.map(|p| p.hex()).unwrap_or_default(),
                name,
                kind,
                start_time_unix_nano: String::new(),
                end_time_unix_nano: String::new(),
                attributes: Vec::new(),
                events: Vec::new(),
                links: Vec::new(),
                status: ok(),
            },
            start,
            end: None,
        }
    }

    fn event(&mut self, at: u128, name: &str, attributes: Vec<super::otlp::KeyValue>) {
        self.span.events.push(SpanEvent {
            time_unix_nano: at.to_string(),
            name: name.to_string(),
            attributes,
        });
    }

    fn close(mut self, last: u128) -> Span {
        let end = self.end.unwrap_or(last).max(self.start);
        self.span.start_time_unix_nano = self.start.to_string();
        self.span.end_time_unix_nano = end.to_string();
        self.span
    }

    fn closed(&self, last: u128) -> Span {
        Open {
            span: self.span.clone(),
            start: self.start,
            end: self.end,
        }
        .close(last)
    }
}

struct Task {
    ctx: SpanContext,
    open: Open,
    /// The time of the task's latest record: where its next model turn began.
    last: u128,
    /// The tokens of this turn's answered model requests, until its inference_turn.
    usage: Option<Usage>,
    /// The tool calls asked for and not yet answered: call id -> (span, start).
    tools: HashMap<String, usize>,
}

#[derive(Default)]
struct Builder {
    resource: Vec<super::otlp::KeyValue>,
    session_id: String,
    member: Option<String>,
    tasks: Vec<Task>,
    by_id: HashMap<String, usize>,
    /// Every span but the tasks', in the order they began.
    spans: Vec<Open>,
    /// A member call's span: (task, call id) -> index in `spans`.
    calls: HashMap<(usize, String), usize>,
    used_ids: BTreeSet<(TraceId, SpanId)>,
    last: u128,
}

impl Builder {
    fn take(&mut self, r: &Record) {
        let at = nanos(&r.ts);
        self.last = self.last.max(at);
        match &r.event {
            Event::SessionStart {
                session_id,
                capsule,
                formation_id,
                formation_member,
                ..
            } => {
                self.session_id = session_id.clone();
                self.member = formation_member.clone();
                let service = formation_member.clone().unwrap_or(capsule.name.clone());
                let mut attrs = vec![
                    kv("service.name", service),
                    kv("service.version", capsule.version.clone()),
                    kv("service.instance.id", session_id.clone()),
                    kv("mur.session.id", session_id.clone()),
                    kv("mur.capsule.name", capsule.name.clone()),
                    kv("mur.capsule.version", capsule.version.clone()),
                ];
                if let Some(frm) = formation_id {
                    attrs.push(kv("mur.formation.id", frm.clone()));
                }
                if let Some(m) = formation_member {
                    attrs.push(kv("mur.formation.member", m.clone()));
                }
                // A resumed session's trace has a second session_start: the first names it.
                if self.resource.is_empty() {
                    self.resource = attrs;
                }
            }
            Event::A2aTaskReceived {
                task_id,
                context_id,
                credential,
                trust,
                trace_id,
                span_id,
                parent_span_id,
                link,
                ..
            } => {
                let ctx = match (trace_id, span_id) {
                    (Some(t), Some(s)) => SpanContext {
                        trace_id: *t,
                        span_id: *s,
                    },
                    // A trace written before mur recorded ids: derived from the session.
                    _ => legacy(&self.session_id, task_id.as_str()),
                };
                let mut open = Open::new(
                    ctx,
                    *parent_span_id,
                    crate::a2a::SEND_MESSAGE.to_string(),
                    Kind::Server,
                    at,
                );
                let attrs = &mut open.span.attributes;
                attrs.push(kv("a2a.method.name", crate::a2a::SEND_MESSAGE));
                attrs.push(kv("a2a.task.id", task_id.as_str()));
                if let Some(c) = context_id {
                    attrs.push(kv("gen_ai.conversation.id", c.clone()));
                }
                if let Some(m) = &self.member {
                    attrs.push(kv("gen_ai.agent.name", m.clone()));
                }
                attrs.push(kv("mur.credential", credential.clone()));
                if let Some(t) = trust {
                    attrs.push(kv("mur.trust", t.clone()));
                }
                if let Some(l) = link {
                    open.span.links.push(Link {
                        trace_id: l.trace_id.hex(),
                        span_id: l.span_id.hex(),
                    });
                }
                self.used_ids.insert((ctx.trace_id, ctx.span_id));
                self.by_id
                    .insert(task_id.as_str().to_string(), self.tasks.len());
                self.tasks.push(Task {
                    ctx,
                    open,
                    last: at,
                    usage: None,
                    tools: HashMap::new(),
                });
            }
            Event::TaskState {
                task_id,
                to,
                reason,
                ..
            } => {
                let Some(t) = self.task(task_id.as_str()) else {
                    return;
                };
                t.last = at;
                let word = state_word(*to);
                match to {
                    RecordedState::Completed
                    | RecordedState::Canceled
                    | RecordedState::Failed
                    | RecordedState::Rejected => {
                        t.open.end = Some(at);
                        t.open.span.attributes.push(kv("a2a.task.state", word));
                        if matches!(to, RecordedState::Failed | RecordedState::Rejected) {
                            t.open.span.status = Status {
                                code: Code::Error,
                                message: reason.clone().unwrap_or_default(),
                            };
                            t.open
                                .span
                                .attributes
                                .push(kv("error.type", state_name(*to)));
                        }
                    }
                    RecordedState::InputRequired | RecordedState::AuthRequired => {
                        t.open.event(at, state_name(*to), Vec::new());
                    }
                    _ => {}
                }
            }
            Event::ModelRequest {
                task_id,
                usage: Some(u),
                ..
            } => {
                if let Some(t) = self.task(task_id.as_str()) {
                    t.usage.get_or_insert_default().add(u);
                }
            }
            Event::InferenceTurn {
                task_id,
                turn,
                transport,
                reply,
                ..
            } => {
                let seq = r.seq;
                let Some(i) = self.by_id.get(task_id.as_str()).copied() else {
                    return;
                };
                let t = &mut self.tasks[i];
                let ctx = t.ctx.derived(&format!("inference_turn {seq}"));
                let mut open = Open::new(
                    ctx,
                    Some(t.ctx.span_id),
                    "chat".into(),
                    Kind::Client,
                    t.last,
                );
                open.end = Some(at);
                let attrs = &mut open.span.attributes;
                attrs.push(kv("gen_ai.operation.name", "chat"));
                attrs.push(kv("gen_ai.provider.name", format!("mur.{transport}")));
                attrs.push(kv_int("mur.turn", i64::from(*turn)));
                let reply = super::word(reply);
                attrs.push(kv("mur.reply", reply.clone()));
                if let Some(u) = t.usage.take() {
                    attrs.push(kv_int("gen_ai.usage.input_tokens", u.prompt_tokens as i64));
                    attrs.push(kv_int(
                        "gen_ai.usage.output_tokens",
                        u.completion_tokens as i64,
                    ));
                }
                if reply == "failed" {
                    open.span.status.code = Code::Error;
                    attrs.push(kv("error.type", "failed"));
                }
                t.last = at;
                self.spans.push(open);
            }
            Event::ToolCall {
                task_id,
                call_id,
                tool,
                ..
            } => {
                let Some(i) = self.by_id.get(task_id.as_str()).copied() else {
                    return;
                };
                let task_span = self.tasks[i].ctx;
                let mut ctx = task_span.tool_call(call_id);
                if !self.used_ids.insert((ctx.trace_id, ctx.span_id)) {
                    // A call id the task used before: this one's id takes its seq too.
                    ctx = task_span.derived(&format!("tool_call {call_id} {}", r.seq));
                    self.used_ids.insert((ctx.trace_id, ctx.span_id));
                }
                let mut open = Open::new(
                    ctx,
                    Some(task_span.span_id),
                    format!("execute_tool {tool}"),
                    Kind::Internal,
                    at,
                );
                open.span.attributes.extend([
                    kv("gen_ai.operation.name", "execute_tool"),
                    kv("gen_ai.tool.name", tool.clone()),
                    kv("gen_ai.tool.call.id", call_id.clone()),
                ]);
                self.tasks[i]
                    .tools
                    .insert(call_id.clone(), self.spans.len());
                self.spans.push(open);
            }
            Event::ToolResult {
                task_id,
                call_id,
                is_error,
                output,
                duration_ms,
                ..
            } => {
                let Some(i) = self.by_id.get(task_id.as_str()).copied() else {
                    return;
                };
                self.tasks[i].last = at;
                let Some(s) = self.tasks[i].tools.remove(call_id) else {
                    return;
                };
                let open = &mut self.spans[s];
                open.end = Some(at);
                let began = at.saturating_sub(u128::from(*duration_ms) * 1_000_000);
                open.start = open.start.max(began.min(at));
                if *is_error {
                    open.span.status = Status {
                        code: Code::Error,
                        message: super::cut(output),
                    };
                    open.span.attributes.push(kv("error.type", "tool_error"));
                }
            }
            Event::MemberOffer {
                task_id,
                call_id,
                member,
                offer,
                retry_in_ms,
            } => {
                let Some(s) = self.call(task_id.as_str(), call_id, member, None, at) else {
                    return;
                };
                let mut attrs = vec![kv_int("mur.offer", i64::from(*offer))];
                if let Some(ms) = retry_in_ms {
                    attrs.push(kv_int("mur.retry_in_ms", *ms as i64));
                }
                self.spans[s].event(at, "member_busy", attrs);
            }
            Event::MemberCall {
                task_id,
                call_id,
                member,
                member_task_id,
                peer_url,
                span_id,
                ..
            } => {
                let Some(s) = self.call(task_id.as_str(), call_id, member, *span_id, at) else {
                    return;
                };
                let attrs = &mut self.spans[s].span.attributes;
                if let Some(id) = member_task_id {
                    attrs.push(kv("a2a.task.id", id.as_str()));
                }
                if let Some(url) = peer_url {
                    attrs.push(kv("url.full", url.clone()));
                }
            }
            Event::MemberAnswer {
                task_id,
                call_id,
                member,
                state,
                text,
                ..
            } => {
                let Some(s) = self.call(task_id.as_str(), call_id, member, None, at) else {
                    return;
                };
                let open = &mut self.spans[s];
                open.end = Some(at);
                open.span
                    .attributes
                    .push(kv("a2a.task.state", state_word(*state)));
                if !matches!(state, RecordedState::Completed) {
                    open.span.status = Status {
                        code: Code::Error,
                        message: super::cut(text),
                    };
                }
                if let Some(t) = self.task(task_id.as_str()) {
                    t.last = at;
                }
            }
            Event::FormationEnded { formation_id } => {
                self.on_open_tasks(
                    at,
                    "formation_ended",
                    vec![kv("mur.formation.id", formation_id.clone())],
                );
            }
            Event::SessionEnd {
                exit_status,
                error_code,
                ..
            } => {
                if *exit_status == ExitStatus::DeadlineReached {
                    let mut attrs = vec![];
                    if let Some(code) = error_code {
                        attrs.push(kv("mur.error_code", code.clone()));
                    }
                    self.on_open_tasks(at, "deadline_reached", attrs);
                }
            }
            Event::A2aTaskRefused { .. }
            | Event::ModelRequest { .. }
            | Event::ProxyDecision { .. } => {}
        }
    }

    fn task(&mut self, id: &str) -> Option<&mut Task> {
        let i = *self.by_id.get(id)?;
        self.tasks.get_mut(i)
    }

    /// The span of member call `call_id`, made on its first record. Its parent is the
    /// tool call it belongs to (`<tool call>` or `<tool call>.send-<n>`), else the task.
    fn call(
        &mut self,
        task_id: &str,
        call_id: &str,
        member: &str,
        recorded: Option<SpanId>,
        at: u128,
    ) -> Option<usize> {
        let i = *self.by_id.get(task_id)?;
        if let Some(s) = self.calls.get(&(i, call_id.to_string())).copied() {
            if let Some(id) = recorded {
                self.spans[s].span.span_id = id.hex();
            }
            return Some(s);
        }
        let task = &self.tasks[i];
        let tool = call_id.split(".send-").next().unwrap_or(call_id);
        let (parent, start) = match task.tools.get(tool).map(|s| &self.spans[*s]) {
            Some(t) => (
                SpanId::parse(&t.span.span_id).unwrap_or(task.ctx.span_id),
                t.start,
            ),
            None => (task.ctx.span_id, at),
        };
        let ctx = SpanContext {
            trace_id: task.ctx.trace_id,
            span_id: recorded
                .unwrap_or_else(|| task.ctx.derived(&format!("member_call {call_id}")).span_id),
        };
        let mut open = Open::new(
            ctx,
            Some(parent),
            crate::a2a::SEND_MESSAGE.to_string(),
            Kind::Client,
            start,
        );
        open.span.attributes.extend([
            kv("a2a.method.name", crate::a2a::SEND_MESSAGE),
            kv("gen_ai.agent.name", member),
            kv("mur.member", member),
            kv("mur.call_id", call_id),
        ]);
        self.calls
            .insert((i, call_id.to_string()), self.spans.len());
        self.spans.push(open);
        Some(self.spans.len() - 1)
    }

    /// An event on every task still open; with none, on the latest task.
    fn on_open_tasks(&mut self, at: u128, name: &str, attrs: Vec<super::otlp::KeyValue>) {
        let open: Vec<usize> = (0..self.tasks.len())
            .filter(|i| self.tasks[*i].open.end.is_none())
            .collect();
        let targets = if open.is_empty() {
            self.tasks.len().checked_sub(1).into_iter().collect()
        } else {
            open
        };
        for i in targets {
            self.tasks[i].open.event(at, name, attrs.clone());
        }
    }

    fn finish(self) -> ResourceSpans {
        let last = self.last;
        let resource = self.resource();
        let mut spans: Vec<Span> = Vec::with_capacity(self.tasks.len() + self.spans.len());
        spans.extend(self.tasks.into_iter().map(|t| t.open.close(last)));
        spans.extend(self.spans.into_iter().map(|o| o.close(last)));
        ResourceSpans {
            resource,
            scope_spans: vec![scope(spans)],
        }
    }

    fn resource(&self) -> Resource {
        let mut attributes = self.resource.clone();
        if attributes.is_empty() {
            attributes.push(kv("service.name", "mur"));
        }
        Resource { attributes }
    }
}

/// The same transform, record by record, for live export (docs/trace.md, Live
/// export): each span is handed out once, when the record that ends it is taken; at
/// `session_end`, every span still open, closed there as `mur trace export` closes it.
#[derive(Default)]
pub struct Incremental {
    b: Builder,
    /// The tasks and other spans not handed out yet, by index.
    pending_tasks: Vec<usize>,
    pending_spans: Vec<usize>,
}

impl Incremental {
    /// Takes the next record; returns the spans it ended.
    pub fn take(&mut self, r: &Record) -> Vec<Span> {
        let (tasks, spans) = (self.b.tasks.len(), self.b.spans.len());
        self.b.take(r);
        self.pending_tasks.extend(tasks..self.b.tasks.len());
        self.pending_spans.extend(spans..self.b.spans.len());
        let all = matches!(r.event, Event::SessionEnd { .. });
        let (b, last) = (&self.b, self.b.last);
        let mut out = Vec::new();
        self.pending_tasks.retain(|&i| {
            let open = &b.tasks[i].open;
            let done = all || open.end.is_some();
            if done {
                out.push(open.closed(last));
            }
            !done
        });
        self.pending_spans.retain(|&i| {
            let open = &b.spans[i];
            let done = all || open.end.is_some();
            if done {
                out.push(open.closed(last));
            }
            !done
        });
        out
    }

    /// The session's resource, from its `session_start`.
    pub fn resource(&self) -> Resource {
        self.b.resource()
    }
}

/// `spans` under `resource`, as one OTLP request body (`ExportTraceServiceRequest`
/// has the fields of `TracesData`).
pub fn request(resource: Resource, spans: Vec<Span>) -> TracesData {
    TracesData {
        resource_spans: vec![ResourceSpans {
            resource,
            scope_spans: vec![scope(spans)],
        }],
    }
}

/// The span of a task in a trace written before mur recorded ids.
fn legacy(session_id: &str, task_id: &str) -> SpanContext {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("mur legacy {session_id} {task_id}").as_bytes());
    let mut t = [0u8; 16];
    t.copy_from_slice(&digest[..16]);
    let mut s = [0u8; 8];
    s.copy_from_slice(&digest[16..24]);
    SpanContext {
        trace_id: super::context::Id(t),
        span_id: super::context::Id(s),
    }
}

/// A2A's name for a state (`TASK_STATE_COMPLETED`).
fn state_word(s: RecordedState) -> String {
    format!("TASK_STATE_{}", state_name(s).to_ascii_uppercase())
}

fn state_name(s: RecordedState) -> &'static str {
    match s {
        RecordedState::Submitted => "submitted",
        RecordedState::Working => "working",
        RecordedState::InputRequired => "input_required",
        RecordedState::AuthRequired => "auth_required",
        RecordedState::Completed => "completed",
        RecordedState::Canceled => "canceled",
        RecordedState::Failed => "failed",
        RecordedState::Rejected => "rejected",
    }
}
