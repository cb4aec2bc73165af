//! Listing and following what ran: `mur ps -a` (ended sessions, newest first),
//! `mur trace show --json`, and `mur trace show --follow` to a session's end.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::first_hour::team;
use crate::support::World;

#[test]
fn ps_all_lists_ended_sessions_newest_first_and_trace_show_speaks_json() {
    let (w, project) = team();
    let out = w
        .mur_in(&project)
        .args(["run", "--roster", "--json", "--task", "Say hello."])
        .output()
        .unwrap();
    assert!(out.status.success());
    let ready: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    let frm = ready["formation_id"].as_str().unwrap();
    let lone = w.proj.join("solo");
    crate::support::write_capsule(&lone, "solo", "1.0.0");
    let solo = w
        .mur_in(&lone)
        .args(["run", "--json", "--task", "Say hello."])
        .output()
        .unwrap();
    let solo_id = serde_json::from_str::<Value>(
        String::from_utf8_lossy(&solo.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Nothing runs: `mur ps` lists nothing, `mur ps -a` every session.
    let live = w.mur().args(["ps", "--json"]).output().unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&live.stdout).unwrap(),
        serde_json::json!([])
    );
    let all = w.mur().args(["ps", "-a", "--json"]).output().unwrap();
    let all: Value = serde_json::from_slice(&all.stdout).unwrap();
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 3, "{all:#?}");
    assert_eq!(all[0]["session_id"], solo_id.as_str(), "newest first");
    assert!(all[0].get("formation_id").is_none());
    for member in ready["members"].as_array().unwrap() {
        let row = all
            .iter()
            .find(|r| r["session_id"] == member["session_id"])
            .unwrap();
        assert_eq!(row["formation_id"], frm, "{row}");
        assert_eq!(row["formation_member"], member["name"]);
        assert_eq!(row["status"], "ok");
    }
    let ids: Vec<&str> = all
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(ids, sorted);
    // For people: a header, then one line each.
    let text = w.mur().args(["ps", "-a"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.starts_with("SESSION "), "{text}");
    // Ids as their shortest unique prefix (at least 12 digits), the member beside them.
    assert!(
        text.lines()
            .any(|l| l.contains(&frm[..16]) && l.ends_with("  helper") && !l.contains(frm)),
        "{text}"
    );
    // trace show --json: trace.jsonl's records, one JSON object a line.
    let lead = ready["members"][0]["session_id"].as_str().unwrap();
    let shown = w
        .mur()
        .args(["trace", "show", lead, "--json"])
        .output()
        .unwrap();
    let records: Vec<Value> = String::from_utf8_lossy(&shown.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records, w.trace(lead));
    // From a member's session id to its formation's trace.
    let stderr = String::from_utf8_lossy(&shown.stderr);
    assert!(
        stderr.contains(&format!("`mur trace show {frm}`")),
        "{stderr}"
    );
    let whole = w
        .mur()
        .args(["trace", "show", frm, "--json"])
        .output()
        .unwrap();
    let starts = String::from_utf8_lossy(&whole.stdout)
        .lines()
        .filter(|l| l.contains("\"type\":\"session_start\""))
        .count();
    assert_eq!(starts, 2);
}

#[test]
fn trace_show_follow_prints_a_live_trace_to_its_session_end() {
    let w = World::new();
    crate::support::write_capsule(&w.proj, "solo", "1.0.0");
    let session = crate::support::session::Session::spawn({
        let mut cmd = w.mur();
        cmd.args(["run", "--json"]);
        cmd
    });
    let id = session.ready()["session_id"].as_str().unwrap().to_string();
    let follower = w
        .mur()
        .args(["trace", "show", &id, "--follow", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut follower = crate::support::KillOnDrop::pid(follower);
    let mut out = BufReader::new(follower.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.contains("\"type\":\"session_start\""), "{first}");
    // Written after the follower started: it sees them as they come.
    let sent = w.mur().args(["send", &id, "Say hello."]).output().unwrap();
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    assert!(
        w.mur()
            .args(["stop", &id])
            .output()
            .unwrap()
            .status
            .success()
    );
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(follower.wait().unwrap().success(), "it ends at session_end");
    let (code, _) = session.wait(std::time::Duration::from_secs(30));
    assert_eq!(code, 0);
    let followed: Vec<Value> = std::iter::once(first.as_str())
        .chain(rest.lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(followed, w.trace(&id), "every record once, in order");
    assert_eq!(followed.last().unwrap()["type"], "session_end");
    assert!(followed.iter().any(|r| r["type"] == "a2a_task_received"));
}
