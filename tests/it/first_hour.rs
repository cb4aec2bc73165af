//! A user's first hour (issue 20): `mur run --roster` says what runs (the banner, the
//! `--json` readiness object and outcome), refuses flags it cannot honour, `-q`,
//! `-v`/RUST_LOG, progress only on a terminal, and the root warning's setting.
//! Real members: the scaffolded two-member team, installed for real.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::support::World;

/// `mur new --roster team` and `mur install lead helper` in a world.
pub fn team() -> (World, std::path::PathBuf) {
    let w = World::new();
    let ok = crate::support::ok;
    ok(w.mur().args(["new", "--roster", "team"]));
    let project = w.proj.join("team");
    ok(w.mur_in(&project).args(["install", "lead", "helper"]));
    (w, project)
}

pub fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn json_prints_one_readiness_object_then_the_outcome() {
    let (w, project) = team();
    let out = w
        .mur_in(&project)
        .args(["run", "--roster", "--json", "--task", "Say hello."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = lines(&out.stdout);
    assert_eq!(stdout.len(), 2, "exactly two lines: {stdout:#?}");
    let ready: Value = serde_json::from_str(&stdout[0]).unwrap();
    assert_eq!(ready["type"], "formation_ready");
    let frm = ready["formation_id"].as_str().unwrap();
    assert!(frm.starts_with("frm_"), "{ready}");
    let members = ready["members"].as_array().unwrap();
    let names: Vec<&str> = members
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lead", "helper"], "roster order");
    assert_eq!(members[0]["entry"], true);
    assert_eq!(members[1]["entry"], false);
    for m in members {
        assert!(m["session_id"].as_str().unwrap().starts_with("ses_"), "{m}");
        assert!(
            m["door"].as_str().unwrap().starts_with("http://127.0.0.1:"),
            "{m}"
        );
    }
    // Each session id is one the member's own trace names.
    for m in members {
        let trace = w.trace(m["session_id"].as_str().unwrap());
        assert_eq!(trace[0]["formation_id"], frm);
        assert_eq!(trace[0]["formation_member"], m["name"]);
    }
    let outcome: Value = serde_json::from_str(&stdout[1]).unwrap();
    assert_eq!(outcome["type"], "outcome");
    assert_eq!(outcome["formation_id"], frm);
    assert_eq!(outcome["member"], "lead");
    assert_eq!(outcome["session_id"], members[0]["session_id"]);
    assert_eq!(outcome["state"], "completed");
    assert_eq!(outcome["exit_code"], 0);
    let lead = members[0]["session_id"].as_str().unwrap();
    assert_eq!(outcome["result"].as_str().unwrap(), w.result(lead));
    assert!(outcome["task_id"].is_string());
    // The banner is for people: not with --json.
    assert!(!stderr.contains("is up"), "{stderr}");
}

#[test]
fn people_see_the_formation_and_every_member_on_stderr() {
    let (w, project) = team();
    let out = w
        .mur_in(&project)
        .args(["run", "--roster", "--task", "Say hello."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let sessions = w.sessions();
    assert_eq!(sessions.len(), 2);
    let up = stderr
        .lines()
        .position(|l| l.starts_with("[mur run] formation frm_") && l.contains(" is up ("))
        .unwrap_or_else(|| panic!("no banner in {stderr}"));
    let banner: Vec<&str> = stderr.lines().skip(up).take(4).collect();
    assert!(banner[1].contains("lead (entry)"), "{banner:#?}");
    assert!(banner[2].contains("helper"), "{banner:#?}");
    for id in &sessions {
        assert!(
            banner[1].contains(id.as_str()) || banner[2].contains(id.as_str()),
            "{id} in {banner:#?}"
        );
    }
    let frm = banner[0].split_whitespace().nth(3).unwrap();
    assert!(
        banner[3].contains(&format!("mur trace show -f {frm}")),
        "{banner:#?}"
    );
    // The result is on stdout, as it always was.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("completed\n"), "{stdout}");
    // -q: no banner, the result still.
    let quiet = w
        .mur_in(&project)
        .args(["-q", "run", "--roster", "--task", "Say hello."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert_eq!(quiet.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("is up"), "{stderr}");
    assert!(String::from_utf8_lossy(&quiet.stdout).starts_with("completed\n"));
}

#[test]
fn json_without_a_task_prints_the_readiness_object_only() {
    let (w, project) = team();
    let launcher = w
        .mur_in(&project)
        .args(["run", "--roster", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut launcher = crate::support::KillOnDrop::pid(launcher);
    let mut stdout = BufReader::new(launcher.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let ready: Value = serde_json::from_str(&first).unwrap();
    let frm = ready["formation_id"].as_str().unwrap();
    assert_eq!(ready["pid"], launcher.id());
    // `mur ps` in the project lists each member the readiness object named, in its
    // formation (a peer works under ~/.murmur/formations/, its formation here).
    let ps = w.mur_in(&project).args(["ps", "--json"]).output().unwrap();
    let live: Value = serde_json::from_slice(&ps.stdout).unwrap();
    for m in ready["members"].as_array().unwrap() {
        let listed = live
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["session_id"] == m["session_id"] && r["formation_id"] == frm);
        assert!(listed, "{m} in {live}");
    }
    let stop = w.mur().args(["stop", frm]).output().unwrap();
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "", "nothing after the readiness object");
    assert_eq!(launcher.wait().unwrap().code(), Some(0));
}

#[test]
fn flags_the_roster_cannot_honour_are_refused_and_start_nothing() {
    let (w, project) = team();
    for flags in [
        &["--lifecycle-after-task", "sleep"][..],
        &["--lifecycle-task-acceptance", "queue"],
        &["--lifecycle-idle-timeout", "5"],
        &["--capsule", "local/x", "--capsule-version", "1.0.0"],
    ] {
        let out = w
            .mur_in(&project)
            .args(["run", "--roster"])
            .args(flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flags:?}: {stderr}");
        assert!(stderr.contains("error[E-RUN-006]"), "{flags:?}: {stderr}");
        assert!(stderr.contains(flags[0]), "{stderr}");
    }
    assert!(w.sessions().is_empty());
    assert!(!w.home.join(".murmur/formations").exists());
}

#[test]
fn a_lone_session_s_json_task_ends_with_its_outcome_line() {
    let w = World::new();
    crate::support::write_capsule(&w.proj, "solo", "1.0.0");
    let out = w
        .mur()
        .args(["run", "--json", "--task", "Say hello."])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = lines(&out.stdout);
    assert_eq!(stdout.len(), 2, "{stdout:#?}");
    let ready: Value = serde_json::from_str(&stdout[0]).unwrap();
    assert_eq!(ready["type"], "ready");
    let outcome: Value = serde_json::from_str(&stdout[1]).unwrap();
    assert_eq!(outcome["type"], "outcome");
    assert_eq!(outcome["session_id"], ready["session_id"]);
    assert_eq!(outcome["state"], "completed");
    let id = ready["session_id"].as_str().unwrap();
    assert_eq!(outcome["result"].as_str().unwrap(), w.result(id));
    assert!(outcome.get("formation_id").is_none() && outcome.get("exit_code").is_none());
}

/// Runs `cmd` with stderr on a terminal (a pty's slave end) and returns what the
/// terminal received, once the command exited.
fn on_a_terminal(mut cmd: Command) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    let pty = nix::pty::openpty(None, None).unwrap();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(pty.slave))
        .spawn()
        .unwrap();
    // `cmd` holds the last copy of the slave end: drop it, so the master reads EIO
    // once the command and its members are gone.
    drop(cmd);
    let mut master = std::fs::File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let mut child = crate::support::KillOnDrop::pid(child);
    let status = child.wait().unwrap();
    (status, reader.join().unwrap())
}

#[test]
fn progress_shows_on_a_terminal_and_nowhere_else() {
    let (w, project) = team();
    let mut cmd = w.mur_in(&project);
    cmd.args(["run", "--roster", "--task", "Say hello."]);
    let (status, seen) = on_a_terminal(cmd);
    assert!(status.success(), "{seen}");
    assert!(seen.contains("[mur run] starting ("), "{seen:?}");
    assert!(
        seen.contains("coming lead"),
        "the entry member comes last: {seen:?}"
    );
    // Cleared before the banner: the banner starts a line of its own.
    assert!(
        seen.contains("\r\x1b[K[mur run] formation frm_"),
        "{seen:?}"
    );
    // -q: neither progress nor banner.
    let mut cmd = w.mur_in(&project);
    cmd.args(["-q", "run", "--roster", "--task", "Say hello."]);
    let (status, seen) = on_a_terminal(cmd);
    assert!(status.success(), "{seen}");
    assert!(
        !seen.contains("starting") && !seen.contains("is up"),
        "{seen:?}"
    );
    // Not a terminal: no progress, no control characters.
    let out = w
        .mur_in(&project)
        .args(["run", "--roster", "--task", "Say hello."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("starting (") && !stderr.contains('\x1b'),
        "{stderr:?}"
    );
    assert!(stderr.contains("is up"), "{stderr}");
}

#[test]
fn verbose_and_rust_log_show_the_log() {
    let (w, project) = team();
    let run = |args: &[&str], rust_log: Option<&str>| {
        let mut cmd = w.mur_in(&project);
        cmd.args(args)
            .args(["run", "--roster", "--task", "Say hello."]);
        if let Some(v) = rust_log {
            cmd.env("RUST_LOG", v);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let plain = run(&[], None);
    assert!(!plain.contains("note:"), "{plain}");
    let verbose = run(&["-v"], None);
    assert!(
        verbose.contains("[mur run] note: peer `helper` is up"),
        "{verbose}"
    );
    // -v reaches the members: a peer's log comes behind its `[<member>]` prefix, the
    // entry member's on the launcher's stderr, each naming its capsule.
    assert!(
        verbose.contains("[helper] [mur run] note: session ses_")
            && verbose.contains("(local/team-helper 0.1.0) serving at http://127.0.0.1:"),
        "{verbose}"
    );
    assert!(
        verbose
            .lines()
            .any(|l| l.starts_with("[mur run] note: session ses_")
                && l.contains("(local/team-lead 0.1.0) serving at")),
        "{verbose}"
    );
    assert!(
        verbose.contains("[helper] [mur run] note: task tsk_"),
        "{verbose}"
    );
    assert!(!plain.contains("serving at"), "{plain}");
    let debug = run(&[], Some("mur=debug"));
    assert!(debug.contains("[mur run] debug: "), "{debug}");
    let refused = w.mur().args(["-q", "-v", "ps"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "-q and -v conflict");
}

#[test]
fn murmur_allow_root_silences_the_root_warning() {
    let (w, project) = team();
    let run = |allow: bool| {
        let mut cmd = w.mur_in(&project);
        cmd.args(["run", "--roster", "--task", "Say hello."]);
        if allow {
            cmd.env("MURMUR_ALLOW_ROOT", "1");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        let count = stderr.matches("W-SEC-013").count();
        // The warning names the setting that silences it.
        assert_eq!(
            stderr.matches("MURMUR_ALLOW_ROOT=1 silences this").count(),
            count,
            "{stderr}"
        );
        count
    };
    let as_root = usize::from(nix::unistd::geteuid().is_root());
    assert_eq!(run(false), as_root);
    assert_eq!(run(true), 0);
}
