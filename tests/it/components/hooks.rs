//! hooks[]: every event runs its hooks; a before_tool hook refuses; asynchronous
//! hooks are drained at the end, bounded.

use super::*;

fn hooks_yaml(events: &[&str], is_async: bool) -> String {
    let mut y = String::from("hooks:\n");
    for e in events {
        y.push_str(&format!(
            "  - event: {e}\n    path: hooks/log.wasm\n    async: {is_async}\n"
        ));
    }
    y
}

const EVENTS: [&str; 6] = [
    "session_start",
    "task_received",
    "before_tool",
    "after_tool",
    "task_end",
    "session_end",
];

#[test]
fn every_event_runs_its_hook_and_before_tool_may_refuse_the_call() {
    let w = World::new();
    let extra = format!(
        "{}{}",
        tools_yaml(&[("echo", "tools/echo.wasm")]),
        hooks_yaml(&EVENTS, false)
    );
    install(
        &w,
        "hooked",
        &extra,
        &[
            ("tools/echo.wasm", "tool-echo"),
            ("hooks/log.wasm", "test-hook"),
        ],
        &[
            call("c1", "echo", json!({"text": "fine"})),
            call("c2", "echo", json!({"text": "refuse-me"})),
        ],
    );
    let trace = ran(&w, &w.run_task("hooked", "Hook me."));
    let r = results(&trace);
    assert_eq!(r["c1"], (false, "fine".to_string()));
    let (err, text) = &r["c2"];
    assert!(
        *err && text.contains("the hook refuses arguments that say refuse-me"),
        "{text}"
    );
    let log = std::fs::read_to_string(w.proj.join("hooks.log")).unwrap();
    let events: Vec<&str> = log.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(
        events,
        [
            "session_start",
            "task_received",
            "before_tool",
            "after_tool",
            "before_tool",
            "task_end",
            "session_end"
        ],
        "{log}"
    );
    // Each line carries its event's record.
    let record = |event: &str| -> Value {
        let line = log.lines().find(|l| l.starts_with(event)).unwrap();
        serde_json::from_str(line.split_once(' ').unwrap().1).unwrap()
    };
    assert_eq!(record("task_received")["text"], "Hook me.");
    assert_eq!(record("after_tool")["output"], "fine");
    assert_eq!(record("task_end")["state"], "completed");
    assert_eq!(record("session_end")["exit_code"], 0);
}

#[test]
fn asynchronous_hooks_are_drained_at_the_end_and_a_spinning_one_does_not_hold_it() {
    let w = World::new();
    // The end allows 5 s scaled (0.25 s): compiled beforehand (a synchronous hook of
    // the same file), so that a cold compile in a debug build does not use it up.
    install(
        &w,
        "warm",
        &hooks_yaml(&["task_end"], false),
        &[("hooks/log.wasm", "test-hook")],
        &[],
    );
    ran(&w, &w.run_task("warm", "Warm up."));
    std::fs::remove_file(w.proj.join("hooks.log")).unwrap();
    install(
        &w,
        "later",
        &hooks_yaml(&["task_received", "session_end"], true),
        &[("hooks/log.wasm", "test-hook")],
        &[],
    );
    let out = w.run_task("later", "Note it.");
    ran(&w, &out);
    let log = std::fs::read_to_string(w.proj.join("hooks.log")).unwrap();
    assert!(log.lines().any(|l| l.starts_with("task_received")), "{log}");
    assert!(log.lines().any(|l| l.starts_with("session_end")), "{log}");
    // The task_received hook spins on this task: the session still ends, the hook
    // stopped by its time bound, and says so.
    std::fs::remove_file(w.proj.join("hooks.log")).unwrap();
    let started = std::time::Instant::now();
    let out = w.run_task("later", "hook-spin");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("W-CMP-001"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn the_wind_down_after_sigterm_runs_the_session_end_hooks() {
    let w = World::new();
    install(
        &w,
        "ending",
        &hooks_yaml(&["session_start", "session_end"], false),
        &[("hooks/log.wasm", "test-hook")],
        &[],
    );
    let session = crate::support::session::Session::spawn({
        let mut cmd = w.run("ending");
        cmd.arg("--json");
        cmd
    });
    session.ready();
    // The synchronous session_start hook ran before the readiness line.
    let log = std::fs::read_to_string(w.proj.join("hooks.log")).unwrap();
    assert!(log.starts_with("session_start "), "{log}");
    session.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, stderr) = session.wait(std::time::Duration::from_secs(20));
    assert_eq!(code, 0, "{stderr}");
    let log = std::fs::read_to_string(w.proj.join("hooks.log")).unwrap();
    let end = log
        .lines()
        .find(|l| l.starts_with("session_end "))
        .unwrap_or_else(|| panic!("{log}"));
    let record: Value = serde_json::from_str(end.split_once(' ').unwrap().1).unwrap();
    assert_eq!(record["exit_code"], 0, "{end}");
}
