//! `mur run` as one session, run as the real binary with HOME in a tempdir: a task
//! end to end, the readiness line and the door, signals, the deadline, --resume, and
//! `mur stop`, `mur ps`, `mur trace show`.

use std::time::Duration;

use crate::support::World;
use crate::support::session::*;
use nix::sys::signal::Signal;
use serde_json::{Value, json};

/// The `demo` capsule installed and serving: `mur run demo --json`, and its readiness line.
fn serving_demo(w: &World) -> (Session, Value) {
    w.install("demo", "", None);
    let mut cmd = w.run("demo");
    cmd.arg("--json");
    let s = Session::spawn(cmd);
    let ready = s.ready();
    (s, ready)
}

#[test]
fn task_runs_end_to_end_on_the_builtin_model() {
    let w = World::new();
    w.install("demo", "", None);
    let out = w.run_task("demo", "Write the page. Test it.");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("status: ok"), "{stderr}");
    let ids = w.sessions();
    assert_eq!(ids.len(), 1);
    let id = &ids[0];
    assert!(id.starts_with("ses_") && id.len() == 36, "{id}");
    let result = w.result(id);
    assert!(
        result.starts_with("completed\nPlan for: Write the page. Test it."),
        "{result}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), result.trim());
    let trace = w.trace(id);
    assert_eq!(
        types(&trace),
        [
            "session_start",
            "a2a_task_received",
            "task_state",
            "inference_turn",
            "task_state",
            "session_end"
        ]
    );
    assert_eq!(trace[0]["capsule"]["name"], "local/demo");
    assert!(trace[0].get("formation_id").is_none());
    assert_eq!(trace[1]["credential"], "operator");
    assert_eq!(trace[4]["to"], "completed");
    assert_eq!(trace[5]["exit_status"], "ok");
    assert_eq!(trace[5]["exit_code"], 0);
    // Unpacked once, keyed by sha256; the running record is gone; the project untouched.
    let sha = installed_sha(&w, "demo");
    assert!(
        w.home
            .join(".murmur/cache")
            .join(&sha)
            .join("murmur.yaml")
            .is_file()
    );
    assert_eq!(std::fs::read_dir(w.running_dir()).unwrap().count(), 0);
    let in_proj: Vec<_> = std::fs::read_dir(&w.proj)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        in_proj,
        [".murmur"],
        "the runtime made nothing in the work folder"
    );
}

#[test]
fn current_folder_murmur_yaml_runs_and_roster_yaml_is_never_read() {
    let w = World::new();
    std::fs::write(
        w.proj.join("murmur.yaml"),
        "name: here\nversion: 0.1.0\ndescription: d\nagent:\n  transport: builtin\n",
    )
    .unwrap();
    std::fs::write(w.proj.join("roster.yaml"), "this is: [not a roster").unwrap();
    let out = w.mur().args(["run", "--task", "Hello."]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = &w.sessions()[0];
    assert_eq!(w.trace(id)[0]["capsule"]["name"], "here");
}

#[test]
fn task_file_is_read_as_the_task() {
    let w = World::new();
    w.install("demo", "", None);
    std::fs::write(w.proj.join("task.md"), "Read me from a file.").unwrap();
    let out = w.run_task("demo", "task.md");
    assert_eq!(out.status.code(), Some(0));
    let id = &w.sessions()[0];
    assert_eq!(w.trace(id)[1]["text"], "Read me from a file.");
}

#[test]
fn capsule_not_installed_is_e_run_001() {
    let w = World::new();
    let out = w.run("nothere").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let refusal = format!(
        "error[E-RUN-001]: local/nothere 1.0.0 is installed in neither {}/.murmur/artifacts nor {}/.murmur/artifacts",
        w.proj.display(),
        w.home.display()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.lines().any(|l| l == refusal), "{stderr}");
    assert!(w.sessions().is_empty(), "a refusal stages nothing");
}

#[test]
fn json_readiness_line_then_send_message_and_get_task_with_the_operator_token() {
    let w = World::new();
    let (s, ready) = serving_demo(&w);
    assert_eq!(ready["type"], "ready");
    let id = ready["session_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("ses_"));
    assert!(ready.get("formation_id").is_none());
    let door = ready["door"].as_str().unwrap().to_string();
    assert!(door.starts_with("http://127.0.0.1:"), "{door}");
    let token = w.token(&id);
    let sent = rpc(
        &door,
        &token,
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Plan a trip."}]}}),
    );
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let got = rpc(&door, &token, "GetTask", json!({"id": task["id"]}));
    assert_eq!(got["result"]["id"], task["id"]);
    assert!(
        w.result(&id)
            .starts_with("completed\nPlan for: Plan a trip.")
    );
    // A wrong token is refused; the session keeps serving.
    let bad = rpc(&door, "not-the-token", "GetTask", json!({"id": task["id"]}));
    assert!(bad.get("result").is_none(), "{bad}");
    s.signal(Signal::SIGTERM);
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "idle at SIGTERM: {stderr}");
    let trace = w.trace(&id);
    assert_eq!(trace.last().unwrap()["exit_status"], "ok");
    assert!(!w.running_dir().join(format!("{id}.json")).exists());
}

/// SIGTERM (`mur stop`) and SIGINT (Ctrl-C) mid-task cancel it with E-RUN-040, and
/// the stderr line and the `canceled:` line name the signal that came.
fn signal_mid_task_cancels_it_with_e_run_040(sig: Signal) {
    let w = World::new();
    w.install("sleeper", "", Some(SLEEPER));
    let mut cmd = w.run("sleeper");
    cmd.args(["--task", "Sleep."]);
    let s = Session::spawn(cmd);
    let id = wait_harness(&w);
    s.signal(sig);
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 1, "{stderr}");
    let name = sig.as_str();
    assert!(
        stderr.contains(&format!(
            "error[E-RUN-040]: the session received {name} while"
        )),
        "{stderr}"
    );
    assert_eq!(w.result(&id), format!("canceled: {name} (E-RUN-040)\n"));
    let trace = w.trace(&id);
    let end = trace.last().unwrap();
    assert_eq!(end["type"], "session_end");
    assert_eq!(end["exit_status"], "canceled");
    assert_eq!(end["error_code"], "E-RUN-040");
}

#[test]
fn sigterm_mid_task_cancels_it_with_e_run_040() {
    signal_mid_task_cancels_it_with_e_run_040(Signal::SIGTERM);
}

#[test]
fn sigint_mid_task_says_sigint_not_sigterm() {
    signal_mid_task_cancels_it_with_e_run_040(Signal::SIGINT);
}

#[test]
fn a_second_sigterm_exits_143_at_once() {
    let w = World::new();
    w.install("stubborn", "", Some(STUBBORN));
    let mut cmd = w.run("stubborn");
    cmd.args(["--task", "Sleep.", "--json"]);
    let s = Session::spawn(cmd);
    let ready = s.ready();
    let id = ready["session_id"].as_str().unwrap().to_string();
    let door = ready["door"].as_str().unwrap().to_string();
    let token = w.token(&id);
    wait_harness(&w);
    s.signal(Signal::SIGTERM);
    // The wind-down has begun once the door reports the task canceled; the harness
    // ignores SIGTERM, so teardown now waits for it.
    wait_for("the task canceled", || {
        let listed = rpc(&door, &token, "ListTasks", json!({}));
        listed["result"]["tasks"][0]["status"]["state"] == "TASK_STATE_CANCELED"
    });
    s.signal(Signal::SIGTERM);
    let (code, _) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 143);
    assert!(!types(&w.trace(&id)).contains(&"session_end".to_string()));
    assert!(!w.running_dir().join(format!("{id}.json")).exists());
}

#[test]
fn deadline_ends_the_session_with_e_run_053() {
    let w = World::new();
    w.install("sleeper", "", Some(SLEEPER));
    let mut cmd = w.run("sleeper");
    cmd.args(["--task", "Sleep.", "--deadline", "1"]);
    let s = Session::spawn(cmd);
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("E-RUN-053"), "{stderr}");
    let id = &w.sessions()[0];
    assert_eq!(w.result(id), "canceled: deadline reached (E-RUN-053)\n");
    let end = w.trace(id).last().unwrap().clone();
    assert_eq!(end["exit_status"], "deadline_reached");
    assert_eq!(end["error_code"], "E-RUN-053");
}

/// The names of `pid`'s threads, sorted.
fn threads(pid: i32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect();
    names.sort();
    names
}

/// An idle session with nothing below it keeps its two threads (the runtime's and the
/// records' flusher) through its stray-reap ticks: a tick that finds no child starts
/// no blocking-pool thread (`watch_strays` in src/descendants.rs).
#[test]
fn an_idle_session_with_no_child_keeps_two_threads() {
    let w = World::new();
    let (s, _) = serving_demo(&w);
    // A property of every tick, so watched across several: four of the session's
    // 5 s ticks, scaled as the session scales them.
    let scale: f64 = crate::support::TIME_SCALE.parse().unwrap();
    let until = std::time::Instant::now() + Duration::from_secs(20).mul_f64(scale);
    while std::time::Instant::now() < until {
        let names = threads(s.pid());
        assert!(names.len() <= 2, "{names:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(threads(s.pid()), ["mur", "mur-flush"]);
}

#[test]
fn idle_timeout_flag_ends_an_idle_session() {
    let w = World::new();
    w.install("demo", "lifecycle:\n  idle_timeout: 600s\n", None);
    let mut cmd = w.run("demo");
    cmd.args(["--json", "--lifecycle-idle-timeout", "1"]);
    let s = Session::spawn(cmd);
    s.ready();
    let (code, _) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0);
    let id = &w.sessions()[0];
    assert_eq!(w.trace(id).last().unwrap()["exit_status"], "ok");
}

#[test]
fn resume_continues_the_session_without_formation_parts() {
    let w = World::new();
    w.install("demo", "", None);
    let out = w.run_task("demo", "First.");
    assert_eq!(out.status.code(), Some(0));
    let id = w.sessions()[0].clone();
    let mut cmd = w.mur();
    cmd.args(["run", "--resume", &id, "--json", "--task", "Second."])
        .env(
            "MURMUR_FORMATION_ID",
            "frm_0123456789abcdef0123456789abcdef",
        );
    let s = Session::spawn(cmd);
    let ready = s.ready();
    assert_eq!(ready["session_id"], id.as_str());
    assert!(ready.get("formation_id").is_none());
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("W-RUN-007"), "{stderr}");
    let trace = w.trace(&id);
    let starts: Vec<_> = trace
        .iter()
        .filter(|r| r["type"] == "session_start")
        .collect();
    assert_eq!(starts.len(), 2);
    assert!(starts[1].get("formation_id").is_none());
    assert!(!types(&trace).contains(&"formation_ended".to_string()));
    let seqs: Vec<u64> = trace.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert!(w.result(&id).contains("Plan for: Second."));
}

#[test]
fn resume_and_roster_conflict_with_status_2() {
    let w = World::new();
    let out = w
        .mur()
        .args(["run", "--roster", "--resume", "ses_x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn stop_ps_and_trace_show() {
    let w = World::new();
    let (s, ready) = serving_demo(&w);
    let id = ready["session_id"].as_str().unwrap().to_string();
    let ps = w.mur().arg("ps").output().unwrap();
    // Shown as its shortest unique prefix (at least 12 hex digits).
    assert!(String::from_utf8_lossy(&ps.stdout).contains(&id[..16]));
    let shown = w.mur().args(["trace", "show", &id]).output().unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("session_start") && text.contains(&id),
        "{text}"
    );
    let stop = w.mur().args(["stop", &id]).output().unwrap();
    assert_eq!(stop.status.code(), Some(0));
    let (code, _) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0);
    let ps = w.mur().args(["ps", "--json"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ps.stdout).trim(), "[]");
    let gone = w.mur().args(["stop", &id]).output().unwrap();
    assert_eq!(gone.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&gone.stderr)
            .contains(&format!("{id} already ended: ended ok (exit code 0)")),
        "{}",
        String::from_utf8_lossy(&gone.stderr)
    );
    let shown = w.mur().args(["trace", "show", &id]).output().unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).contains("session_end"));
}

#[test]
fn a_closed_stdout_never_panics_the_session() {
    let w = World::new();
    w.install("demo", "", None);
    let mut cmd = w.run("demo");
    cmd.args(["--task", "Print me."])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    drop(child.stdout.take()); // the reader is gone before the result is printed
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn once_stderr_is_gone_diagnostics_go_to_bootstrap_log() {
    let w = World::new();
    w.install("sleeper", "", Some(SLEEPER));
    let mut cmd = w.run("sleeper");
    cmd.args(["--task", "Sleep.", "--deadline", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    let id = &w.sessions()[0];
    let log = std::fs::read_to_string(w.records(id).join("logs/bootstrap.log")).unwrap();
    assert!(log.contains("E-RUN-053"), "{log}");
    assert!(log.contains("status: deadline_reached"), "{log}");
}

fn send(door: &str, token: &str, text: &str) -> serde_json::Value {
    rpc(
        door,
        token,
        "SendMessage",
        json!({"message": {"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]},
               "configuration": {"returnImmediately": true}}),
    )
}

#[test]
fn queued_tasks_are_refused_and_the_running_one_canceled_at_sigterm() {
    let w = World::new();
    w.install(
        "sleeper",
        "lifecycle:\n  task_acceptance: queue\n  queue_depth: 1\n",
        Some(SLEEPER),
    );
    let mut cmd = w.run("sleeper");
    cmd.arg("--json");
    let s = Session::spawn(cmd);
    let ready = s.ready();
    let id = ready["session_id"].as_str().unwrap().to_string();
    let door = ready["door"].as_str().unwrap().to_string();
    let token = w.token(&id);
    let first = send(&door, &token, "one");
    wait_harness(&w);
    let second = send(&door, &token, "two");
    assert_eq!(
        second["result"]["task"]["status"]["state"], "TASK_STATE_SUBMITTED",
        "{second}"
    );
    let third = send(&door, &token, "three");
    assert!(third.get("error").is_some(), "beyond queue_depth: {third}");
    s.signal(Signal::SIGTERM);
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 1, "{stderr}");
    let trace = w.trace(&id);
    let state_of = |task: &serde_json::Value| {
        trace
            .iter()
            .rfind(|r| r["type"] == "task_state" && r["task_id"] == task["result"]["task"]["id"])
            .map(|r| r["to"].clone())
    };
    assert_eq!(state_of(&first), Some(json!("canceled")));
    assert_eq!(state_of(&second), Some(json!("rejected")));
}

#[test]
fn the_acceptance_flag_overrides_the_manifest() {
    let w = World::new();
    w.install(
        "sleeper",
        "lifecycle:\n  task_acceptance: queue\n  queue_depth: 1\n",
        Some(SLEEPER),
    );
    let mut cmd = w.run("sleeper");
    cmd.args(["--json", "--lifecycle-task-acceptance", "single"]);
    let s = Session::spawn(cmd);
    let ready = s.ready();
    let id = ready["session_id"].as_str().unwrap().to_string();
    let door = ready["door"].as_str().unwrap().to_string();
    let token = w.token(&id);
    send(&door, &token, "one");
    wait_harness(&w);
    let second = send(&door, &token, "two");
    assert!(
        second.get("error").is_some(),
        "single holds one task: {second}"
    );
    s.signal(Signal::SIGTERM);
    assert_eq!(s.wait(Duration::from_secs(30)).0, 1);
}

#[test]
fn stop_of_a_formation_signals_the_launcher_its_marker_names() {
    let w = World::new();
    let frm = "frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071";
    let mut launcher = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let dir = w.home.join(".murmur/formations").join(frm);
    std::fs::create_dir_all(&dir).unwrap();
    let marker = mur::retention::marker::Marker {
        project_dir: w.proj.clone(),
        launcher_pid: launcher.id(),
        launcher_start: mur::proc::start_time(launcher.id()).unwrap().to_string(),
    };
    marker.write(&dir).unwrap();
    let out = w.mur().args(["stop", frm]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(launcher.wait().unwrap().signal(), Some(libc::SIGTERM));
    let again = w.mur().args(["stop", frm]).output().unwrap();
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(
        said.contains("already ended") || said.contains("E-RUN-003"),
        "{said}"
    );
}

#[test]
fn watch_session_streams_every_trace_record_until_the_door_closes() {
    use std::io::{Read, Write};
    let w = World::new();
    let (s, ready) = serving_demo(&w);
    let id = ready["session_id"].as_str().unwrap().to_string();
    let door = ready["door"].as_str().unwrap().to_string();
    let token = w.token(&id);
    let addr = door.trim_start_matches("http://").to_string();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"murmur.WatchSession","params":{}}"#;
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // The headers come once the watcher is subscribed.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    assert!(String::from_utf8_lossy(&head).starts_with("HTTP/1.1 200"));
    let sent = rpc(
        &door,
        &token,
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Watch me."}]}}),
    );
    assert_eq!(
        sent["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // Every record of the task reaches the watcher as it is written.
    let mut events = String::new();
    let mut chunk = [0u8; 4096];
    while ![
        "a2a_task_received",
        "inference_turn",
        "\"to\":\"completed\"",
    ]
    .iter()
    .all(|k| events.contains(k))
    {
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "the stream ended early: {events}");
        events.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
    s.signal(Signal::SIGTERM);
    // The stream ends when the door shuts down.
    let mut rest = String::new();
    let _ = stream.read_to_string(&mut rest);
    assert_eq!(s.wait(Duration::from_secs(30)).0, 0);
    events.push_str(&rest);
    assert!(!events.contains(&token));
    // Nothing written before the door shut is lost: the watcher got every record
    // from its first to session_end, in order, the same as the trace holds.
    let watched: Vec<Value> = events
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).unwrap()["result"].clone())
        .collect();
    let first = watched.first().expect("no event watched")["seq"]
        .as_u64()
        .unwrap();
    let trace: Vec<Value> = w
        .trace(&id)
        .into_iter()
        .filter(|r| r["seq"].as_u64().unwrap() >= first)
        .collect();
    assert_eq!(watched, trace, "{events}");
    assert_eq!(watched.last().unwrap()["type"], "session_end");
}

#[test]
fn input_required_then_the_callers_reply_completes_the_task() {
    let w = World::new();
    let asker = "read line\necho '{\"type\":\"input_required\",\"question\":\"Which file?\"}'\nread reply\necho '{\"type\":\"message\",\"text\":\"Done with it.\"}'\n";
    w.install("asker", "", Some(asker));
    let mut cmd = w.run("asker");
    cmd.arg("--json");
    let s = Session::spawn(cmd);
    let ready = s.ready();
    let id = ready["session_id"].as_str().unwrap().to_string();
    let door = ready["door"].as_str().unwrap().to_string();
    let token = w.token(&id);
    let asked = rpc(
        &door,
        &token,
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Fix it."}]}}),
    );
    let task = asked["result"]["task"].clone();
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    assert_eq!(w.result(&id), "input-required: Which file?\n");
    let done = rpc(
        &door,
        &token,
        "SendMessage",
        json!({"message": {"messageId": "m2", "role": "ROLE_USER", "taskId": task["id"],
               "contextId": task["contextId"], "parts": [{"text": "main.rs"}]}}),
    );
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    assert_eq!(w.result(&id), "completed\nDone with it.\n");
    let stop = rpc(&door, &token, "murmur.StopSession", json!({}));
    assert_eq!(stop["result"]["stopping"], true, "{stop}");
    let (code, _) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0);
    let moves: Vec<String> = w
        .trace(&id)
        .iter()
        .filter(|r| r["type"] == "task_state")
        .map(|r| {
            format!(
                "{}->{}",
                r["from"].as_str().unwrap_or("-"),
                r["to"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        moves,
        [
            "submitted->working",
            "working->input_required",
            "input_required->working",
            "working->completed"
        ]
    );
}

#[test]
fn trace_retain_max_sessions_bounds_the_capsule_s_sessions() {
    let w = World::new();
    w.install("demo", "trace:\n  retain:\n    max_sessions: 2\n", None);
    let mut last = String::new();
    for _ in 0..3 {
        let out = w.run_task("demo", "Again.");
        assert_eq!(out.status.code(), Some(0));
        last = String::from_utf8_lossy(&out.stderr).to_string();
    }
    let ids = w.sessions();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(
        last.contains("[mur run] retention: removed session ses_"),
        "{last}"
    );
    assert!(last.contains("(max_sessions)"), "{last}");
}

#[test]
fn a_component_of_no_world_is_refused_at_install_naming_the_file() {
    let w = World::new();
    let src = w.dir.path().join("src").join("tooled");
    std::fs::create_dir_all(src.join("tools")).unwrap();
    // A component's header and nothing more: it exports no world.
    std::fs::write(src.join("tools/search.wasm"), b"\0asm\x0d\0\x01\0").unwrap();
    std::fs::write(
        src.join("murmur.yaml"),
        "name: tooled\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n\
         tools:\n  - name: search\n    path: tools/search.wasm\n    description: Searches.\n",
    )
    .unwrap();
    let out = w.mur().arg("install").arg(&src).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("E-CMP-002"), "{stderr}");
    assert!(stderr.contains("tools/search.wasm"), "{stderr}");
    // Nor does W-RUN-009 exist any more: components run.
    let explain = w.mur().args(["explain", "W-RUN-009"]).output().unwrap();
    assert_eq!(explain.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&explain.stderr).contains("no code `W-RUN-009`"));
}

/// The test support's guard: a session whose handle a failing test drops before
/// `wait` is ended and reaped, not left running.
#[test]
fn a_dropped_session_handle_leaves_no_session_running() {
    let w = World::new();
    let (s, _) = serving_demo(&w);
    let pid = s.pid();
    drop(s);
    // Reaped by the guard: the pid no longer names a process.
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "session {pid} still runs"
    );
}

/// The HTTP status a door answers `SendMessage` with, presenting `token`.
fn status_with(door: &str, token: &str) -> u16 {
    let params = serde_json::json!({"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}});
    rpc_status(door, token, "SendMessage", params).0
}

#[test]
fn a_run_with_a_channel_but_no_lifeline_runs_as_any_mur_run() {
    // 1d: the spec's member started by hand. Its channel holds real credentials, but
    // without a lifeline it joins nothing: no formation_id, no formation tokens.
    use crate::support::session::{Launcher, Session, installed_sha};
    let w = World::new();
    w.install(
        "demo",
        "exports:\n  peer_tasks:\n    accept: true\nnetwork:\n  authentication: {}\n",
        None,
    );
    let mut l = Launcher::new();
    let creds = l.credentials(&w, "coder", &[], &installed_sha(&w, "demo"));
    l.send(creds);
    let mut cmd = w.mur();
    cmd.args([
        "run",
        "--capsule",
        "local/demo",
        "--capsule-version",
        "1.0.0",
        "--json",
    ]);
    l.attach(&mut cmd, false);
    let s = Session::spawn(cmd);
    let ready = s.ready();
    assert!(ready.get("formation_id").is_none(), "{ready}");
    let id = ready["session_id"].as_str().unwrap().to_string();
    let door = ready["door"].as_str().unwrap();
    // A token the formation's key issued for a call to this member is not taken.
    assert_eq!(
        status_with(door, l.key.issue("lead", "coder").expose()),
        401
    );
    let trace = w.trace(&id);
    assert!(trace[0].get("formation_id").is_none(), "{}", trace[0]);
    assert!(trace[0].get("formation_member").is_none());
    // Its running record names the formation, so mur stop <frm_id> reaches it.
    let stop = w.mur().args(["stop", &l.formation()]).output().unwrap();
    assert_eq!(
        stop.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr.matches("W-RUN-007").count(), 1, "{stderr}");
}
