//! Human output, held whole by insta snapshots (tests/it/snapshots/): `mur doctor`,
//! `mur trace show`, `mur ps` and `mur explain`; a formation's and a lone session's
//! banners as a non-terminal sees them (no progress), `mur ps -a`, `mur send`, `mur
//! sync`, a bare capsule name's suggestion, the version the run inferred, and W-RUN-010.
//! Ids, pids, ports, times, digests and the world's paths are filtered to placeholders
//! so that a snapshot changes only when the text does.

use std::process::Output;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::support::session::{SLEEPER, Session};
use crate::support::{World, stderr, stdout};

/// Runs `f` with the filters that make `w`'s output stable.
pub fn filtered(w: &World, f: impl FnOnce()) {
    let root = regex_escape(&w.root.to_string_lossy());
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.add_filter(&root, "[ROOT]");
    settings.add_filter(r"ses_[0-9a-f]{32}", "[SESSION]");
    settings.add_filter(r"tsk_[0-9a-f]{32}", "[TASK]");
    settings.add_filter(r"frm_[0-9a-f]{32}", "[FORMATION]");
    // `mur ps` shows ids as their shortest unique prefix, padded.
    settings.add_filter(r"ses_[0-9a-f]{12,31} *", "[SESSION] ");
    settings.add_filter(r"frm_[0-9a-f]{12,31} *", "[FORMATION] ");
    settings.add_filter(r"sha256:[0-9a-f]{64}", "sha256:[SHA256]");
    settings.add_filter(r"\b[0-9a-f]{64}\b", "[SHA256]");
    settings.add_filter(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z *", "[STARTED] ");
    settings.add_filter(r"\b\d{2}:\d{2}:\d{2}\.\d{3}\b", "[TIME]");
    settings.add_filter(r"\bpid \d+", "pid [PID]");
    // `mur ps` pads its columns: a pid and a door URL of any width become one token.
    settings.add_filter(r" +\d+  (local/)", " [PID]  $1");
    settings.add_filter(r"http://127\.0\.0\.1:\d+/? *", "[DOOR] ");
    settings.add_filter(r"127\.0\.0\.1:\d+ *", "[DOOR] ");
    settings.add_filter(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d *", "[STARTED] ");
    settings.add_filter(r"\(\d+\.\d s\)", "([ELAPSED])");
    settings.bind(f);
}

/// `mur ps`'s columns are as wide as their widest cell (a pid, a port): every run of
/// spaces becomes two.
fn columns(f: impl FnOnce()) {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(" {2,}", "  ");
    settings.bind(f);
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

/// Runs `mur` with `args` in the world's project and expects `code`.
pub fn run(w: &World, args: &[&str], code: i32) -> Output {
    let out = w.mur().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
    out
}

/// stderr without the one warning that depends on who runs the tests (W-SEC-013, root).
pub fn stderr_as_user(out: &Output) -> String {
    let text = stderr(out);
    let mut lines = Vec::new();
    let mut skip_hint = false;
    for line in text.lines() {
        if line.starts_with("warning[W-SEC-013]") {
            skip_hint = true;
            continue;
        }
        if skip_hint && line.starts_with("  = hint:") {
            skip_hint = false;
            continue;
        }
        skip_hint = false;
        lines.push(line);
    }
    lines.join("\n")
}

/// A world holding the scaffolded team (`mur new --roster team`), installed; the
/// project is `team/`.
pub fn team() -> (World, std::path::PathBuf) {
    let w = World::new();
    run_in(&w, &w.proj, &["new", "--roster", "team"]);
    let team = w.proj.join("team");
    run_in(&w, &team, &["install", "lead", "helper"]);
    (w, team)
}

pub fn run_in(w: &World, cwd: &std::path::Path, args: &[&str]) -> Output {
    let out = w.mur_in(cwd).args(args).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

#[test]
fn doctor_of_an_admitted_roster() {
    let (w, team) = team();
    let out = run_in(&w, &team, &["doctor"]);
    filtered(&w, || insta::assert_snapshot!(stdout(&out)));
}

#[test]
fn doctor_of_a_refused_roster() {
    let (w, team) = team();
    std::fs::remove_dir_all(team.join(".murmur/artifacts")).unwrap();
    let out = w.mur_in(&team).arg("doctor").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    filtered(&w, || insta::assert_snapshot!(stderr_as_user(&out)));
}

#[test]
fn trace_show_of_a_finished_session() {
    let (w, team) = team();
    let task = [
        "run",
        "--capsule",
        "local/team-lead",
        "--capsule-version",
        "0.1.0",
    ];
    run_in(&w, &team, &[&task[..], &["--task", "hello"]].concat());
    let ids = w.sessions();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let out = run(&w, &["trace", "show", &ids[0]], 0);
    filtered(&w, || insta::assert_snapshot!(stdout(&out)));
}

#[test]
fn ps_of_one_live_session() {
    let w = World::new();
    w.install("sleeper", "", Some(SLEEPER));
    let mut cmd = w.run("sleeper");
    cmd.arg("--json");
    let s = Session::spawn(cmd);
    s.ready();
    let out = run(&w, &["ps"], 0);
    s.signal(Signal::SIGTERM);
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "idle at SIGTERM: {stderr}");
    filtered(&w, || columns(|| insta::assert_snapshot!(stdout(&out))));
}

#[test]
fn ps_with_nothing_running() {
    let w = World::new();
    let out = run(&w, &["ps"], 0);
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr_as_user(&out), "no running sessions");
}

#[test]
fn explain_one_code() {
    let w = World::new();
    let out = run(&w, &["explain", "E-RUN-001"], 0);
    filtered(&w, || insta::assert_snapshot!(stdout(&out)));
}

#[test]
fn explain_an_unknown_code() {
    let w = World::new();
    let out = w.mur().args(["explain", "E-NOPE-999"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    filtered(&w, || insta::assert_snapshot!(stderr_as_user(&out)));
}

/// stdout, then stderr as the user sees it, under headings.
fn both(out: &std::process::Output) -> String {
    format!(
        "--- stdout\n{}--- stderr\n{}",
        stdout(out),
        stderr_as_user(out)
    )
}

#[test]
fn a_formation_run_off_a_terminal() {
    let (w, team) = team();
    let out = run_in(&w, &team, &["run", "--roster", "--task", "Plan a picnic."]);
    // No progress line and no terminal control off a terminal: what the snapshot holds.
    assert!(!stderr(&out).contains('\x1b') && !stderr(&out).contains('\r'));
    filtered(&w, || insta::assert_snapshot!(both(&out)));
    // Then every session it ran, newest first.
    let ps = run_in(&w, &team, &["ps", "-a"]);
    filtered(&w, || {
        columns(|| insta::assert_snapshot!("ps_all_after_a_formation", stdout(&ps)))
    });
}

#[test]
fn a_lone_session_whose_version_the_store_decides() {
    let (w, team) = team();
    let out = run_in(
        &w,
        &team,
        &["run", "--capsule", "local/team-lead", "--task", "hello"],
    );
    filtered(&w, || insta::assert_snapshot!(both(&out)));
}

#[test]
fn a_bare_capsule_name_gets_a_suggestion() {
    let (w, team) = team();
    let out = w
        .mur_in(&team)
        .args([
            "run",
            "--capsule",
            "team-lead",
            "--capsule-version",
            "0.1.0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    filtered(&w, || insta::assert_snapshot!(stderr_as_user(&out)));
}

#[test]
fn send_to_a_running_formation() {
    let (w, team) = team();
    let (mut launcher, ready) = w.launch_json(&team);
    let frm = ready["formation_id"].as_str().unwrap().to_string();
    let out = run(&w, &["send", &frm, "Plan a picnic."], 0);
    assert!(run(&w, &["stop", &frm], 0).status.success());
    assert_eq!(launcher.wait().unwrap().code(), Some(0));
    filtered(&w, || insta::assert_snapshot!(both(&out)));
}

#[test]
fn sync_after_one_edit() {
    let (w, team) = team();
    run_in(&w, &team, &["lock"]);
    let instructions = team.join("lead/INSTRUCTIONS.md");
    let mut text = std::fs::read_to_string(&instructions).unwrap();
    text.push_str("\nBe brief.\n");
    std::fs::write(&instructions, text).unwrap();
    let out = run_in(&w, &team, &["sync"]);
    filtered(&w, || insta::assert_snapshot!(both(&out)));
}

#[test]
fn a_native_harness_s_warning() {
    let w = World::new();
    let harness = "read line\necho '{\"type\":\"message\",\"text\":\"done\"}'\n";
    w.install("native", "", Some(harness));
    // Tier `landlock` forced, so the line is the same on a machine without namespaces.
    let out = w
        .run("native")
        .env("MUR_TEST_CONFINE_TIER", "landlock")
        .args(["--task", "Go."])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    filtered(&w, || insta::assert_snapshot!(both(&out)));
}
