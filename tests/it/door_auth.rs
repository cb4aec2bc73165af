//! Auth at a real door: one case per row of the spec's "What a door answers" table
//! and of the formation token's scope table, then who sees which task.

use crate::support::door::*;
use reqwest::StatusCode;
use rstest::rstest;
use serde_json::{Value, json};

/// What the request presents, one per row of the door table (the invalid-token row
/// is split into each way a token fails).
#[derive(Debug, Clone, Copy)]
enum Presented {
    Nothing,
    Forged,
    AlteredPayload,
    AlteredSignature,
    OtherFormation,
    FormationTokenAtDoorInNoFormation,
    UnknownBearer,
    ForAnotherMembersDoor,
    OutsideScopes,
    WithinScopes,
}

fn edit_piece(token: &str, piece: usize, f: impl FnOnce(&mut Vec<u8>)) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut pieces: Vec<String> = token.split('.').map(String::from).collect();
    let mut bytes = b64.decode(&pieces[piece]).unwrap();
    f(&mut bytes);
    pieces[piece] = b64.encode(bytes);
    pieces.join(".")
}

#[rstest]
#[case::no_authorization_header(Presented::Nothing, 401, "unauthenticated")]
#[case::forged(Presented::Forged, 401, "invalid_token")]
#[case::altered_payload(Presented::AlteredPayload, 401, "invalid_token")]
#[case::altered_signature(Presented::AlteredSignature, 401, "invalid_token")]
#[case::another_formations(Presented::OtherFormation, 401, "invalid_token")]
#[case::formation_token_at_a_door_in_no_formation(
    Presented::FormationTokenAtDoorInNoFormation,
    401,
    "invalid_token"
)]
#[case::unknown_bearer(Presented::UnknownBearer, 401, "invalid_token")]
#[case::valid_token_for_another_members_door(
    Presented::ForAnotherMembersDoor,
    403,
    "not_permitted"
)]
#[case::valid_token_outside_its_scopes(Presented::OutsideScopes, 403, "insufficient_scope")]
#[case::valid_token_within_its_scopes(Presented::WithinScopes, 200, "")]
#[tokio::test]
async fn door_table(#[case] presented: Presented, #[case] status: u16, #[case] error: &str) {
    let setup = Setup {
        formation: !matches!(presented, Presented::FormationTokenAtDoorInNoFormation),
        ..Setup::default()
    };
    let f = start(setup).await;
    let good = f.peer("planner");
    let token = match presented {
        Presented::Nothing => None,
        Presented::Forged => {
            // Right shape, signed by a key that is not the formation's.
            let other = mur::credential::FormationKey::mint().unwrap();
            let t = other.issue("planner", ME).expose().to_string();
            let ours = f.key.formation_id().to_string();
            Some(edit_piece(&t, 1, |p| {
                let s = String::from_utf8(p.clone()).unwrap();
                let theirs = serde_json::from_str::<Value>(&s).unwrap()["formation"]
                    .as_str()
                    .unwrap()
                    .to_string();
                *p = s.replace(&theirs, &ours).into_bytes();
            }))
        }
        Presented::AlteredPayload => Some(edit_piece(&good, 1, |p| {
            *p = String::from_utf8(p.clone())
                .unwrap()
                .replace("planner", "plannex")
                .into_bytes()
        })),
        Presented::AlteredSignature => Some(edit_piece(&good, 2, |s| s[0] ^= 0x40)),
        Presented::OtherFormation => {
            let other = mur::credential::FormationKey::mint().unwrap();
            Some(other.issue("planner", ME).expose().to_string())
        }
        Presented::FormationTokenAtDoorInNoFormation => Some(good.clone()),
        Presented::UnknownBearer => Some("some-token-nobody-declared".to_string()),
        Presented::ForAnotherMembersDoor => Some(f.token("planner", "reviewer")),
        Presented::OutsideScopes | Presented::WithinScopes => Some(good.clone()),
    };
    let method = match presented {
        Presented::OutsideScopes => "SendStreamingMessage",
        _ => "SendMessage",
    };
    let (got, body) = f.call(token.as_deref(), method, message("hello")).await;
    assert_eq!(got.as_u16(), status, "{body}");
    if status == 200 {
        let task = &body["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
        assert_eq!(task["artifacts"][0]["description"], "member:planner");
        return;
    }
    assert_eq!(body["error"], error, "{body}");
    let text = body["message"].as_str().unwrap();
    match presented {
        Presented::ForAnotherMembersDoor => {
            assert!(text.contains("planner"), "{text}");
            assert!(!text.contains("reviewer") && !text.contains(ME), "{text}");
        }
        Presented::OutsideScopes => assert!(text.contains("member:planner"), "{text}"),
        _ => {}
    }
    // Nothing was let in.
    let list = f.ok(Some(OPERATOR), "ListTasks", json!({})).await;
    assert_eq!(list["totalSize"], 0);
}

/// Every token that does not verify gets byte-for-byte the same answer.
#[tokio::test]
async fn every_invalid_token_gets_one_identical_body() {
    let f = start(Setup::default()).await;
    let none = start(Setup {
        formation: false,
        ..Setup::default()
    })
    .await;
    let other = mur::credential::FormationKey::mint().unwrap();
    let good = f.peer("planner");
    let cases = [
        (&f, other.issue("planner", ME).expose().to_string()),
        (&f, format!("{good}x")),
        (&f, "unknown".to_string()),
        (&f, "mft1.e30.AAAA".to_string()),
        (&none, good.clone()),
    ];
    let mut bodies = Vec::new();
    for (door, token) in cases {
        let resp = door
            .client
            .post(&door.url)
            .bearer_auth(&token)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        let challenge = resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_string();
        bodies.push((challenge, resp.bytes().await.unwrap()));
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "{bodies:?}");
}

#[derive(Debug, Clone, Copy)]
enum Scope {
    SendMessage,
    GetTask,
    CancelTask,
    ListTasks,
    SubscribeToTask,
}

/// One case per row of the scope table: the caller reaches its own tasks, and any
/// other task id is -32001 with nothing changed.
#[rstest]
#[case::send_message(Scope::SendMessage)]
#[case::get_task(Scope::GetTask)]
#[case::cancel_task(Scope::CancelTask)]
#[case::list_tasks(Scope::ListTasks)]
#[case::subscribe_to_task(Scope::SubscribeToTask)]
#[tokio::test]
async fn scope_table(#[case] scope: Scope) {
    let f = start(Setup::default()).await;
    let planner = f.peer("planner");
    let reviewer = f.peer("reviewer");
    let mine = f.start_task(Some(&planner), "hold mine").await;
    let theirs = f.start_task(Some(&reviewer), "hold theirs").await;
    let me = Some(planner.as_str());
    match scope {
        Scope::SendMessage => {
            // Queued behind the two held tasks, started by this caller.
            let id = f.start_task(me, "more").await;
            let t = f.ok(me, "GetTask", json!({"id": id})).await;
            assert_eq!(t["status"]["state"], "TASK_STATE_SUBMITTED");
            assert_eq!(t["history"][0]["parts"][0]["text"], "more");
        }
        Scope::GetTask => {
            let t = f.ok(me, "GetTask", json!({"id": mine})).await;
            assert_eq!(t["id"], mine.as_str());
            assert_eq!(
                f.err_code(me, "GetTask", json!({"id": theirs})).await,
                -32001
            );
        }
        Scope::CancelTask => {
            assert_eq!(
                f.err_code(me, "CancelTask", json!({"id": theirs})).await,
                -32001
            );
            let t = f.ok(Some(OPERATOR), "GetTask", json!({"id": theirs})).await;
            assert_ne!(
                t["status"]["state"], "TASK_STATE_CANCELED",
                "nothing is cancelled"
            );
            let t = f.ok(me, "CancelTask", json!({"id": mine})).await;
            assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED");
        }
        Scope::ListTasks => {
            let l = f.ok(me, "ListTasks", json!({})).await;
            let ids: Vec<&Value> = l["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| &t["id"])
                .collect();
            assert_eq!(ids, [&json!(mine)]);
            assert_eq!(l["totalSize"], 1);
        }
        Scope::SubscribeToTask => {
            assert_eq!(
                f.err_code(me, "SubscribeToTask", json!({"id": theirs}))
                    .await,
                -32001
            );
            let stream = f
                .open_stream(me, "SubscribeToTask", json!({"id": mine}))
                .await;
            f.gate.add_permits(1); // let `mine` (first in line) finish
            let events = read_stream(stream).await;
            assert_eq!(events[0]["result"]["task"]["id"], mine.as_str());
            let last = &events.last().unwrap()["result"]["statusUpdate"]["status"]["state"];
            assert_eq!(last, "TASK_STATE_COMPLETED");
        }
    }
    f.gate.add_permits(8);
}

/// Methods outside the five scopes are refused to a formation token, each naming
/// the credential.
#[rstest]
#[case::send_streaming_message("SendStreamingMessage")]
#[case::watch_session("murmur.WatchSession")]
#[case::stop_session("murmur.StopSession")]
#[case::resources_files("resources/files")]
#[case::unknown_method("NoSuchMethod")]
#[tokio::test]
async fn formation_token_outside_scopes(#[case] method: &str) {
    let f = start(Setup::default()).await;
    let (status, body) = f.call(Some(&f.peer("planner")), method, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"], "insufficient_scope");
    assert!(body["message"].as_str().unwrap().contains("member:planner"));
    assert_eq!(f.stops.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn peer_task_at_a_member_that_does_not_accept_them() {
    let f = start(Setup {
        accept_peer_tasks: false,
        ..Setup::default()
    })
    .await;
    let (status, body) = f
        .call(Some(&f.peer("planner")), "SendMessage", message("hi"))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"], "peer_not_accepted");
    assert!(body["message"].as_str().unwrap().contains("member:planner"));
    // The operator and declared credentials still start tasks there.
    f.ok(Some(OPERATOR), "SendMessage", message("hi")).await;
    f.ok(Some(DECLARED), "SendMessage", message("hi")).await;
}

/// The operator token reaches every method.
#[rstest]
#[case::send_message("SendMessage")]
#[case::send_streaming_message("SendStreamingMessage")]
#[case::list_tasks("ListTasks")]
#[case::watch_session("murmur.WatchSession")]
#[case::stop_session("murmur.StopSession")]
#[case::resources_files("resources/files")]
#[tokio::test]
async fn operator_reaches_everything(#[case] method: &str) {
    let f = start(Setup::default()).await;
    let params = if method.starts_with("Send") {
        message("hi")
    } else {
        json!({})
    };
    let resp = f
        .client
        .post(&f.url)
        .bearer_auth(OPERATOR)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let ctype = resp.headers()["content-type"].to_str().unwrap().to_string();
    if ctype.starts_with("application/json") {
        let body: Value = resp.json().await.unwrap();
        assert!(body.get("error").is_none(), "{body}");
    } else {
        assert!(ctype.starts_with("text/event-stream"));
    }
}

#[tokio::test]
async fn declared_credential_is_served_as_env_name_and_not_for_operator_methods() {
    let f = start(Setup::default()).await;
    let r = f.ok(Some(DECLARED), "SendMessage", message("hi")).await;
    assert_eq!(r["task"]["artifacts"][0]["description"], "env:CLIENT_TOKEN");
    let (status, body) = f.call(Some(DECLARED), "resources/files", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"], "insufficient_scope");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("env:CLIENT_TOKEN")
    );
}

#[tokio::test]
async fn public_door() {
    let f = start(Setup {
        public: true,
        formation: false,
        ..Setup::default()
    })
    .await;
    // A2A methods need nothing.
    let r = f.ok(None, "SendMessage", message("hi")).await;
    assert_eq!(r["task"]["artifacts"][0]["description"], "public");
    // Operator methods still need the operator token.
    let (status, body) = f.call(None, "murmur.StopSession", json!({})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthenticated"))
    );
    assert_eq!(f.stops.load(std::sync::atomic::Ordering::SeqCst), 0);
    f.ok(Some(OPERATOR), "murmur.StopSession", json!({})).await;
    assert_eq!(f.stops.load(std::sync::atomic::Ordering::SeqCst), 1);
    // A presented token that is not valid is refused, not ignored.
    let (status, body) = f.call(Some("wrong"), "GetTask", json!({"id": "x"})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_token"))
    );
    // The card declares no security scheme.
    let card: Value = f
        .client
        .get(format!("{}.well-known/agent-card.json", f.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(card.get("securitySchemes").is_none());
}

/// Who sees a task: only the credential that started it, and the operator.
#[tokio::test]
async fn callers_see_only_their_own_tasks() {
    let f = start(Setup::default()).await;
    let planner = f.peer("planner");
    let reviewer = f.peer("reviewer");
    let a = f.ok(Some(&planner), "SendMessage", message("a")).await["task"]["id"].clone();
    let b = f.ok(Some(&reviewer), "SendMessage", message("b")).await["task"]["id"].clone();
    let c = f.ok(Some(DECLARED), "SendMessage", message("c")).await["task"]["id"].clone();
    for (token, own, others) in [
        (planner.as_str(), &a, [&b, &c]),
        (reviewer.as_str(), &b, [&a, &c]),
        (DECLARED, &c, [&a, &b]),
    ] {
        let l = f.ok(Some(token), "ListTasks", json!({})).await;
        assert_eq!(l["tasks"].as_array().unwrap().len(), 1);
        assert_eq!(&l["tasks"][0]["id"], own);
        for other in others {
            assert_eq!(
                f.err_code(Some(token), "GetTask", json!({"id": other}))
                    .await,
                -32001
            );
        }
    }
    let all = f.ok(Some(OPERATOR), "ListTasks", json!({})).await;
    assert_eq!(all["totalSize"], 3);
    for id in [&a, &b, &c] {
        f.ok(Some(OPERATOR), "GetTask", json!({"id": id})).await;
    }
}
