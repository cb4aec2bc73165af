//! The door's A2A behaviour over a real socket: the Agent Card, blocking and
//! non-blocking SendMessage, stream order, cancel, paging, acceptance, input-required,
//! and the operator's methods.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::door::*;
use mur::door::Acceptance;
use serde_json::{Value, json};

fn op() -> Option<&'static str> {
    Some(OPERATOR)
}

#[tokio::test]
async fn agent_card_names_the_session_in_its_extension() {
    let f = start(Setup::default()).await;
    let resp = f
        .client
        .get(format!("{}.well-known/agent-card.json", f.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "the card needs no credential");
    let card: Value = resp.json().await.unwrap();
    let ext = &card["capabilities"]["extensions"][0];
    assert_eq!(ext["uri"], "https://murmur.dev/a2a/extensions/session/v1");
    assert_eq!(ext["params"]["sessionId"], SESSION);
    assert_eq!(card["supportedInterfaces"][0]["url"], f.url.as_str());
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(
        card["securityRequirements"][0]["schemes"]["bearer"]["list"],
        json!([])
    );
}

#[tokio::test]
async fn send_message_blocks_until_the_task_ends() {
    let f = start(Setup::default()).await;
    let r = f.ok(op(), "SendMessage", message("hello")).await;
    let task = &r["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "echo: hello");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "echo: hello");
    assert_eq!(task["history"][0]["role"], "ROLE_USER");
    assert!(task["status"]["timestamp"].as_str().unwrap().ends_with('Z'));
    // historyLength 0 omits the history.
    let t = f
        .ok(
            op(),
            "GetTask",
            json!({"id": task["id"], "historyLength": 0}),
        )
        .await;
    assert!(t.get("history").is_none());
    let t = f
        .ok(
            op(),
            "GetTask",
            json!({"id": task["id"], "historyLength": 1}),
        )
        .await;
    assert_eq!(t["history"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn return_immediately_answers_before_the_task_ends() {
    let f = start(Setup::default()).await;
    let mut params = message("hold");
    params["configuration"] = json!({"returnImmediately": true});
    let r = f.ok(op(), "SendMessage", params).await;
    let state = r["task"]["status"]["state"].as_str().unwrap().to_string();
    assert!(
        state == "TASK_STATE_SUBMITTED" || state == "TASK_STATE_WORKING",
        "{state}"
    );
    f.gate.add_permits(1);
    f.wait_state(r["task"]["id"].as_str().unwrap(), "TASK_STATE_COMPLETED")
        .await;
}

#[tokio::test]
async fn blocking_send_returns_at_input_required_and_a_reply_continues_the_task() {
    let f = start(Setup::default()).await;
    let r = f.ok(op(), "SendMessage", message("ask:which file?")).await;
    let task = &r["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "which file?");
    let mut reply = message("main.rs");
    reply["message"]["taskId"] = task["id"].clone();
    // Someone else's reply cannot reach it.
    let code = f
        .err_code(Some(DECLARED), "SendMessage", reply.clone())
        .await;
    assert_eq!(code, -32001);
    let r = f.ok(op(), "SendMessage", reply.clone()).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        r["task"]["status"]["message"]["parts"][0]["text"],
        "echo: main.rs"
    );
    // A message to an ended task is unsupported.
    assert_eq!(f.err_code(op(), "SendMessage", reply).await, -32004);
}

#[tokio::test]
async fn streaming_sends_the_task_first_then_updates_and_ends_at_terminal() {
    let f = start(Setup::default()).await;
    let events = f.stream(op(), "SendStreamingMessage", message("hi")).await;
    assert!(events.iter().all(|e| e["jsonrpc"] == "2.0" && e["id"] == 7));
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| {
            let r = e["result"].as_object().unwrap();
            assert_eq!(r.len(), 1, "exactly one field per event: {e}");
            r.keys().next().unwrap().as_str()
        })
        .collect();
    assert_eq!(
        kinds,
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    );
    assert_eq!(
        events[0]["result"]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    assert_eq!(
        events[1]["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert_eq!(events[2]["result"]["artifactUpdate"]["lastChunk"], true);
    assert_eq!(
        events[3]["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn subscribe_follows_a_live_task_and_refuses_an_ended_one() {
    let f = start(Setup::default()).await;
    let id = f.start_task(op(), "hold").await;
    f.wait_state(&id, "TASK_STATE_WORKING").await;
    // Two subscribers, both attached before the task is let go, see the same events.
    let first = f
        .open_stream(op(), "SubscribeToTask", json!({"id": id}))
        .await;
    let second = f
        .open_stream(op(), "SubscribeToTask", json!({"id": id}))
        .await;
    f.gate.add_permits(1);
    let (first, second) = tokio::join!(read_stream(first), read_stream(second));
    assert_eq!(first, second);
    let kinds: Vec<String> = first
        .iter()
        .map(|e| {
            e["result"]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .clone()
        })
        .collect();
    assert_eq!(kinds, ["task", "artifactUpdate", "statusUpdate"]);
    assert_eq!(
        first[0]["result"]["task"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    let last = &first[2]["result"]["statusUpdate"]["status"]["state"];
    assert_eq!(last, "TASK_STATE_COMPLETED");
    assert_eq!(
        f.err_code(op(), "SubscribeToTask", json!({"id": id})).await,
        -32004
    );
    assert_eq!(
        f.err_code(op(), "SubscribeToTask", json!({"id": "tsk_none"}))
            .await,
        -32001
    );
}

#[tokio::test]
async fn cancel_ends_a_live_task_is_idempotent_and_refuses_an_ended_one() {
    let f = start(Setup::default()).await;
    let id = f.start_task(op(), "hold").await;
    let t = f.ok(op(), "CancelTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED");
    let again = f.ok(op(), "CancelTask", json!({"id": id})).await;
    assert_eq!(again["status"]["state"], "TASK_STATE_CANCELED");
    // The runner saw the cancellation and moved on: the next task completes.
    let done = f.ok(op(), "SendMessage", message("next")).await;
    assert_eq!(done["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let code = f
        .err_code(op(), "CancelTask", json!({"id": done["task"]["id"]}))
        .await;
    assert_eq!(code, -32002);
    assert_eq!(
        f.err_code(op(), "CancelTask", json!({"id": "tsk_none"}))
            .await,
        -32001
    );
}

#[tokio::test]
async fn list_tasks_pages_newest_first() {
    let f = start(Setup::default()).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let r = f.ok(op(), "SendMessage", message(&format!("t{i}"))).await;
        ids.push(r["task"]["id"].as_str().unwrap().to_string());
    }
    ids.reverse(); // newest first
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let l = f
            .ok(
                op(),
                "ListTasks",
                json!({"pageSize": 2, "pageToken": token}),
            )
            .await;
        pages += 1;
        assert_eq!(l["totalSize"], 5);
        assert_eq!(l["pageSize"], 2);
        for t in l["tasks"].as_array().unwrap() {
            assert!(t.get("artifacts").is_none(), "artifacts omitted by default");
            seen.push(t["id"].as_str().unwrap().to_string());
        }
        token = l["nextPageToken"].as_str().unwrap().to_string();
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, ids);
    let l = f
        .ok(
            op(),
            "ListTasks",
            json!({"includeArtifacts": true, "pageSize": 1}),
        )
        .await;
    assert_eq!(l["tasks"][0]["artifacts"][0]["name"], "echo");
    let l = f
        .ok(op(), "ListTasks", json!({"status": "TASK_STATE_FAILED"}))
        .await;
    assert_eq!(l["totalSize"], 0);
    assert_eq!(
        f.err_code(op(), "ListTasks", json!({"pageSize": 0})).await,
        -32602
    );
    assert_eq!(
        f.err_code(op(), "ListTasks", json!({"pageToken": "zz"}))
            .await,
        -32602
    );
}

#[tokio::test]
async fn single_acceptance_refuses_a_second_task_as_busy() {
    let f = start(Setup {
        acceptance: Acceptance::Single,
        ..Setup::default()
    })
    .await;
    let id = f.start_task(op(), "hold").await;
    let (_, body) = f.call(op(), "SendMessage", message("more")).await;
    assert_eq!(body["error"]["code"], -32050, "{body}");
    assert_eq!(body["error"]["data"][0]["reason"], "MEMBER_BUSY");
    f.gate.add_permits(1);
    f.wait_state(&id, "TASK_STATE_COMPLETED").await;
    f.ok(op(), "SendMessage", message("more")).await;
}

#[tokio::test]
async fn queue_acceptance_holds_running_plus_depth() {
    let f = start(Setup {
        acceptance: Acceptance::Queue { depth: 1 },
        ..Setup::default()
    })
    .await;
    let first = f.start_task(op(), "hold 1").await;
    let second = f.start_task(op(), "hold 2").await;
    assert_eq!(
        f.err_code(op(), "SendMessage", message("hold 3")).await,
        -32050
    );
    // A cancelled queued task frees its place and is never run.
    f.ok(op(), "CancelTask", json!({"id": second})).await;
    let third = f.start_task(op(), "hold 3").await;
    f.gate.add_permits(2);
    f.wait_state(&first, "TASK_STATE_COMPLETED").await;
    f.wait_state(&third, "TASK_STATE_COMPLETED").await;
    f.wait_state(&second, "TASK_STATE_CANCELED").await;
}

#[tokio::test]
async fn stop_session_calls_the_sessions_callback() {
    let f = start(Setup::default()).await;
    let r = f.ok(op(), "murmur.StopSession", json!({})).await;
    assert_eq!(r, json!({"stopping": true}));
    assert_eq!(f.stops.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn watch_session_streams_the_sessions_events() {
    let f = start(Setup::default()).await;
    let resp = f
        .client
        .post(&f.url)
        .bearer_auth(OPERATOR)
        .json(&json!({"jsonrpc": "2.0", "id": "w", "method": "murmur.WatchSession"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    // The response headers arrived, so the watcher is subscribed: publish now.
    f.door.events().publish(json!({"kind": "session_start"}));
    f.door.events().publish(json!({"kind": "turn", "n": 1}));
    let mut resp = resp;
    let mut text = String::new();
    while parse_sse(&text).len() < 2 {
        let chunk = tokio::time::timeout(Duration::from_secs(10), resp.chunk())
            .await
            .expect("events within 10 s")
            .unwrap()
            .expect("stream still open");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let events = parse_sse(&text);
    assert_eq!(events[0]["result"]["kind"], "session_start");
    assert_eq!(events[1]["result"]["n"], 1);
    assert_eq!(events[1]["id"], "w");
}

#[tokio::test]
async fn resources_files_lists_the_sessions_folder_and_nothing_outside() {
    let f = start(Setup::default()).await;
    let r = f.ok(op(), "resources/files", json!({})).await;
    assert_eq!(
        r["files"],
        json!([
            {"path": "out", "kind": "dir", "size": 0},
            {"path": "out/result.txt", "kind": "file", "size": 5},
        ])
    );
    assert_eq!(r["truncated"], false);
    let r = f.ok(op(), "resources/files", json!({"path": "out"})).await;
    assert_eq!(r["files"][0]["path"], "out/result.txt");
    for bad in ["..", "/etc", "out/../../"] {
        assert_eq!(
            f.err_code(op(), "resources/files", json!({"path": bad}))
                .await,
            -32602
        );
    }
}

#[tokio::test]
async fn shutdown_closes_the_door() {
    let f = start(Setup::default()).await;
    let url = f.url.clone();
    f.ok(op(), "ListTasks", json!({})).await;
    f.door.shutdown().await;
    let err = mur::door::client()
        .build()
        .unwrap()
        .get(format!("{url}.well-known/agent-card.json"))
        .send()
        .await;
    assert!(err.is_err(), "nothing answers after shutdown");
}

#[tokio::test]
async fn a_stream_stays_open_through_input_required_until_the_task_ends() {
    let f = start(Setup::default()).await;
    let resp = f
        .open_stream(op(), "SendStreamingMessage", message("ask:name?"))
        .await;
    f.wait_state_any("TASK_STATE_INPUT_REQUIRED").await;
    let id = f.ok(op(), "ListTasks", json!({})).await["tasks"][0]["id"].clone();
    let mut reply = message("Ada");
    reply["message"]["taskId"] = id;
    let r = f.ok(op(), "SendMessage", reply).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let events = read_stream(resp).await;
    let states: Vec<&str> = events
        .iter()
        .filter_map(|e| e["result"]["statusUpdate"]["status"]["state"].as_str())
        .collect();
    assert_eq!(
        states,
        [
            "TASK_STATE_WORKING",
            "TASK_STATE_INPUT_REQUIRED",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED"
        ]
    );
}

#[tokio::test]
async fn a_task_the_runner_drops_unended_fails_and_frees_the_member() {
    let f = start(Setup {
        acceptance: Acceptance::Single,
        ..Setup::default()
    })
    .await;
    let r = f.ok(op(), "SendMessage", message("drop")).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_FAILED");
    let text = r["task"]["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("without ending it"), "{text}");
    let r = f.ok(op(), "SendMessage", message("next")).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED");
}
