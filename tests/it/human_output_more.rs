//! The first hour's human output (issue 20), held whole by insta snapshots
//! (tests/it/snapshots/): the formation's and a lone session's banners as a
//! non-terminal sees them (no progress), `mur ps -a`, `mur send`, `mur sync`, a bare
//! capsule name's suggestion, the version the run inferred, and W-RUN-010. Filtered as
//! human_output.rs filters.

use crate::human_output::{filtered, run, run_in, stderr_as_user, team};
use crate::support::{World, stderr, stdout};

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
        insta::assert_snapshot!("ps_all_after_a_formation", stdout(&ps))
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
    let out = w.run_task("native", "Go.");
    assert!(out.status.success(), "{}", stderr(&out));
    filtered(&w, || insta::assert_snapshot!(both(&out)));
}
