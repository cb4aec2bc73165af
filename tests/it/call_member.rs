//! call-member on real doors (127.0.0.1) with formation tokens from a real key:
//! the spec's "Giving a member work", "How reachability is enforced" and "What a
//! member's components are handed".

use std::sync::Arc;
use std::time::Duration;

use crate::support::call_member::*;
use mur::agent::{Message, Outcome, ToolCall};
use mur::call_member::{CallConfig, CallMember, Routed, Trust};
use mur::credential::FormationKey;
use mur::door::Acceptance;
use mur::fence;
use mur::trace::{Event, Record, RecordedState};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::json;
use tokio::sync::Semaphore;

fn fast() -> CallConfig {
    CallConfig {
        deadline: Duration::from_secs(30),
        offer_first: Duration::from_millis(20),
        offer_max: Duration::from_millis(100),
    }
}

fn tool_call(id: &str, member: &str, task: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "call-member".into(),
        arguments: json!({"member": member, "task": task}),
    }
}

/// entry → a → b, every member on the built-in model: b plans, a answers from b's
/// plan, entry answers from a's answer, and each answer comes back fenced.
#[tokio::test]
async fn a_three_member_chain_answers_back_fenced() {
    // The doors serve as long as their bindings live.
    let Chain {
        dir,
        a_door: _a_door,
        b_door: _b_door,
        a_trace,
        b_trace,
        entry_peers,
    } = chain().await;
    let entry_trace = trace(dir.path(), "entry");
    let calls = calls("t1", entry_peers.clone(), Some(entry_trace.clone()), fast());
    let mut agent = agent("t1", 8, Some(calls.clone()), Some(entry_trace.clone()));
    let outcome = agent.send("Build the parser.", &cancel()).await;

    let Outcome::Completed {
        message: Some(answer),
        ..
    } = outcome
    else {
        panic!("entry did not complete: {outcome:?}")
    };
    // The entry member continued once with a's answer, fenced under member:a …
    let continuation = agent
        .conversation()
        .messages
        .iter()
        .find_map(|m| match m {
            Message::User { text } => fence::parse(text),
            _ => None,
        })
        .expect("an answers message");
    assert_eq!(continuation.len(), 1);
    assert_eq!(continuation[0].member, "a");
    assert_eq!(continuation[0].state, "completed");
    // … and a's answer quotes b's plan, which came back into a's task fenced under member:b.
    assert!(
        continuation[0].body.contains("b answered:"),
        "{}",
        continuation[0].body
    );
    assert!(
        continuation[0]
            .body
            .contains("> Plan for: Build the parser."),
        "{}",
        continuation[0].body
    );
    assert!(
        answer.starts_with("Answers for: Build the parser.\n\na answered:\n"),
        "{answer}"
    );
    assert!(
        answer.contains("> > Plan for: Build the parser."),
        "{answer}"
    );

    // Traces: each side names the other.
    let b_records = records(&b_trace);
    assert!(b_records.iter().any(|r| matches!(&r.event,
        Event::A2aTaskReceived { credential, .. } if credential == "member:a")));
    let a_records = records(&a_trace);
    assert!(a_records.iter().any(|r| matches!(&r.event,
        Event::A2aTaskReceived { credential, .. } if credential == "member:entry")));
    let b_answer = a_records.iter().find_map(|r| match &r.event {
        Event::MemberAnswer {
            member,
            state,
            text,
            member_task_id,
            ..
        } if member == "b" => Some((*state, text.clone(), member_task_id.clone())),
        _ => None,
    });
    let (state, text, b_task) = b_answer.expect("a's trace has b's answer");
    assert_eq!(state, RecordedState::Completed);
    assert!(text.starts_with("Plan for: Build the parser."), "{text}");
    assert!(a_records.iter().any(|r| matches!(&r.event,
        Event::MemberCall { member, member_task_id, .. } if member == "b" && *member_task_id == b_task)));
    let entry_records = records(&entry_trace);
    // Trace context: one trace, and each member's task is a child of the member_call
    // span that asked for it (its traceparent).
    let call_span = |recs: &[Record], to: &str| {
        recs.iter()
            .find_map(|r| match &r.event {
                Event::MemberCall {
                    member, span_id, ..
                } if member == to => *span_id,
                _ => None,
            })
            .expect("a member_call with its span_id")
    };
    let received = |recs: &[Record]| {
        recs.iter()
            .find_map(|r| match &r.event {
                Event::A2aTaskReceived {
                    trace_id: Some(t),
                    span_id: Some(s),
                    parent_span_id,
                    link,
                    ..
                } => Some((*t, *s, *parent_span_id, *link)),
                _ => None,
            })
            .expect("an a2a_task_received with its ids")
    };
    let (a_trace_id, a_span, a_parent, a_link) = received(&a_records);
    let (b_trace_id, b_span, b_parent, _) = received(&b_records);
    assert_eq!(a_trace_id, b_trace_id, "one trace across the members");
    assert_eq!(a_parent, Some(call_span(&entry_records, "a")));
    assert_eq!(b_parent, Some(call_span(&a_records, "b")));
    assert_eq!(a_link, None);
    assert_ne!(a_span, b_span);
    let kinds: Vec<&str> = entry_records.iter().map(|r| r.event.kind()).collect();
    let call_at = kinds
        .iter()
        .position(|k| *k == "member_call")
        .expect("member_call");
    let answer_at = kinds
        .iter()
        .position(|k| *k == "member_answer")
        .expect("member_answer");
    assert!(call_at < answer_at, "{kinds:?}");

    // No token anywhere: traces, conversation, Debug output.
    for t in [&entry_trace, &a_trace, &b_trace] {
        assert_no_token("a trace", &std::fs::read_to_string(t.path()).unwrap());
    }
    assert_no_token("the conversation", &format!("{:?}", agent.conversation()));
    assert_no_token("Debug of Peers", &format!("{entry_peers:?}"));
    assert_no_token("Debug of Calls", &format!("{calls:?}"));
}

/// The class a task is stamped with on every call, as each callee's door reads it
/// (`a2a_task_received.trust`): entry → a → b carries the root's class to the end.
#[rstest::rstest]
#[case::trusted_root(Trust::Trusted)]
#[case::untrusted_root(Trust::Untrusted)]
#[tokio::test]
async fn a_chain_is_only_as_trusted_as_its_root(#[case] root: Trust) {
    let Chain {
        dir: _dir,
        a_door: _a_door,
        b_door: _b_door,
        a_trace,
        b_trace,
        entry_peers,
    } = chain().await;
    let calls = calls_as("t1", entry_peers, None, fast(), root);
    let mut agent = agent("t1", 8, Some(calls), None);
    let outcome = agent.send("Build the parser.", &cancel()).await;
    assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
    for (t, caller) in [(&a_trace, "member:entry"), (&b_trace, "member:a")] {
        let received: Vec<(String, Option<String>)> = records(t)
            .into_iter()
            .filter_map(|r| match r.event {
                Event::A2aTaskReceived {
                    credential, trust, ..
                } => Some((credential, trust)),
                _ => None,
            })
            .collect();
        assert_eq!(
            received,
            [(caller.to_string(), Some(root.as_str().to_string()))]
        );
    }
}

/// A busy member (single task acceptance, already working) is offered the task
/// again until it takes it.
#[tokio::test]
async fn a_busy_member_takes_the_offered_task_once_free() {
    let key = FormationKey::mint().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (coder, work) = door(&key, "coder", Acceptance::Single).await;
    let gate = Arc::new(Semaphore::new(0));
    tokio::spawn(hold_runner(work, gate.clone()));
    operator_task(&coder.url(), "hold: the operator's own task").await;

    let t = trace(dir.path(), "planner");
    let calls = calls(
        "t1",
        peers(&key, "planner", &[("coder", &coder.url())], &["localhost"]),
        Some(t.clone()),
        fast(),
    );
    let tool = CallMember::new(calls.clone()).unwrap();
    let out = mur::agent::Tool::call(&*tool, &tool_call("c1", "coder", "review it")).await;
    assert!(!out.is_error, "{}", out.output);
    assert!(out.output.starts_with("coder is busy"), "{}", out.output);
    // Wait until a repeated offer was refused too, then free the member.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !records(&t)
        .iter()
        .any(|r| matches!(r.event, Event::MemberOffer { offer: 2, .. }))
    {
        assert!(tokio::time::Instant::now() < deadline, "no second offer");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    gate.add_permits(1);

    let answers = calls.wait_all(&cancel()).await;
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].member, "coder");
    assert_eq!(answers[0].state, RecordedState::Completed);
    assert_eq!(answers[0].text, "done: review it");
    let id = answers[0]
        .member_task_id
        .clone()
        .expect("the member took it");
    let rec = records(&t);
    assert!(
        rec.iter().any(|r| matches!(&r.event,
        Event::MemberCall { member_task_id: Some(m), call_id, .. } if *m == id && call_id == "c1"))
    );
    let offers = rec
        .iter()
        .filter(|r| matches!(r.event, Event::MemberOffer { .. }))
        .count();
    assert!(offers >= 2, "{offers}");
    assert!(!calls.owed());
}

/// A member that stays busy past the call's deadline: the answer says so.
#[tokio::test]
async fn a_call_past_its_deadline_fails() {
    let key = FormationKey::mint().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (coder, work) = door(&key, "coder", Acceptance::Single).await;
    let gate = Arc::new(Semaphore::new(0));
    tokio::spawn(hold_runner(work, gate.clone()));
    operator_task(&coder.url(), "hold").await;

    let t = trace(dir.path(), "planner");
    let config = CallConfig {
        deadline: Duration::from_millis(300),
        ..fast()
    };
    let calls = calls(
        "t1",
        peers(&key, "planner", &[("coder", &coder.url())], &["localhost"]),
        Some(t.clone()),
        config,
    );
    let out = calls.call("c1", "coder", "review it").await;
    assert!(out.output.starts_with("coder is busy"), "{}", out.output);
    let answers = calls.wait_all(&cancel()).await;
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].state, RecordedState::Failed);
    assert_eq!(answers[0].member_task_id, None);
    assert!(
        answers[0]
            .text
            .contains("still busy when the call's deadline passed"),
        "{}",
        answers[0].text
    );
    let rec = records(&t);
    let last_offer = rec.iter().rev().find_map(|r| match &r.event {
        Event::MemberOffer { retry_in_ms, .. } => Some(*retry_in_ms),
        _ => None,
    });
    assert_eq!(last_offer, Some(None), "the last offer says none follows");
    assert!(rec.iter().any(|r| matches!(
        &r.event,
        Event::MemberAnswer {
            state: RecordedState::Failed,
            member_task_id: None,
            ..
        }
    )));
    // The member never got the task.
    assert_eq!(coder.store().live(), 1);
}

/// A member presenting a token issued for another member's door is refused at that
/// door with the spec's 403 not_permitted.
#[tokio::test]
async fn a_token_for_another_door_is_refused_with_403() {
    let key = FormationKey::mint().unwrap();
    let (reviewer, work) = door(&key, "reviewer", Acceptance::Single).await;
    tokio::spawn(hold_runner(work, Arc::new(Semaphore::new(0))));
    // planner holds a token for coder only; file it under reviewer's door.
    let token = key.issue("planner", "coder");
    let p = mur::call_member::Peers::new(
        vec![("reviewer".parse().unwrap(), token)],
        vec!["localhost".into()],
    )
    .unwrap();
    p.add_doors([("reviewer".parse().unwrap(), reviewer.url())].into());
    let calls = calls("t1", Arc::new(p), None, fast());
    let out = calls.call("c1", "reviewer", "review it").await;
    assert!(out.is_error);
    assert!(
        out.output
            .starts_with("reviewer's door refused the call: HTTP 403 not_permitted: "),
        "{}",
        out.output
    );
    assert!(out.output.contains("planner"), "{}", out.output);
    assert_no_token("the tool output", &out.output);
    assert_eq!(reviewer.store().live(), 0, "nothing was started");
}

/// A member it may not call and a name that is no member get the same refusal, with
/// no connection made.
#[tokio::test]
async fn members_it_may_not_call_are_refused_before_connecting() {
    let key = FormationKey::mint().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let p = peers(&key, "planner", &[("coder", &url)], &["localhost"]);
    let calls = calls("t1", p.clone(), None, fast());
    let not_callee = calls.call("c1", "reviewer", "x").await;
    let nobody = calls.call("c2", "nobody", "x").await;
    assert!(not_callee.is_error && nobody.is_error);
    assert_eq!(
        not_callee.output,
        "there is no member `reviewer` you may call; you may call: coder"
    );
    assert_eq!(
        nobody.output.replace("nobody", "reviewer"),
        not_callee.output
    );

    // The same through a virtual address.
    let mut headers = HeaderMap::new();
    let a = p
        .route(
            "http://reviewer.formation.invalid/",
            &mut headers,
            Trust::Untrusted,
            None,
        )
        .await;
    let b = p
        .route(
            "http://nobody.formation.invalid/x",
            &mut headers,
            Trust::Untrusted,
            None,
        )
        .await;
    let (a, b) = (a.unwrap_err().to_string(), b.unwrap_err().to_string());
    assert_eq!(a.replace("reviewer", "X"), b.replace("nobody", "X"));
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a connection was opened"
    );
}

/// A virtual address goes to the real door with the runtime's token and stamp, and
/// nothing the component set in their place.
#[tokio::test]
async fn a_virtual_address_is_routed_to_the_real_door() {
    let key = FormationKey::mint().unwrap();
    let p = peers(
        &key,
        "planner",
        &[("coder", "http://127.0.0.1:4711/")],
        &["localhost"],
    );
    assert_eq!(
        p.peers_env().as_deref(),
        Some("coder=http://coder.formation.invalid")
    );
    let mut headers = HeaderMap::new();
    headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer forged"));
    headers.insert("x-murmur-task-trust", HeaderValue::from_static("trusted"));
    headers.insert("x-other", HeaderValue::from_static("kept"));
    let real = p
        .route(
            "http://coder.formation.invalid/a/b?c=d",
            &mut headers,
            Trust::Untrusted,
            None,
        )
        .await
        .unwrap();
    let Routed::Peer { member, url: real } = real else {
        panic!("not routed to a peer: {real:?}")
    };
    assert_eq!(member, "coder");
    assert_eq!(real.as_str(), "http://127.0.0.1:4711/a/b?c=d");
    let auth = headers.get(AUTHORIZATION).unwrap().to_str().unwrap();
    assert_eq!(
        auth,
        format!("Bearer {}", key.issue("planner", "coder").expose())
    );
    assert!(headers.get(AUTHORIZATION).unwrap().is_sensitive());
    assert_eq!(headers["x-murmur-task-origin"], "peer");
    assert_eq!(headers["x-murmur-task-trust"], "untrusted");
    assert_eq!(headers["x-other"], "kept");
    // Other hosts are not the runtime's to route.
    assert_eq!(
        p.route(
            "http://example.com/",
            &mut HeaderMap::new(),
            Trust::Trusted,
            None
        )
        .await
        .unwrap(),
        Routed::Direct
    );
    // A member whose allow list does not reach localhost cannot call.
    p.set_allow(vec!["api.example.com".into()]);
    let err = p
        .route(
            "http://coder.formation.invalid/",
            &mut HeaderMap::new(),
            Trust::Trusted,
            None,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("W-RUN-008"), "{err}");
    assert_no_token("the error", &err.to_string());
    assert_no_token("Debug of Peers", &format!("{p:?}"));
}

/// W-RUN-008 at launch, and every call then fails before connecting.
#[tokio::test]
async fn a_member_without_localhost_is_warned_and_its_calls_fail() {
    let key = FormationKey::mint().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let p = peers(&key, "planner", &[("coder", &url)], &["api.example.com"]);
    let w = p.network_warning("planner").expect("W-RUN-008");
    assert_eq!(w.code.to_string(), "W-RUN-008");
    let out = calls("t1", p, None, fast()).call("c1", "coder", "x").await;
    assert!(out.is_error);
    assert!(
        out.output
            .contains("capabilities.network.allow does not reach coder's door"),
        "{}",
        out.output
    );
    assert!(matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock));
}

/// A door URL that has not arrived is waited for, and a call made meanwhile goes out
/// once it does.
#[tokio::test]
async fn a_door_url_arriving_late_is_waited_for() {
    let key = FormationKey::mint().unwrap();
    let (coder, work) = door(&key, "coder", Acceptance::Single).await;
    tokio::spawn(hold_runner(work, Arc::new(Semaphore::new(0))));
    let token = key.issue("planner", "coder");
    let p = Arc::new(
        mur::call_member::Peers::new(
            vec![("coder".parse().unwrap(), token)],
            vec!["localhost".into()],
        )
        .unwrap(),
    );
    let calls = calls("t1", p.clone(), None, fast());
    let pending = tokio::spawn({
        let calls = calls.clone();
        async move { calls.call("c1", "coder", "write it").await }
    });
    p.add_doors([("coder".parse().unwrap(), coder.url())].into());
    let out = pending.await.unwrap();
    assert!(!out.is_error, "{}", out.output);
    let answers = calls.wait_all(&cancel()).await;
    assert_eq!(answers[0].text, "done: write it");

    // Never arriving: a clear error after the wait.
    let token = key.issue("planner", "coder");
    let p = mur::call_member::Peers::new(
        vec![("coder".parse().unwrap(), token)],
        vec!["localhost".into()],
    )
    .unwrap()
    .with_door_wait(Duration::from_millis(50));
    let out = calls_for(p).call("c1", "coder", "x").await;
    assert_eq!(
        out.output,
        "coder's door address did not arrive within 0.05s; the call was not made"
    );
}

fn calls_for(p: mur::call_member::Peers) -> Arc<mur::call_member::Calls> {
    calls("t1", Arc::new(p), None, fast())
}

/// Canceling the calling task cancels the tasks its calls started.
#[tokio::test]
async fn canceling_the_calling_task_cancels_its_live_delegations() {
    let key = FormationKey::mint().unwrap();
    let (coder, work) = door(&key, "coder", Acceptance::Single).await;
    tokio::spawn(hold_runner(work, Arc::new(Semaphore::new(0))));
    let calls = calls(
        "t1",
        peers(&key, "planner", &[("coder", &coder.url())], &["localhost"]),
        None,
        fast(),
    );
    let out = calls.call("c1", "coder", "hold it").await;
    assert!(
        out.output.starts_with("coder holds the task"),
        "{}",
        out.output
    );
    calls.cancel_live().await;
    let tasks = coder.store();
    assert_eq!(tasks.live(), 0);
}

/// With no turn left the task does not wait for its answers.
#[tokio::test]
async fn a_task_with_no_turn_left_does_not_wait() {
    let key = FormationKey::mint().unwrap();
    let (coder, work) = door(&key, "coder", Acceptance::Single).await;
    let gate = Arc::new(Semaphore::new(0));
    tokio::spawn(hold_runner(work, gate.clone()));
    let calls = calls(
        "t1",
        peers(&key, "planner", &[("coder", &coder.url())], &["localhost"]),
        None,
        fast(),
    );
    // Turn 1 calls coder (which holds the task until released), turn 2 answers: no turn left.
    let mut agent = agent("t1", 2, Some(calls.clone()), None);
    let outcome = agent.send("hold and build", &cancel()).await;
    let Outcome::Completed {
        message: Some(text),
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert!(text.contains("coder holds the task"), "{text}");
    assert!(calls.owed(), "the answer was never taken");
    gate.add_permits(1);
}

/// A member that takes an offered task just after the calling task ended gets
/// CancelTask for it. The door here is a real HTTP server on 127.0.0.1 that answers
/// the first offer busy and holds the second on the wire until the test lets it go,
/// so "just after" is exact rather than a race.
#[tokio::test]
async fn a_task_taken_just_after_the_caller_ended_is_canceled() {
    use axum::Router;
    use axum::extract::State;
    use axum::http::HeaderMap as Headers;
    use axum::routing::post;
    use serde_json::Value;
    use tokio::sync::{Notify, watch};

    #[derive(Clone)]
    struct Door {
        sends: Arc<std::sync::atomic::AtomicUsize>,
        second_on_wire: Arc<Notify>,
        release: Arc<Notify>,
        canceled: watch::Sender<Vec<(String, String)>>,
    }
    async fn rpc(State(d): State<Door>, headers: Headers, body: String) -> String {
        let req: Value = serde_json::from_str(&body).unwrap();
        let auth = headers["authorization"].to_str().unwrap().to_string();
        match req["method"].as_str().unwrap() {
            "SendMessage" => {
                let n = d.sends.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n == 0 {
                    return json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32050, "message": "Member busy"}}).to_string();
                }
                d.second_on_wire.notify_one();
                d.release.notified().await;
                json!({"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "late-1", "contextId": "c",
                    "status": {"state": "TASK_STATE_SUBMITTED"}}}})
                .to_string()
            }
            "CancelTask" => {
                let id = req["params"]["id"].as_str().unwrap().to_string();
                d.canceled.send_modify(|v| v.push((id, auth)));
                json!({"jsonrpc": "2.0", "id": 1, "result": {"id": "late-1", "contextId": "c",
                    "status": {"state": "TASK_STATE_CANCELED"}}})
                .to_string()
            }
            other => panic!("unexpected {other}"),
        }
    }
    let state = Door {
        sends: Default::default(),
        second_on_wire: Arc::new(Notify::new()),
        release: Arc::new(Notify::new()),
        canceled: watch::Sender::new(Vec::new()),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/", post(rpc))
        .with_state(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let key = FormationKey::mint().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path(), "planner");
    let calls = calls(
        "t1",
        peers(&key, "planner", &[("coder", &url)], &["localhost"]),
        Some(t.clone()),
        fast(),
    );
    let out = calls.call("c1", "coder", "review it").await;
    assert!(out.output.starts_with("coder is busy"), "{}", out.output);
    state.second_on_wire.notified().await;
    calls.end(); // the calling task ends while the second offer is on the wire
    state.release.notify_one();
    let mut rx = state.canceled.subscribe();
    let canceled = tokio::time::timeout(Duration::from_secs(20), rx.wait_for(|v| !v.is_empty()))
        .await
        .expect("CancelTask sent")
        .unwrap()
        .clone();
    assert_eq!(canceled[0].0, "late-1");
    assert_eq!(
        canceled[0].1,
        format!("Bearer {}", key.issue("planner", "coder").expose())
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let rec = records(&t);
        if let Some(text) = rec.iter().find_map(|r| match &r.event {
            Event::MemberAnswer {
                state: RecordedState::Canceled,
                member_task_id: Some(id),
                text,
                ..
            } if id == "late-1" => Some(text.clone()),
            _ => None,
        }) {
            assert!(text.contains("just after the calling task ended"), "{text}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no member_answer");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_no_token("the trace", &std::fs::read_to_string(t.path()).unwrap());
}

/// call-member exists exactly when the member may call someone, and its description
/// names its callees and no other member.
#[tokio::test]
async fn the_tool_exists_only_with_callees_and_names_only_them() {
    let key = FormationKey::mint().unwrap();
    let none = mur::call_member::Peers::new(Vec::new(), vec!["localhost".into()]).unwrap();
    assert!(CallMember::new(calls("t1", Arc::new(none), None, fast())).is_none());
    let p = peers(
        &key,
        "planner",
        &[
            ("coder", "http://127.0.0.1:1/"),
            ("tester", "http://127.0.0.1:2/"),
        ],
        &["localhost"],
    );
    let tool = CallMember::new(calls("t1", p, None, fast())).expect("the tool");
    let d = mur::agent::Tool::description(&*tool);
    assert!(d.ends_with("Members you may call: coder, tester."), "{d}");
    assert!(
        !d.contains("reviewer") && !d.contains("planner") && !d.contains("127.0.0.1"),
        "{d}"
    );
    assert_eq!(mur::agent::Tool::name(&*tool), "call-member");
}

/// Canceling the calling task while it waits at the end of its turn ends it canceled
/// and cancels the task its call started at the callee's door.
#[tokio::test]
async fn a_task_canceled_while_it_waits_cancels_its_delegation() {
    let key = FormationKey::mint().unwrap();
    let (coder, work) = door(&key, "coder", Acceptance::Single).await;
    tokio::spawn(hold_runner(work, Arc::new(Semaphore::new(0))));
    let calls = calls(
        "t1",
        peers(&key, "planner", &[("coder", &coder.url())], &["localhost"]),
        None,
        fast(),
    );
    let stop = cancel();
    let run = tokio::spawn({
        let (calls, stop) = (calls.clone(), stop.clone());
        async move {
            agent("t1", 8, Some(calls), None)
                .send("hold the line", &stop)
                .await
        }
    });
    // Wait until coder holds the task and the caller's turn has ended (it is waiting).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while coder.store().live() == 0 || !calls.owed() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the call never reached coder"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.cancel();
    let outcome = run.await.unwrap();
    assert_eq!(outcome, Outcome::Canceled);
    assert_eq!(coder.store().live(), 0, "the delegation was canceled");
}
