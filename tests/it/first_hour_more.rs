//! A user's first hour (issue 20), continued: following and listing what ran (`mur ps
//! -a`, `mur trace show --follow/--json`), giving a running formation a task (`mur
//! send`), finding the project from a member's folder, guessing capsule names and
//! versions, `mur sync`, completions and the man page, and the native-harness warning.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::first_hour::team;
use crate::support::World;

#[test]
fn completions_and_the_man_page_name_every_command() {
    let w = World::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = w.mur().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        for command in ["run", "install", "trace", "doctor", "completions"] {
            assert!(script.contains(command), "{shell} completes {command}");
        }
        // Each command's flags, added to the parser only when it is typed, too.
        for flag in ["capsule-version", "follow"] {
            assert!(script.contains(flag), "{shell} completes --{flag}");
        }
    }
    let bad = w.mur().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let man = w.mur().arg("man").output().unwrap();
    assert!(man.status.success());
    let page = String::from_utf8_lossy(&man.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH mur"),
        "{page}"
    );
    assert!(
        page.contains("completions") && page.contains("doctor"),
        "{page}"
    );
}

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
    assert!(text.contains(&format!("{frm} (helper)")), "{text}");
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

#[test]
fn a_bare_or_misversioned_capsule_name_gets_a_guess() {
    let (w, project) = team();
    let run = |name: &str, version: &str| {
        let out = w
            .mur_in(&project)
            .args(["run", "--capsule", name, "--capsule-version", version])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let bare = run("team-lead", "0.1.0");
    assert!(bare.contains("error[E-RUN-001]"), "{bare}");
    assert!(bare.contains("did you mean `local/team-lead`?"), "{bare}");
    let other = run("local/team-lead", "9.9.9");
    assert!(
        other.contains("local/team-lead is installed at 0.1.0"),
        "{other}"
    );
    let unknown = run("local/nothing", "1.0.0");
    assert!(!unknown.contains("did you mean"), "{unknown}");
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

#[test]
fn commands_find_the_project_from_a_member_s_folder() {
    let (w, project) = team();
    let lead = project.join("lead");
    // mur doctor finds ../roster.yaml, mur ls ../.murmur/.
    let doctor = w.mur_in(&lead).arg("doctor").output().unwrap();
    assert_eq!(
        doctor.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&doctor.stderr)
    );
    assert!(String::from_utf8_lossy(&doctor.stdout).contains("lead"));
    let ls = w.mur_in(&lead).args(["ls", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&ls.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    // mur lock writes the project's murmur.lock, not one in the member's folder.
    let lock = w.mur_in(&lead).arg("lock").output().unwrap();
    assert!(
        lock.status.success(),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );
    assert!(project.join("murmur.lock").is_file());
    assert!(!lead.join("murmur.lock").exists());
    // mur run --roster launches the project's formation from deeper still.
    let deeper = lead.join("notes");
    std::fs::create_dir_all(&deeper).unwrap();
    let run = w
        .mur_in(&deeper)
        .args(["run", "--roster", "--task", "Say hello."])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Outside any project nothing is found: the folder itself.
    let elsewhere = w.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let ls = w
        .mur_in(&elsewhere)
        .args(["ls", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&ls.stdout).unwrap(),
        serde_json::json!([])
    );
}

#[test]
fn the_capsule_version_may_be_left_out_when_the_lock_or_one_install_decides() {
    let (w, project) = team();
    let run = |w: &World| {
        w.mur_in(&project)
            .args(["run", "--capsule", "local/team-helper", "--task", "Say hi."])
            .output()
            .unwrap()
    };
    let out = run(&w);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("local/team-helper 0.1.0: the only version installed"),
        "{stderr}"
    );
    // A second version: now the lock must decide.
    let helper = project.join("helper/murmur.yaml");
    let text = std::fs::read_to_string(&helper).unwrap();
    std::fs::write(&helper, text.replace("version: 0.1.0", "version: 0.2.0")).unwrap();
    let install = w
        .mur_in(&project)
        .args(["install", "helper"])
        .output()
        .unwrap();
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let out = run(&w);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[E-RUN-001]"), "{stderr}");
    assert!(stderr.contains("installed at 0.1.0, 0.2.0"), "{stderr}");
    // roster.yaml names 0.1.0, so the lock pins it.
    let lock = w.mur_in(&project).arg("lock").output().unwrap();
    assert!(
        lock.status.success(),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );
    let out = run(&w);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("local/team-helper 0.1.0: the version murmur.lock pins"),
        "{stderr}"
    );
}

#[test]
fn sync_is_the_edit_install_lock_loop_in_one_command() {
    let (w, project) = team();
    // Without murmur.lock, sync writes none.
    let out = w.mur_in(&project).arg("sync").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("matches its source folder"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        !project.join("murmur.lock").exists(),
        "admission and sync never make a lock"
    );
    assert!(
        w.mur_in(&project)
            .arg("lock")
            .output()
            .unwrap()
            .status
            .success()
    );
    // One edit to a member's source.
    let instructions = project.join("lead/INSTRUCTIONS.md");
    let mut text = std::fs::read_to_string(&instructions).unwrap();
    text.push_str("\nBe brief.\n");
    std::fs::write(&instructions, text).unwrap();
    let out = w
        .mur_in(&project.join("lead"))
        .arg("sync")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("lead: reinstalled local/team-lead 0.1.0"),
        "{stdout}"
    );
    assert!(!stdout.contains("helper: reinstalled"), "{stdout}");
    assert!(
        stdout.contains("murmur.lock: pinned local/team-lead 0.1.0"),
        "{stdout}"
    );
    let run = w
        .mur_in(&project)
        .args(["run", "--roster", "--task", "Say hello."])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let again = w.mur_in(&project).arg("sync").output().unwrap();
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(
        stdout.contains("matches its source folder") && !stdout.contains("pinned"),
        "{stdout}"
    );
}

#[test]
fn a_native_harness_is_told_once_that_capabilities_do_not_confine_it() {
    let w = World::new();
    let harness = "read line\necho '{\"type\":\"message\",\"text\":\"done\"}'\n";
    w.install("native", "", Some(harness));
    w.install("model", "", None);
    let native = w.run_task("native", "Go.");
    let stderr = String::from_utf8_lossy(&native.stderr);
    assert!(native.status.success(), "{stderr}");
    assert_eq!(stderr.matches("warning[W-RUN-010]").count(), 1, "{stderr}");
    assert!(
        stderr.contains("runs a native harness (`sh harness.sh`)"),
        "{stderr}"
    );
    let builtin = w.run_task("model", "Go.");
    assert!(!String::from_utf8_lossy(&builtin.stderr).contains("W-RUN-010"));
}

#[test]
fn a_formation_member_on_a_native_harness_is_told_once_at_launch() {
    let w = World::new();
    assert!(
        w.mur()
            .args(["new", "--roster", "team"])
            .status()
            .unwrap()
            .success()
    );
    let project = w.proj.join("team");
    // helper's agent becomes a native harness that answers every task at once.
    let helper = project.join("helper");
    let manifest = std::fs::read_to_string(helper.join("murmur.yaml"))
        .unwrap()
        .replace(
            "transport: builtin",
            "transport: process\n  command: [\"sh\", \"harness.sh\"]",
        );
    std::fs::write(helper.join("murmur.yaml"), manifest).unwrap();
    std::fs::write(
        helper.join("harness.sh"),
        "read line\necho '{\"type\":\"message\",\"text\":\"done by hand\"}'\n",
    )
    .unwrap();
    let install = w
        .mur_in(&project)
        .args(["install", "lead", "helper"])
        .output()
        .unwrap();
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let out = w
        .mur_in(&project)
        .args(["run", "--roster", "--task", "Say hello."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("done by hand"));
    // Once, by the member whose harness it is, behind its prefix; lead (builtin) says nothing.
    assert_eq!(stderr.matches("W-RUN-010").count(), 1, "{stderr}");
    assert!(
        stderr.contains("[helper] warning[W-RUN-010]: local/team-helper runs a native harness (`sh harness.sh`); capabilities.network.allow: [] binds WASM components"),
        "{stderr}"
    );
}

/// The search for the project stops below the home folder: its `.murmur/` is the
/// global store, never a project, so a folder in home with no marker is its own project.
#[test]
fn the_project_search_stops_below_home() {
    let w = World::new();
    let src = w.root.join("src/c");
    crate::support::write_capsule(&src, "c", "1.0.0");
    let global = w
        .mur()
        .args(["install", "--global"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        global.status.success(),
        "{}",
        String::from_utf8_lossy(&global.stderr)
    );
    assert!(
        w.home
            .join(".murmur/artifacts/local/c/1.0.0.mur.zip")
            .is_file()
    );
    let work = w.home.join("work/notes");
    std::fs::create_dir_all(&work).unwrap();
    let install = w.mur_in(&work).arg("install").arg(&src).output().unwrap();
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    // Into the folder's own project store, not home's (which would be the global one).
    assert!(
        work.join(".murmur/artifacts/local/c/1.0.0.mur.zip")
            .is_file()
    );
    let ls = w.mur_in(&work).args(["ls", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&ls.stdout).unwrap();
    let stores: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["store"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(stores, ["project", "global"], "{listed}");
}

#[test]
fn type_errors_are_worded_alike_in_the_roster_and_the_manifest() {
    let w = World::new();
    let refused = |cmd: &mut std::process::Command| {
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .find(|l| l.starts_with("error["))
            .unwrap()
            .to_string()
    };
    std::fs::write(
        w.proj.join("roster.yaml"),
        "roster_version: abc\nmembers:\n  - {name: a, capsule: local/c, version: 1.0.0, entry: true}\n",
    )
    .unwrap();
    let roster = refused(w.mur().arg("doctor"));
    let capsule = w.proj.join("c");
    std::fs::create_dir_all(&capsule).unwrap();
    std::fs::write(
        capsule.join("murmur.yaml"),
        "name: c\nversion: 1.0.0\ndescription: a\nagent:\n  transport: builtin\ninference:\n  max_turns: abc\n",
    )
    .unwrap();
    let manifest = refused(w.mur().args(["pack", "c"]));
    // One shape: "`<field>` must be <what>, not <what it is>".
    assert!(
        roster.contains("`roster_version` must be the integer 1, not `abc`"),
        "{roster}"
    );
    assert!(
        manifest.contains("`inference.max_turns` must be a whole number, not `abc`"),
        "{manifest}"
    );
    std::fs::write(
        capsule.join("murmur.yaml"),
        "name: c\nversion: 1.0.0\ndescription: [a]\nagent:\n  transport: builtin\n",
    )
    .unwrap();
    let listed = refused(w.mur().args(["pack", "c"]));
    assert!(
        listed.contains("`description` must be a string, not a list"),
        "{listed}"
    );
}
