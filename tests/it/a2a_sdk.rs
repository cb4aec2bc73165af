//! A real A2A client: the official Python SDK (`a2a-sdk` from PyPI) drives a door.
//!
//! Ignored by plain `cargo test` (it needs Python and the SDK); CI installs them into
//! `.venv` and runs `cargo test --test it a2a_sdk -- --ignored`. `MUR_A2A_SDK_PYTHON`
//! names another interpreter.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::door::*;
use serde_json::Value;

fn python() -> String {
    std::env::var("MUR_A2A_SDK_PYTHON")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python").into())
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Python with a2a-sdk: `just a2a-sdk`, then `cargo test --test it a2a_sdk -- --ignored`"]
async fn the_python_sdk_sends_streams_gets_lists_and_cancels() {
    let f = start(Setup::default()).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a2a_sdk/client.py");
    let url = f.url.clone();
    let out = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(python())
            .arg(script)
            .arg(&url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python with a2a-sdk (see the ignore reason)");
        // The token goes over stdin, never on the command line.
        writeln!(child.stdin.take().unwrap(), "{OPERATOR}").unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "client failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).expect("the client prints JSON");

    let sent = &seen["send"][0]["task"];
    assert_eq!(sent["status"]["state"], "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(
        sent["artifacts"][0]["parts"][0]["text"],
        "echo: from python"
    );

    let stream = seen["stream"].as_array().unwrap();
    assert!(
        stream[0].get("task").is_some(),
        "Task snapshot first: {seen}"
    );
    let last = &stream.last().unwrap()["statusUpdate"]["status"]["state"];
    assert_eq!(last, "TASK_STATE_COMPLETED");

    assert_eq!(seen["get"]["id"], sent["id"]);
    assert_eq!(seen["list"]["totalSize"], 2);
    let missing = seen["missing"].as_str().unwrap();
    assert!(missing.to_lowercase().contains("not found"), "{missing}");
    let cancel = seen["cancel_done"].as_str().unwrap();
    assert!(cancel.to_lowercase().contains("cancel"), "{cancel}");
}
