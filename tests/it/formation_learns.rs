//! The spec's "What each member learns", read from what each member's model and
//! records see in a real formation (`mur run --roster`, three real member sessions).
//! The model is a real OpenAI-compatible chat completions server on 127.0.0.1 per
//! member (the test double for a hosted LLM), recording every request it gets.
//!
//! quokka (entry) may call wombat; wombat may call numbat; quokka may not call numbat.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::support::World;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};

/// Every request body one member's model server got.
type Seen = Arc<Mutex<Vec<Value>>>;

/// `calls`: the member this model hands a part to (with call-member), if any.
async fn model_server(calls: Option<&'static str>) -> (SocketAddr, Seen) {
    let seen: Seen = Arc::default();
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            post(
                move |State(seen): State<Seen>, axum::Json(body): axum::Json<Value>| async move {
                    seen.lock().unwrap().push(body.clone());
                    let messages = body["messages"].as_array().cloned().unwrap_or_default();
                    let last = messages.last().cloned().unwrap_or(Value::Null);
                    let first_turn = !messages.iter().any(|m| m["role"] == "assistant");
                    let message = match calls {
                        Some(callee) if first_turn => json!({
                            "role": "assistant", "content": null,
                            "tool_calls": [{"id": "c1", "type": "function", "function": {
                                "name": "call-member",
                                "arguments": json!({"member": callee, "task": "Do the part in full."}).to_string()
                            }}]
                        }),
                        Some(_) if last["role"] == "tool" => {
                            json!({"role": "assistant", "content": "Asked."})
                        }
                        _ => json!({"role": "assistant", "content": "Done."}),
                    };
                    axum::Json(json!({"choices": [{"index": 0, "message": message}]}))
                },
            ),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, seen)
}

/// `allow`: the one entry of its `capabilities.network.allow`.
fn capsule(dir: &std::path::Path, name: &str, model: SocketAddr, peer: bool, allow: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let accept = if peer {
        "exports:\n  peer_tasks:\n    accept: true\n"
    } else {
        ""
    };
    std::fs::write(
        dir.join("murmur.yaml"),
        format!(
            "name: {name}\nversion: 1.0.0\ndescription: A member of a test formation.\n\
             agent:\n  transport: http\n  base_url: http://{model}/v1\n  model: test\n\
             inference:\n  max_turns: 6\n{accept}\
             network:\n  authentication: {{}}\n\
             capabilities:\n  network:\n    allow:\n      - \"{allow}\"\n"
        ),
    )
    .unwrap();
}

const NAMES: [&str; 3] = ["quokka", "wombat", "numbat"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_member_learns_its_own_name_and_its_callees_names_only() {
    let w = World::new();
    let (quokka_model, quokka_seen) = model_server(Some("wombat")).await;
    let (wombat_model, wombat_seen) = model_server(Some("numbat")).await;
    let (numbat_model, numbat_seen) = model_server(None).await;
    let team = w.proj.join("team");
    capsule(
        &team.join("quokka"),
        "quokka",
        quokka_model,
        false,
        "localhost",
    );
    // wombat reaches its callee through `[::1]`: the same host as localhost, for the
    // launch warning as for the calls (issue 13).
    capsule(&team.join("wombat"), "wombat", wombat_model, true, "[::1]");
    capsule(
        &team.join("numbat"),
        "numbat",
        numbat_model,
        true,
        "localhost",
    );
    std::fs::write(
        team.join("roster.yaml"),
        "roster_version: 1\nmembers:\n\
         \x20 - name: quokka\n    capsule: local/quokka\n    version: 1.0.0\n    entry: true\n\
         \x20 - name: wombat\n    capsule: local/wombat\n    version: 1.0.0\n\
         \x20 - name: numbat\n    capsule: local/numbat\n    version: 1.0.0\n\
         reachability:\n  - from: quokka\n    to: [wombat]\n  - from: wombat\n    to: [numbat]\n",
    )
    .unwrap();
    let mut install = w.mur();
    install
        .current_dir(&team)
        .args(["install", "quokka", "wombat", "numbat"]);
    let out = install.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut run = w.mur();
    run.current_dir(&team)
        .args(["run", "--roster", "--task", "Build the thing."]);
    let out = tokio::task::spawn_blocking(move || run.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("W-RUN-008"), "{stderr}");

    let traces: Vec<Vec<Value>> = w.sessions().iter().map(|id| w.trace(id)).collect();
    let trace = |m: &str| {
        traces
            .iter()
            .find(|t| t[0]["formation_member"] == m)
            .unwrap_or_else(|| panic!("no trace for {m}"))
            .clone()
    };
    let frm = trace("quokka")[0]["formation_id"]
        .as_str()
        .unwrap()
        .to_string();
    let callees = [
        ("quokka", Some("wombat")),
        ("wombat", Some("numbat")),
        ("numbat", None),
    ];
    let seen = [&quokka_seen, &wombat_seen, &numbat_seen];
    for ((me, callee), seen) in callees.into_iter().zip(seen) {
        let requests = seen.lock().unwrap().clone();
        assert!(!requests.is_empty(), "{me}'s model was never asked");
        let others: Vec<&str> = NAMES
            .into_iter()
            .filter(|n| *n != me && Some(*n) != callee)
            .collect();
        for body in &requests {
            let system = body["messages"][0]["content"].as_str().unwrap();
            // About itself: its roster name ([Capsule] block, MURMUR.md) and formation id.
            assert!(system.starts_with("[Capsule]\n"), "{system}");
            assert!(system.contains(&format!("roster name: {me}")), "{system}");
            assert!(system.contains(&frm), "{me}: no formation id: {system}");
            // About members it may not call (or that called it): nothing at all.
            let text = body.to_string();
            for other in &others {
                assert!(!text.contains(other), "{me}'s model saw {other}: {text}");
            }
            assert!(
                !text.contains("mft1"),
                "a formation token reached {me}'s model"
            );
            assert!(
                !text.contains("127.0.0.1:"),
                "a door URL reached {me}'s model: {text}"
            );
            // About a member it may call: its name, in the call-member tool.
            let tools = body["tools"].as_array().cloned().unwrap_or_default();
            match callee {
                Some(callee) => {
                    assert_eq!(tools.len(), 1, "{tools:?}");
                    assert_eq!(tools[0]["function"]["name"], "call-member");
                    let description = tools[0]["function"]["description"].as_str().unwrap();
                    assert!(description.contains(callee), "{description}");
                }
                None => assert!(tools.is_empty(), "{me} got tools: {tools:?}"),
            }
        }
        // Its records say the same: MURMUR.md names it and its formation, no other.
        let start = &trace(me)[0];
        let murmur_md = std::fs::read_to_string(
            std::path::Path::new(start["records_dir"].as_str().unwrap()).join("MURMUR.md"),
        )
        .unwrap();
        assert!(
            murmur_md.contains(me) && murmur_md.contains(&frm),
            "{murmur_md}"
        );
        for other in NAMES.into_iter().filter(|n| *n != me) {
            assert!(!murmur_md.contains(other), "{me}'s MURMUR.md names {other}");
        }
        assert_eq!(start["formation_member"], me);
        match callee {
            Some(c) => assert_eq!(start["formation_callees"], json!([c])),
            None => assert!(
                start
                    .get("formation_callees")
                    .is_none_or(|c| c == &json!([]))
            ),
        }
    }
    // Each callee's trace names its caller, and the class the call carried: the
    // operator's task is trusted, and so is every part handed on from it.
    for (callee, caller) in [("wombat", "quokka"), ("numbat", "wombat")] {
        let t = trace(callee);
        let received = t.iter().find(|r| r["type"] == "a2a_task_received").unwrap();
        assert_eq!(received["credential"], format!("member:{caller}"));
        assert_eq!(received["trust"], "trusted");
    }
    // The answer came back up the chain: quokka's last turn read wombat's answer.
    let last = quokka_seen.lock().unwrap().last().unwrap().to_string();
    assert!(last.contains("member:wombat"), "{last}");
}
