//! `mur logs`: a session's stderr (its records' logs/stderr.log) and its harness's
//! (logs/harness.log, behind `[harness] `), by session id, id prefix or member name;
//! `-f` prints lines as they are written and ends when the session ends.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::session::{Session, wait_for};
use crate::support::{KillOnDrop, World, stderr, stdout};

/// Says something on stderr, then waits for `$HOME/go` before it answers.
const TALKER: &str = "echo 'harness up' >&2\nread line\necho 'working on it' >&2\nwhile [ ! -e \"$HOME/go\" ]; do sleep 0.02; done\necho 'finishing' >&2\necho '{\"type\":\"message\",\"text\":\"done\"}'\n";

#[test]
fn logs_follows_a_session_s_and_its_harness_s_stderr_to_its_end() {
    let w = World::new();
    w.install("talker", "", Some(TALKER));
    let mut cmd = w.run("talker");
    cmd.args(["--json", "--task", "Talk."]);
    let s = Session::spawn(cmd);
    let id = s.ready()["session_id"].as_str().unwrap().to_string();
    let logs = w.records(&id).join("logs");
    wait_for("the harness to take its task", || {
        std::fs::read_to_string(logs.join("harness.log")).is_ok_and(|t| t.contains("working on it"))
    });
    // A prefix names the session; -f prints what is there, then what comes.
    let follower = w
        .mur()
        .args(["logs", &id[..14], "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut follower = KillOnDrop::pid(follower);
    let mut lines = BufReader::new(follower.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l == "[harness] working on it") {
        seen.push(lines.next().expect("a line").unwrap());
    }
    assert!(
        seen.iter().any(|l| l.contains("warning[W-RUN-010]")),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"[harness] harness up".to_string()),
        "{seen:?}"
    );
    // Written after the follow began: printed, and the follow ends with the session.
    std::fs::write(w.records(&id).join("home/go"), "").unwrap();
    for line in lines {
        seen.push(line.unwrap());
    }
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = follower.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < until,
            "the follow did not end with the session"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    assert!(
        seen.contains(&"[harness] finishing".to_string()),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"status: ok".to_string()),
        "the session's last line: {seen:?}"
    );
    let (code, err) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    // Without -f, once ended: the same lines, at once.
    let again = w.mur().args(["logs", &id]).output().unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        stdout(&again).lines().collect::<Vec<_>>().len(),
        seen.len(),
        "{}",
        stdout(&again)
    );
}

#[test]
fn logs_of_a_member_name_reads_this_project_s_last_formation() {
    let (w, project) = crate::first_hour::team();
    let run = w
        .mur_in(&project)
        .args(["run", "--roster", "--task", "Plan a picnic."])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    // What the launcher printed behind [helper] is what helper wrote.
    let forwarded: Vec<String> = stderr(&run)
        .lines()
        .filter_map(|l| l.strip_prefix("[helper] ").map(String::from))
        .collect();
    assert!(!forwarded.is_empty());
    let helper = w
        .mur_in(&project.join("lead"))
        .args(["logs", "helper"])
        .output()
        .unwrap();
    assert!(helper.status.success(), "{}", stderr(&helper));
    let shown = stdout(&helper);
    for line in &forwarded {
        assert!(shown.lines().any(|l| l == line), "{line:?} not in {shown}");
    }
    let missing = w.mur_in(&project).args(["logs", "helpr"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let err = stderr(&missing);
    assert!(
        err.contains("E-RUN-003") && err.contains("has no member named helpr"),
        "{err}"
    );
    assert!(err.contains("Its members: helper, lead."), "{err}");
    // Elsewhere no formation was launched.
    let elsewhere = w.mur().args(["logs", "helper"]).output().unwrap();
    assert!(
        stderr(&elsewhere).contains("no formation was launched in"),
        "{}",
        stderr(&elsewhere)
    );
}
