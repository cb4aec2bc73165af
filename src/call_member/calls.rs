//! `Calls`: every call one task made, the background offers to busy members, the
//! answers as they arrive, and the wait for them at the end of a turn.

use std::sync::{Arc, MutexGuard};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::client::{DoorClient, Sent, answer_text};
use super::{CallConfig, CallError, Peers, Routed, Trust, cut};
use crate::a2a;
use crate::agent::awaited::{Awaited, Pending, Reply};
use crate::agent::{BoxFuture, ToolOutput, TurnEnd};
use crate::door::chain::CallChain;
use crate::fence::{self, Answer};
use crate::trace::context::SpanContext;
use crate::trace::{Event, RecordedState, TraceWriter};

/// How long a call whose connection dropped waits for the launcher's word that the
/// callee exited (a killed callee's socket closes a moment before it is reaped).
const EXIT_NEWS: std::time::Duration = std::time::Duration::from_secs(2);

/// What `Calls::new` needs; the session fills it in for each task.
pub struct CallsSpec {
    /// The calling task's id (named by every trace record).
    pub task_id: crate::a2a::TaskId,
    pub peers: Arc<Peers>,
    /// Where member_call, member_offer and member_answer records go.
    pub trace: Option<Arc<TraceWriter>>,
    /// The calling task's trust class, stamped on each call.
    pub trust: Trust,
    pub config: CallConfig,
    /// The calling task's span: each call is a child span of it, sent as
    /// `traceparent` (docs/trace.md, Trace context). `None` for a hook's calls.
    pub span: Option<SpanContext>,
    /// The session's deadline (`--deadline`): no offer is made past it.
    pub session_deadline: Option<Instant>,
    /// The tasks waiting on the calling task; each call carries it on, with the
    /// calling task added (`crate::door::chain`). `None`: the calling task never
    /// waits for an answer, so nothing waits through its calls.
    pub chain: Option<CallChain>,
}

/// One task's calls. Shared by its `CallMember` tool and its agent loop.
pub struct Calls {
    spec: CallsSpec,
    /// Its calls; their end fires when the calling task has ended, and offers and
    /// answer watchers stop.
    calls: Awaited<Entry>,
}

impl std::fmt::Debug for Calls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Calls")
            .field("task_id", &self.spec.task_id)
            .field("peers", &self.spec.peers)
            .field("calls", &*self.lock())
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Entry {
    call_id: String,
    member: String,
    member_task_id: Option<crate::a2a::TaskId>,
    reply: Reply<Answer>,
    /// The virtual address a component's murmur:message/send named.
    via: Option<String>,
    /// The call's client span (every offer and follow-up request carries it).
    span: Option<SpanContext>,
}

impl Pending for Entry {
    type Answer = Answer;
    fn reply(&mut self) -> &mut Reply<Answer> {
        &mut self.reply
    }
}

/// When the next offer to a busy member is made: `pause` from now, unless that is past
/// the deadline (then none is).
fn next_offer(pause: std::time::Duration, deadline: Instant) -> Option<Instant> {
    let at = Instant::now() + pause;
    (at < deadline).then_some(at)
}

/// How a call's first SendMessage went.
enum Started {
    Taken,
    /// Offered again in the background until `deadline`.
    Busy {
        deadline: Instant,
    },
}

impl Calls {
    pub fn new(spec: CallsSpec) -> Arc<Calls> {
        Arc::new(Calls {
            spec,
            calls: Awaited::new(),
        })
    }

    pub fn peers(&self) -> &Peers {
        &self.spec.peers
    }

    /// The calling task's span, stamped on its components' requests to members.
    pub fn span(&self) -> Option<SpanContext> {
        self.spec.span
    }

    /// The chain each call carries: the calling task's, with the calling task last.
    fn chain(&self) -> Option<String> {
        let me = self.spec.peers.me()?;
        self.spec
            .chain
            .as_ref()?
            .then(me.as_str(), &self.spec.task_id)
            .header_value()
    }

    /// Call `idx`'s client span.
    fn span_of(&self, idx: usize) -> Option<SpanContext> {
        self.lock().get(idx).and_then(|e| e.span)
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.calls.lock()
    }

    fn record(&self, event: Event) {
        if let Some(trace) = &self.spec.trace {
            trace.record(event);
        }
    }

    fn client<'a>(
        &'a self,
        member: &'a str,
        url: reqwest::Url,
        span: Option<SpanContext>,
    ) -> Option<DoorClient<'a>> {
        Some(DoorClient {
            client: &self.spec.peers.client,
            member,
            url,
            token: self.spec.peers.token(member)?,
            trust: self.spec.trust,
            span,
            chain: self.chain(),
        })
    }

    /// One call-member call: refused before any connection for a member it may not
    /// call; otherwise a SendMessage at the member's door. Returns as soon as the
    /// door holds the task, or at once when the member is busy (the offers then go
    /// on in the background).
    pub async fn call(self: &Arc<Self>, call_id: &str, member: &str, task: &str) -> ToolOutput {
        let peers = &self.spec.peers;
        if !peers.may_call(member) {
            return ToolOutput::error(peers.not_callable(member).to_string());
        }
        let url = match peers.reach(member).await {
            Ok(u) => u,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        match self.start(call_id, member, url, task, None).await {
            Ok((_, Started::Taken)) => ToolOutput::ok(format!(
                "{member} holds the task. Its answer comes back into this task, fenced under \
                 member:{member}, when your turn ends."
            )),
            Ok((_, Started::Busy { deadline })) => ToolOutput::ok(format!(
                "{member} is busy: it already holds every task it takes at once. The runtime \
                 keeps offering it the task until it takes it or the call's deadline passes \
                 (in {}s); either way its answer comes back into this task, fenced under \
                 member:{member}, when your turn ends.",
                deadline.saturating_duration_since(Instant::now()).as_secs()
            )),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }

    /// murmur:message/send from one of the task's components: `peer_url` routed by
    /// [`Peers::route`] (the one refusal for a name it may not call, the door waited
    /// for, the reach rule), then the call made as call-member makes it (busy members
    /// offered again), and its answer waited for here rather than fenced into the
    /// task. The trace's member_call names `peer_url`, the virtual address.
    pub async fn send_wait(
        self: &Arc<Self>,
        call_id: &str,
        peer_url: &str,
        text: &str,
    ) -> Result<Answer, CallError> {
        let mut scratch = reqwest::header::HeaderMap::new();
        let routed = self
            .spec
            .peers
            .route(peer_url, &mut scratch, self.spec.trust, None)
            .await?;
        let Routed::Peer { member, url } = routed else {
            return Err(CallError::NotVirtual(cut(peer_url)));
        };
        let (idx, _) = self
            .start(call_id, &member, url, text, Some(peer_url))
            .await?;
        let mut rx = self.calls.subscribe();
        loop {
            if let Some(answer) = self.lock().get(idx).and_then(|e| e.reply.answer.clone()) {
                return Ok(answer);
            }
            tokio::select! {
                _ = rx.changed() => {}
                () = self.calls.ended().cancelled() => return Err(CallError::Ended),
            }
        }
    }

    /// Makes a call at `url`, the member's checked door: one SendMessage, then (in the
    /// background) the answer followed, or offers repeated while the member is busy.
    /// `via` is a component's virtual address: that call's answer is the component's,
    /// not owed to the task's turn end. Returns the call's index.
    async fn start(
        self: &Arc<Self>,
        call_id: &str,
        member: &str,
        url: reqwest::Url,
        task: &str,
        via: Option<&str>,
    ) -> Result<(usize, Started), CallError> {
        if self.calls.ended().is_cancelled() {
            return Err(CallError::Ended);
        }
        let span = self.spec.span.map(|s| s.child());
        let door = self
            .client(member, url.clone(), span)
            .ok_or_else(|| self.spec.peers.not_callable(member))?;
        let sent = match door.send(task).await {
            Ok(sent) => sent,
            Err(e @ CallError::Unreachable { .. }) => {
                return Err(self.spec.peers.exit_or(member, e, EXIT_NEWS).await);
            }
            Err(e) => return Err(e),
        };
        match sent {
            Sent::Taken(id) => {
                self.record(Event::MemberCall {
                    task_id: self.spec.task_id.clone(),
                    call_id: call_id.to_string(),
                    member: member.to_string(),
                    member_task_id: Some(id.clone()),
                    text: task.to_string(),
                    peer_url: via.map(str::to_string),
                    span_id: span.map(|s| s.span_id),
                });
                let idx = self.push(call_id, member, Some(id.clone()), via, span);
                let me = self.clone();
                let member = member.to_string();
                tokio::spawn(async move { me.watch(idx, &member, url, id).await });
                Ok((idx, Started::Taken))
            }
            Sent::Busy => {
                let deadline = self.deadline();
                let first = self.spec.config.offer_first;
                let next = next_offer(first, deadline);
                self.record(Event::MemberOffer {
                    task_id: self.spec.task_id.clone(),
                    call_id: call_id.to_string(),
                    member: member.to_string(),
                    offer: 1,
                    retry_in_ms: next.map(|_| first.as_millis() as u64),
                });
                let idx = self.push(call_id, member, None, via, span);
                let me = self.clone();
                let (member_s, task_s) = (member.to_string(), task.to_string());
                tokio::spawn(async move {
                    me.offer(idx, &member_s, &task_s, url, deadline, next).await
                });
                Ok((idx, Started::Busy { deadline }))
            }
        }
    }

    /// When offering stops: the call's deadline, or the session's if sooner.
    fn deadline(&self) -> Instant {
        let own = Instant::now() + self.spec.config.deadline;
        match self.spec.session_deadline {
            Some(d) if d < own => d,
            _ => own,
        }
    }

    fn push(
        &self,
        call_id: &str,
        member: &str,
        member_task_id: Option<crate::a2a::TaskId>,
        via: Option<&str>,
        span: Option<SpanContext>,
    ) -> usize {
        let mut st = self.lock();
        st.push(Entry {
            call_id: call_id.to_string(),
            member: member.to_string(),
            member_task_id,
            // A component's call is answered to the component, never at turn end.
            reply: Reply {
                answer: None,
                delivered: via.is_some(),
            },
            via: via.map(str::to_string),
            span,
        });
        st.len() - 1
    }

    /// Settles call `idx` with its answer (the first settlement wins).
    fn settle(&self, idx: usize, state: RecordedState, text: String) {
        let answer = {
            let mut st = self.lock();
            let Some(entry) = st.get_mut(idx) else { return };
            if entry.reply.answer.is_some() {
                return;
            }
            let answer = Answer {
                call_id: entry.call_id.clone(),
                member: entry.member.clone(),
                member_task_id: entry.member_task_id.clone(),
                state,
                text,
            };
            entry.reply.answer = Some(answer.clone());
            answer
        };
        self.record(Event::MemberAnswer {
            task_id: self.spec.task_id.clone(),
            call_id: answer.call_id,
            member: answer.member,
            member_task_id: answer.member_task_id,
            state: answer.state,
            text: answer.text,
        });
        self.calls.changed();
    }

    /// Follows a task the member took until it ends, and settles the call with it.
    async fn watch(
        self: Arc<Self>,
        idx: usize,
        member: &str,
        url: reqwest::Url,
        id: crate::a2a::TaskId,
    ) {
        let Some(door) = self.client(member, url, self.span_of(idx)) else {
            return;
        };
        let peers = &self.spec.peers;
        let result = tokio::select! {
            r = door.wait_end(&id) => r,
            // A callee that exited never answers: the call fails at once, saying so.
            e = peers.await_exit(member) => Err(e),
            () = self.calls.ended().cancelled() => return,
        };
        let result = match result {
            Err(e @ CallError::Unreachable { .. }) => {
                Err(peers.exit_or(member, e, EXIT_NEWS).await)
            }
            other => other,
        };
        match result {
            Ok(task) if task.status.state.is_interrupted() => {
                // call-member has no way to reply: free the member, and say why.
                let question = answer_text(&task);
                let _ = door.cancel(&id).await;
                self.settle(
                    idx,
                    RecordedState::Canceled,
                    format!(
                        "{member} asked for input, which call-member cannot give, so its task was \
                         canceled. Its question: {question}\nCall it again with the task stated \
                         in full, answering the question."
                    ),
                );
            }
            Ok(task) => self.settle(idx, state(task.status.state), answer_text(&task)),
            Err(e @ CallError::Exited { .. }) => {
                self.settle(idx, RecordedState::Failed, e.to_string())
            }
            Err(e) => self.settle(
                idx,
                RecordedState::Failed,
                format!("the answer could not be read: {e}"),
            ),
        }
    }

    /// Offers the task to a busy member again, with backoff, until it takes it, the
    /// deadline passes, or the calling task ends.
    async fn offer(
        self: Arc<Self>,
        idx: usize,
        member: &str,
        task: &str,
        url: reqwest::Url,
        deadline: Instant,
        mut next: Option<Instant>,
    ) {
        let Some(door) = self.client(member, url.clone(), self.span_of(idx)) else {
            return;
        };
        let config = &self.spec.config;
        let mut pause = config.offer_first;
        let mut offers: u32 = 1;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(next.unwrap_or(deadline)) => {}
                () = self.calls.ended().cancelled() => return,
            }
            // Whether another offer follows was decided, and recorded, with the last
            // one: a late wake-up neither drops a promised offer nor adds one.
            if next.is_none() {
                let waited = config.deadline.as_secs_f32();
                self.settle(
                    idx,
                    RecordedState::Failed,
                    format!(
                        "{member} was still busy when the call's deadline passed ({offers} offers \
                         over {waited}s, or until the session's deadline); it never took the task"
                    ),
                );
                return;
            }
            offers += 1;
            // Not raced against `ended`: an offer on the wire finishes, so a task the
            // member takes just after the calling task ended is known, and canceled.
            match door.send(task).await {
                Ok(Sent::Taken(id)) => {
                    // Read before: the guard below lives to the end of the statement.
                    let span_id = self.span_of(idx).map(|s| s.span_id);
                    self.record(Event::MemberCall {
                        task_id: self.spec.task_id.clone(),
                        call_id: self.call_id(idx),
                        member: member.to_string(),
                        member_task_id: Some(id.clone()),
                        text: task.to_string(),
                        peer_url: self.lock().get(idx).and_then(|e| e.via.clone()),
                        span_id,
                    });
                    if let Some(e) = self.lock().get_mut(idx) {
                        e.member_task_id = Some(id.clone());
                    }
                    if self.calls.ended().is_cancelled() {
                        let _ = door.cancel(&id).await;
                        self.settle(
                            idx,
                            RecordedState::Canceled,
                            format!(
                                "{member} took the task just after the calling task ended; the \
                                 runtime canceled it"
                            ),
                        );
                        return;
                    }
                    drop(door);
                    return self.watch(idx, member, url, id).await;
                }
                Ok(Sent::Busy) => {
                    pause = (pause * 2).min(config.offer_max);
                    next = next_offer(pause, deadline);
                    self.record(Event::MemberOffer {
                        task_id: self.spec.task_id.clone(),
                        call_id: self.call_id(idx),
                        member: member.to_string(),
                        offer: offers,
                        retry_in_ms: next.map(|_| pause.as_millis() as u64),
                    });
                }
                Err(e) => {
                    let e = match e {
                        CallError::Unreachable { .. } => {
                            self.spec.peers.exit_or(member, e, EXIT_NEWS).await
                        }
                        e => e,
                    };
                    self.settle(idx, RecordedState::Failed, e.to_string());
                    return;
                }
            }
        }
    }

    fn call_id(&self, idx: usize) -> String {
        self.lock()
            .get(idx)
            .map(|e| e.call_id.clone())
            .unwrap_or_default()
    }

    /// Whether an answer is still owed to the task (a call it has not been given the
    /// answer of).
    pub fn owed(&self) -> bool {
        self.calls.owed()
    }

    /// Waits for the answer to every call not yet answered into the task, and returns
    /// them in the order the calls were made (each once). Returns what has arrived
    /// when `cancel` fires or the task has ended.
    pub async fn wait_all(&self, cancel: &CancellationToken) -> Vec<Answer> {
        self.calls.wait_all(cancel).await
    }

    /// The calling task ended: stop offering and following. A task a busy member
    /// takes from an offer already on the wire is canceled.
    pub fn end(&self) {
        self.calls.ended().cancel();
    }

    /// The calling task was canceled: [`Calls::end`], then CancelTask for every task a
    /// member holds for it and has not answered (its live delegations).
    pub async fn cancel_live(&self) {
        self.end();
        let live: Vec<(usize, String, crate::a2a::TaskId)> = self
            .lock()
            .iter()
            .enumerate()
            .filter(|(_, e)| e.reply.answer.is_none())
            .filter_map(|(i, e)| Some((i, e.member.clone(), e.member_task_id.clone()?)))
            .collect();
        let cancels = live.iter().map(|(idx, member, id)| async move {
            let Ok(url) = self.spec.peers.door(member).await else {
                return;
            };
            if let Some(door) = self.client(member, url, self.span_of(*idx)) {
                let _ = door.cancel(id).await;
            }
            self.settle(
                *idx,
                RecordedState::Canceled,
                "canceled with the calling task: the runtime sent CancelTask".to_string(),
            );
        });
        futures_util::future::join_all(cancels).await;
    }
}

fn state(s: a2a::TaskState) -> RecordedState {
    match s {
        a2a::TaskState::Completed => RecordedState::Completed,
        a2a::TaskState::Canceled => RecordedState::Canceled,
        a2a::TaskState::Rejected => RecordedState::Rejected,
        a2a::TaskState::InputRequired => RecordedState::InputRequired,
        a2a::TaskState::AuthRequired => RecordedState::AuthRequired,
        a2a::TaskState::Submitted => RecordedState::Submitted,
        a2a::TaskState::Working => RecordedState::Working,
        a2a::TaskState::Failed | a2a::TaskState::Unspecified => RecordedState::Failed,
    }
}

impl TurnEnd for Calls {
    fn continuation<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            if !self.owed() {
                return None;
            }
            let answers = self.wait_all(cancel).await;
            (!answers.is_empty()).then(|| fence::render(&answers))
        })
    }

    fn task_ended(&self, canceled: bool) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if canceled {
                self.cancel_live().await;
            } else {
                self.end();
            }
        })
    }
}
