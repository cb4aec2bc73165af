//! A WASM tool in a real formation (`mur run --roster`, three real member sessions on
//! the built-in model): the entry member's probe calls a member at its virtual
//! address, through wasi:http and through murmur:message/send, and gets its answer; a
//! member it may not call gets exactly the refusal a name that is no member gets; and
//! no formation token (nor a door's address) shows in what the component saw (the
//! probe echoes its environment, the URL it set, the response's status, headers and
//! body), in any file (traces included) or on stdout and stderr. Issue 15, items 1 to 3, end to end.
//!
//! planner (entry) may call coder; coder may call reviewer; planner may not call reviewer.

use super::*;
use crate::support::files_under;

fn capsule(dir: &Path, name: &str, extra: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("murmur.yaml"),
        format!(
            "name: {name}\nversion: 1.0.0\ndescription: A member of a test formation.\n\
             agent:\n  transport: builtin\n\
             network:\n  authentication: {{}}\n\
             capabilities:\n  network:\n    allow: [localhost]\n{extra}"
        ),
    )
    .unwrap();
}

/// SendMessage as JSON-RPC, for a POST through wasi:http.
fn send_message(text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message":
        {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}}})
    .to_string()
}

#[test]
fn a_formation_members_tool_calls_a_peer_at_its_virtual_address() {
    let w = World::new();
    share_cache(&w);
    let team = w.proj.join("team");
    let planner = team.join("planner");
    std::fs::create_dir_all(planner.join("tools")).unwrap();
    std::fs::copy(guest("test-probe"), planner.join("tools/probe.wasm")).unwrap();
    capsule(
        &planner,
        "planner",
        &tools_yaml(&[("probe", "tools/probe.wasm")]),
    );
    let accept = "exports:\n  peer_tasks:\n    accept: true\n";
    capsule(&team.join("coder"), "coder", accept);
    capsule(&team.join("reviewer"), "reviewer", accept);
    std::fs::write(
        team.join("roster.yaml"),
        "roster_version: 1\nmembers:\n\
         \x20 - name: planner\n    capsule: local/planner\n    version: 1.0.0\n    entry: true\n\
         \x20 - name: coder\n    capsule: local/coder\n    version: 1.0.0\n\
         \x20 - name: reviewer\n    capsule: local/reviewer\n    version: 1.0.0\n\
         reachability:\n  - from: planner\n    to: [coder]\n  - from: coder\n    to: [reviewer]\n",
    )
    .unwrap();
    let out = w
        .mur_in(&team)
        .args(["install", "planner", "coder", "reviewer"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let a2a = [["a2a-version", "1.0"], ["content-type", "application/json"]];
    let forged = [
        ["a2a-version", "1.0"],
        ["content-type", "application/json"],
        ["authorization", "Bearer forged"],
    ];
    let request = |authority: &str, headers: &[[&str; 2]]| {
        json!({"op": "request", "scheme": "http", "authority": authority, "path": "/",
            "headers": headers, "body": send_message("Write the parser."), "echo": true})
    };
    let send = |url: &str| json!({"op": "send", "url": url, "text": "Write the parser."});
    let ops = json!([
        {"op": "env"},
        request("coder.formation.invalid", &forged),
        send("http://coder.formation.invalid"),
        request("reviewer.formation.invalid", &a2a),
        request("nobody.formation.invalid", &a2a),
        send("http://reviewer.formation.invalid"),
        send("http://nobody.formation.invalid"),
        {"op": "request", "scheme": "http", "authority": "coder.formation.invalid",
            "path": "/.well-known/agent-card.json", "echo": true},
    ]);
    let task = format!("tool: probe {}", json!({"op": "each", "ops": ops}));
    // The component's call bound (10 s, scaled) holds both round trips through the
    // formation: the spec's times here, not the suite's scaled ones.
    let out = w
        .mur_in(&team)
        .env("MUR_TEST_TIME_SCALE", "1")
        .args(["run", "--roster", "--task", &task])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    let traces: Vec<Vec<Value>> = w.sessions().iter().map(|id| w.trace(id)).collect();
    let trace = |m: &str| {
        traces
            .iter()
            .find(|t| t[0]["formation_member"] == m)
            .unwrap_or_else(|| panic!("no trace for {m}"))
            .clone()
    };
    let planner_trace = trace("planner");
    let (err, said) = results(&planner_trace)
        .remove("call_1")
        .expect("the probe's call");
    assert!(!err, "{said}");
    let seen: Vec<Value> = serde_json::from_str(&said).unwrap();
    let output = |i: usize| seen[i]["output"].as_str().unwrap().to_string();
    let failed = |i: usize| seen[i]["error"].as_bool().unwrap();

    // 1. The peers the planner may call, and nothing of the formation's secrets.
    assert!(!failed(0));
    assert!(
        output(0).contains("MURMUR_FORMATION_PEERS=coder=http://coder.formation.invalid\n"),
        "{}",
        output(0)
    );
    // 2. wasi:http to coder's virtual address: coder's door ran the task and answered
    //    (the forged Authorization replaced by the runtime's token).
    assert!(!failed(1), "{}", output(1));
    // The probe echoes all it observed: the URL it set, the status, every header.
    let seen_http: Value = serde_json::from_str(&output(1)).unwrap();
    assert_eq!(seen_http["url"], "http://coder.formation.invalid/");
    assert_eq!(seen_http["status"], 200, "{seen_http}");
    assert!(
        !seen_http["headers"].as_array().unwrap().is_empty(),
        "{seen_http}"
    );
    let body = seen_http["body"].as_str().unwrap();
    let answer: Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answer}"
    );
    // 3. murmur:message/send to coder: the task as it ended, coder's answer in it
    //    (coder asked reviewer, which planner itself may not call).
    assert!(!failed(2), "{}", output(2));
    let task: Value = serde_json::from_str(&output(2)).unwrap();
    assert_eq!(task["state"], "completed", "{task}");
    assert!(
        task["text"]
            .as_str()
            .unwrap()
            .contains("reviewer answered:"),
        "{task}"
    );
    // A member planner may not call gets exactly what no member gets, both ways.
    assert!(failed(3) && failed(4));
    assert_eq!(output(3), output(4));
    assert!(output(3).contains("HttpRequestDenied"), "{}", output(3));
    assert!(failed(5) && failed(6));
    assert_eq!(
        output(5).replace("reviewer.", "<name>."),
        output(6).replace("nobody.", "<name>.")
    );
    assert!(
        output(5).starts_with("there is no member `reviewer.formation.invalid` you may call"),
        "{}",
        output(5)
    );

    // 4. coder's Agent Card, asked for at its virtual address, names that address.
    assert!(!failed(7), "{}", output(7));
    let card: Value = serde_json::from_str(&output(7)).unwrap();
    assert_eq!(card["status"], 200, "{card}");
    let card: Value = serde_json::from_str(card["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        card["supportedInterfaces"][0]["url"], "http://coder.formation.invalid/",
        "{card}"
    );

    // The trace records murmur:message/send's call at the virtual address, never the
    // real door; the wasi:http request is the component's own (no member_call).
    let calls: Vec<&Value> = planner_trace
        .iter()
        .filter(|r| r["type"] == "member_call")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["member"], "coder");
    assert_eq!(calls[0]["peer_url"], "http://coder.formation.invalid");
    assert_eq!(calls[0]["call_id"], "call_1.send-1");
    // Every door is at 127.0.0.1 on a port chosen at launch: none shows.
    let planner_text = serde_json::to_string(&planner_trace).unwrap();
    for door in ["127.0.0.1", "localhost:", "[::1]"] {
        assert!(!planner_text.contains(door), "a door in planner's trace");
        assert!(
            !said.contains(door),
            "a door in the component's view: {said}"
        );
    }
    // coder took both tasks, each from planner.
    let received: Vec<&Value> = traces
        .iter()
        .flatten()
        .filter(|r| r["type"] == "a2a_task_received" && r["credential"] == "member:planner")
        .collect();
    assert_eq!(received.len(), 2, "{received:?}");

    // No token: in what the component saw, on stdout or stderr, in any file.
    assert!(
        !said.contains("mft1."),
        "a token in the component's view: {said}"
    );
    assert!(!said.contains("forged"), "{said}");
    for (what, text) in [
        ("stdout", String::from_utf8_lossy(&out.stdout)),
        ("stderr", stderr.clone()),
    ] {
        assert!(!text.contains("mft1."), "a token on {what}");
    }
    for file in files_under(&w.root) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("mft1."),
            "a token in {}",
            file.display()
        );
    }
}
