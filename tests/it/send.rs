//! `mur send`: giving a running formation or a lone session a task.

use serde_json::Value;

use crate::first_hour::team;

#[test]
fn send_gives_a_running_formation_or_session_a_task() {
    let (w, project) = team();
    let (mut launcher, ready) = w.launch_json(&project);
    let frm = ready["formation_id"].as_str().unwrap();
    let lead = ready["members"][0]["session_id"].as_str().unwrap();
    let helper = ready["members"][1]["session_id"].as_str().unwrap();
    // The formation's id reaches its entry member.
    let out = w.mur().args(["send", frm, "Say hello."]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("[mur send] task ") && stderr.contains(": completed"),
        "{stderr}"
    );
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(!answer.trim().is_empty(), "the answer on stdout");
    let received: Vec<Value> = w
        .trace(lead)
        .into_iter()
        .filter(|r| r["type"] == "a2a_task_received")
        .collect();
    assert_eq!(received.len(), 1, "{received:#?}");
    assert_eq!(received[0]["credential"], "operator");
    assert_eq!(received[0]["text"], "Say hello.");
    // A session id reaches that session.
    let out = w.mur().args(["send", helper, "Say hi."]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(w.trace(helper).iter().any(|r| r["text"] == "Say hi."));
    // Nothing runs by that name: E-RUN-003.
    let none = w
        .mur()
        .args(["send", "ses_0199d5a0c3b47c1e9a2b3c4d5e6f7081", "x"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("E-RUN-003"));
    assert!(
        w.mur()
            .args(["stop", frm])
            .output()
            .unwrap()
            .status
            .success()
    );
    assert_eq!(launcher.wait().unwrap().code(), Some(0));
}
