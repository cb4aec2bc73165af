//! What a real door hands the session besides the task: the trust class of each task
//! (the `x-murmur-task-trust` stamp counts only on a formation token) and each busy
//! refusal (`DoorConfig::on_busy`), over real HTTP on 127.0.0.1.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mur::credential::FormationKey;
use mur::door::trust::{TRUST_HEADER, Trust};
use mur::door::{Acceptance, BusyRefusal, DeclaredToken, Door, DoorConfig, FormationMember};
use mur::trace::context::{SpanContext, TRACEPARENT, TaskSpan};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const OPERATOR: &str = "op-0123456789abcdef";
const DECLARED: &str = "declared-secret-value";
const ME: &str = "coder";

struct Fixture {
    _door: Door,
    url: String,
    key: FormationKey,
    /// (who, trust) of each task the door handed on, in order.
    seen: mpsc::UnboundedReceiver<(String, Trust)>,
    /// The span of each task, in the same order.
    spans: mpsc::UnboundedReceiver<TaskSpan>,
    refusals: Arc<Mutex<Vec<BusyRefusal>>>,
    /// Ends the task the runner holds (single acceptance: the member is busy till then).
    release: mpsc::UnboundedSender<()>,
}

async fn start(public: bool) -> Fixture {
    let key = FormationKey::mint().unwrap();
    let mut config = DoorConfig::new("ses_trust", OPERATOR);
    config.public = public;
    config.accept_peer_tasks = true;
    config.bearer_tokens = vec![DeclaredToken {
        env_name: "CLIENT_TOKEN".into(),
        token: DECLARED.into(),
    }];
    config.formation = Some(FormationMember {
        verify_key: key.verify_key(),
        member: ME.parse().unwrap(),
    });
    config.acceptance = Acceptance::Single;
    let refusals = Arc::new(Mutex::new(Vec::new()));
    let sink = refusals.clone();
    config.on_busy = Some(Arc::new(move |r: &BusyRefusal| {
        sink.lock().unwrap().push(r.clone())
    }));
    let (door, mut work) = Door::start(config).await.unwrap();
    let (seen_tx, seen) = mpsc::unbounded_channel();
    let (spans_tx, spans) = mpsc::unbounded_channel();
    let (release, mut released) = mpsc::unbounded_channel::<()>();
    tokio::spawn(async move {
        while let Some(w) = work.next().await {
            let _ = seen_tx.send((w.caller.to_string(), w.trust));
            let _ = spans_tx.send(w.span);
            let _ = w.handle.working();
            if w.message.text_content() == "hold" {
                released.recv().await;
            }
            let _ = w.handle.complete("done");
        }
    });
    Fixture {
        url: door.url(),
        _door: door,
        key,
        seen,
        spans,
        refusals,
        release,
    }
}

impl Fixture {
    /// SendMessage with `token` and the given `x-murmur-task-trust` values; the body.
    async fn send(&self, token: Option<&str>, stamps: &[&str], text: &str) -> Value {
        self.send_with(token, stamps, &[], text).await
    }

    /// [`Fixture::send`] with these `traceparent` headers too.
    async fn send_with(
        &self,
        token: Option<&str>,
        stamps: &[&str],
        traceparents: &[&str],
        text: &str,
    ) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]},
            "configuration": {"returnImmediately": true}
        }});
        let mut req = mur::door::client()
            .build()
            .unwrap()
            .post(&self.url)
            .json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        for s in stamps {
            req = req.header(TRUST_HEADER, *s);
        }
        for t in traceparents {
            req = req.header(TRACEPARENT, *t);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    }

    async fn next_seen(&mut self) -> (String, Trust) {
        tokio::time::timeout(Duration::from_secs(10), self.seen.recv())
            .await
            .expect("the door hands the task on")
            .unwrap()
    }

    fn peer(&self, from: &str) -> String {
        self.key.issue(from, ME).expose().to_string()
    }
}

#[tokio::test]
async fn a_stamp_counts_only_on_a_formation_token() {
    let mut f = start(false).await;
    let planner = f.peer("planner");
    let cases: [(Option<&str>, &[&str], &str, Trust); 7] = [
        (
            Some(&planner),
            &["trusted"],
            "member:planner",
            Trust::Trusted,
        ),
        (
            Some(&planner),
            &["untrusted"],
            "member:planner",
            Trust::Untrusted,
        ),
        // No stamp, a garbage one, two of them: no class claimed, so untrusted.
        (Some(&planner), &[], "member:planner", Trust::Untrusted),
        (
            Some(&planner),
            &["TRUSTED"],
            "member:planner",
            Trust::Untrusted,
        ),
        (
            Some(&planner),
            &["trusted", "trusted"],
            "member:planner",
            Trust::Untrusted,
        ),
        // The operator and a declared credential are trusted whatever they stamp.
        (Some(OPERATOR), &["untrusted"], "operator", Trust::Trusted),
        (
            Some(DECLARED),
            &["untrusted"],
            "env:CLIENT_TOKEN",
            Trust::Trusted,
        ),
    ];
    for (token, stamps, who, trust) in cases {
        let body = f.send(token, stamps, "quick").await;
        assert!(body.get("error").is_none(), "{body}");
        assert_eq!(f.next_seen().await, (who.to_string(), trust), "{stamps:?}");
    }
}

/// Only the operator and a member join the caller's trace; a public caller or a
/// declared credential cannot place a task in someone else's trace (a link instead).
#[tokio::test]
async fn a_traceparent_is_joined_only_on_an_operator_or_formation_token() {
    let mut f = start(true).await;
    let planner = f.peer("planner");
    let caller = SpanContext::root();
    let tp = caller.traceparent();
    for (token, joins) in [
        (Some(planner.as_str()), true),
        (Some(OPERATOR), true),
        (Some(DECLARED), false),
        (None, false),
    ] {
        let body = f.send_with(token, &[], &[&tp], "quick").await;
        assert!(body.get("error").is_none(), "{body}");
        let who = f.next_seen().await.0;
        let span = f.spans.recv().await.unwrap();
        if joins {
            assert_eq!(span.span.trace_id, caller.trace_id, "{who}");
            assert_eq!(
                (span.parent, span.link),
                (Some(caller.span_id), None),
                "{who}"
            );
        } else {
            assert_ne!(span.span.trace_id, caller.trace_id, "{who}");
            assert_eq!((span.parent, span.link), (None, Some(caller)), "{who}");
        }
    }
    // Malformed, or two of them: no context at all, a trace of its own.
    let two = [tp.as_str(), tp.as_str()];
    let bad = ["00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"];
    for tps in [&two[..], &bad[..]] {
        f.send_with(Some(&planner), &[], tps, "quick").await;
        f.next_seen().await;
        let span = f.spans.recv().await.unwrap();
        assert_eq!((span.parent, span.link), (None, None), "{tps:?}");
    }
}

#[tokio::test]
async fn a_public_caller_cannot_claim_trust() {
    let mut f = start(true).await;
    let body = f.send(None, &["trusted"], "quick").await;
    assert!(body.get("error").is_none(), "{body}");
    assert_eq!(f.next_seen().await, ("public".into(), Trust::Untrusted));
}

#[tokio::test]
async fn busy_refusals_are_reported_except_a_public_callers() {
    let mut f = start(true).await;
    let planner = f.peer("planner");
    f.send(Some(OPERATOR), &[], "hold").await;
    f.next_seen().await;
    // The member holds its one task: each of these is -32050.
    for token in [Some(planner.as_str()), None, Some(DECLARED)] {
        let body = f.send(token, &[], "more").await;
        assert_eq!(body["error"]["code"], -32050, "{body}");
    }
    let refused: Vec<(String, u32)> = f
        .refusals
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.caller.to_string(), r.holds))
        .collect();
    assert_eq!(
        refused,
        [("member:planner".into(), 1), ("env:CLIENT_TOKEN".into(), 1)]
    );
    // Once free, the member takes the next offer.
    f.release.send(()).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let body = f.send(Some(&planner), &[], "again").await;
        if body.get("error").is_none() {
            break;
        }
        assert_eq!(body["error"]["code"], -32050, "{body}");
        assert!(tokio::time::Instant::now() < deadline, "never free");
        tokio::task::yield_now().await;
    }
    assert_eq!(f.next_seen().await.0, "member:planner");
}
