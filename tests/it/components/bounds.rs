//! What a component makes the host hold is bounded per instance (docs/components.md,
//! "Limits"): open files, resource-table entries, wasi:http fields and bodies; a
//! session's writes have a quota; a tool's result is cut for the trace and the model.
//! Each limit is a tool error naming it, and the next call is answered.

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::{Web, call, final_state, install, records, results, tools_yaml};
use crate::support::World;

/// A server on 127.0.0.1 that reads every request to its end (or the connection's)
/// and counts the bytes, answering nothing.
fn drain() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let got = Arc::new(AtomicUsize::new(0));
    let g = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let g = g.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    g.fetch_add(n, Ordering::Relaxed);
                }
            });
        }
    });
    (addr, got)
}

fn hostile(id: &str, what: &str) -> Value {
    call(id, "hostile", json!({"do": what}))
}

#[test]
fn each_host_side_limit_is_a_tool_error_naming_it_and_the_next_call_is_answered() {
    const QUOTA: u64 = 2 << 20;
    let big: &'static str = Box::leak("i".repeat(mur::component::BODY_LIMIT + (1 << 20)).into());
    let web = Web::start(big);
    let (sink, sunk) = drain();
    let w = World::new();
    let calm = |n: u32| hostile(&format!("calm-{n}"), "calm");
    let calls = [
        hostile("files", "files"),
        calm(1),
        hostile("table", "table"),
        calm(2),
        hostile("fields", "fields"),
        hostile("big-field", "big-field"),
        calm(3),
        call("result", "hostile", json!({"do": "result", "n": "1000000"})),
        hostile("write", "write"),
        calm(4),
        hostile("write-again", "write"),
        call(
            "body-in",
            "hostile",
            json!({"do": "body-in", "url": format!("http://{}/big", web.addr)}),
        ),
        call(
            "body-out",
            "hostile",
            json!({"do": "body-out", "url": format!("http://{sink}/up")}),
        ),
        calm(5),
    ];
    install(
        &w,
        "hostile",
        &format!(
            "inference:\n  max_turns: 40\ncapabilities:\n  network:\n    \
             allow: [\"127.0.0.1:{}\", \"127.0.0.1:{}\"]\n{}",
            web.addr.port(),
            sink.port(),
            tools_yaml(&[("hostile", "tools/hostile.wasm")])
        ),
        &[("tools/hostile.wasm", "test-hostile")],
        &calls,
    );
    let out = w
        .run("hostile")
        .env("MUR_TEST_WRITE_QUOTA", QUOTA.to_string())
        // The whole 10 s per call: this debug build moves the megabytes slowly.
        .env("MUR_TEST_TIME_SCALE", "1")
        .args(["--task", "Grab."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let trace = w.trace(w.sessions().last().unwrap());
    let told: Vec<String> = trace
        .iter()
        .filter(|r| r["type"] != "tool_call")
        .map(|r| r.to_string().chars().take(300).collect())
        .collect();
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{}", told.join("\n"));
    assert_eq!(final_state(&trace), "completed");
    let r = results(&trace);
    let failed = |id: &str, says: &str| {
        let (err, text) = &r[id];
        assert!(*err && text.contains(says), "{id}: {text}");
    };
    failed(
        "files",
        &format!(
            "tool `hostile` reached its limit of {} open files and folders",
            mur::component::FILE_LIMIT
        ),
    );
    let table = format!(
        "tool `hostile` reached its limit of {} resources held at once",
        mur::component::TABLE_LIMIT
    );
    failed("table", &table);
    // Fields count against the table: at most TABLE_LIMIT of FIELD_LIMIT bytes each.
    failed("fields", &table);
    failed(
        "big-field",
        &format!(
            "tool `hostile` reached its limit of {} KiB for one set of HTTP fields",
            mur::component::FIELD_LIMIT >> 10
        ),
    );
    let quota = format!(
        "tool `hostile` reached the session's write quota of {} MiB",
        QUOTA >> 20
    );
    failed("write", &quota);
    failed("write-again", &quota);
    let limit = mur::component::BODY_LIMIT;
    failed(
        "body-in",
        &format!("HTTP response body size exceeds limit: {limit} bytes"),
    );
    failed(
        "body-out",
        &format!("sent {limit} bytes; writing: Some(\"StreamError::Closed\")"),
    );
    failed("body-out", &format!("HttpRequestBodySize(Some({limit}))"));
    for n in 1..=5 {
        assert_eq!(
            r[&format!("calm-{n}")],
            (false, "nothing to do for calm".to_string())
        );
    }
    // The write stopped at the quota: the file holds no more than it.
    let tmp = records(&w).join("tmp/hostile-big");
    let written = std::fs::metadata(&tmp).unwrap().len();
    assert!(written <= QUOTA, "{written} bytes in {}", tmp.display());
    // The sink got at most the body limit (and the request head).
    let up = sunk.load(Ordering::Relaxed);
    assert!(
        up <= mur::component::BODY_LIMIT + (1 << 20),
        "the sink got {up} bytes"
    );
    // The result is cut, for the model and the trace alike, and says how much.
    let (err, text) = &r["result"];
    assert!(!err);
    assert!(
        text.len() < mur::agent::RESULT_LIMIT + 200,
        "{}",
        text.len()
    );
    assert!(
        text.ends_with(&format!(
            "[mur: tool result cut to its first {0} of 1000000 bytes ({1} bytes left out); \
             the limit is {0} bytes]",
            mur::agent::RESULT_LIMIT,
            1_000_000 - mur::agent::RESULT_LIMIT
        )),
        "{}",
        &text[text.len() - 200..]
    );
    let harness_saw = std::fs::read_to_string(records(&w).join("trace.jsonl")).unwrap();
    assert!(
        harness_saw
            .lines()
            .all(|l| l.len() < 2 * mur::agent::RESULT_LIMIT),
        "a trace line is longer than the bound"
    );
}

#[test]
fn a_serving_session_whose_tools_hit_each_limit_answers_the_next_request_at_its_door() {
    use crate::support::session::{Session, rpc};
    let w = World::new();
    let grabs = ["files", "table", "fields", "big-field", "write"];
    let calls: Vec<Value> = grabs.iter().map(|g| hostile(g, g)).collect();
    install(
        &w,
        "door",
        &format!(
            "inference:\n  max_turns: 20\n{}",
            tools_yaml(&[("hostile", "tools/hostile.wasm")])
        ),
        &[("tools/hostile.wasm", "test-hostile")],
        &calls,
    );
    let mut cmd = w.run("door");
    cmd.arg("--json")
        .env("MUR_TEST_WRITE_QUOTA", (1u64 << 20).to_string())
        .env("MUR_TEST_TIME_SCALE", "1");
    let s = Session::spawn(cmd);
    let ready = s.ready();
    let id = ready["session_id"].as_str().unwrap().to_string();
    let door = ready["door"].as_str().unwrap().to_string();
    let token = w.token(&id);
    // Twice: the second task meets every limit again (the quota already spent), and
    // the door answers each request.
    for n in 1..=2 {
        let sent = rpc(
            &door,
            &token,
            "SendMessage",
            json!({"message": {"messageId": format!("m{n}"), "role": "ROLE_USER",
                "parts": [{"text": "Grab."}]}}),
        );
        let task = &sent["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
        let got = rpc(&door, &token, "GetTask", json!({"id": task["id"]}));
        assert_eq!(got["result"]["id"], task["id"], "{got}");
    }
    let trace = w.trace(&id);
    let errors = trace
        .iter()
        .filter(|r| r["type"] == "tool_result" && r["is_error"] == true)
        .count();
    assert_eq!(errors, 2 * grabs.len(), "every grab hit its limit twice");
    s.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, stderr) = s.wait(std::time::Duration::from_secs(30));
    assert_eq!(code, 0, "{stderr}");
}
