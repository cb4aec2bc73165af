//! The defects of issue 18 (1a–1d), each with a test that failed before its fix.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::support::World;
use crate::support::session::wait_for;

/// `mur new --roster team`, installed; `alone`: the roster keeps only the entry member.
fn team(alone: bool) -> (World, std::path::PathBuf) {
    let w = World::new();
    let ok = crate::support::ok;
    ok(w.mur().args(["new", "--roster", "team"]));
    let project = w.proj.join("team");
    ok(w.mur_in(&project).args(["install", "lead", "helper"]));
    if alone {
        std::fs::write(
            project.join("roster.yaml"),
            "roster_version: 1\nmembers:\n  - name: lead\n    capsule: local/team-lead\n    version: 0.1.0\n    entry: true\n",
        )
        .unwrap();
        // A roster edited by hand is approved before it launches (docs/approval.md).
        ok(w.mur_in(&project).arg("approve"));
    }
    (w, project)
}

#[test]
fn stop_reaches_a_formation_that_has_no_formation_json() {
    // A roster with no peers makes no formation directory and no marker (1a).
    let (w, project) = team(true);
    let (mut launcher, ready) = w.launch_json(&project);
    let frm = ready["formation_id"].as_str().unwrap();
    assert!(!w.home.join(".murmur/formations").join(frm).exists());
    let stop = w.mur().args(["stop", frm]).output().unwrap();
    let stderr = String::from_utf8_lossy(&stop.stderr);
    assert_eq!(stop.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("the launcher of {frm} (pid {})", launcher.id())),
        "{stderr}"
    );
    let mut status = None;
    wait_for("the launcher to exit", || {
        status = launcher.try_wait().unwrap();
        status.is_some()
    });
    assert_eq!(status.unwrap().code(), Some(0));
    let again = w.mur().args(["stop", frm]).output().unwrap();
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already ended"));
}

#[test]
fn the_deadline_counts_from_the_launcher_s_start_not_the_end_of_admission() {
    // A large member makes admission take a while: it hashes every artifact (1b).
    let w = World::new();
    let ok = crate::support::ok;
    ok(w.mur().args(["new", "--roster", "team"]));
    let project = w.proj.join("team");
    let mut noise = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open("/dev/urandom").unwrap(), 12 << 20),
        &mut noise,
    )
    .unwrap();
    std::fs::write(project.join("helper/big.bin"), noise).unwrap();
    ok(w.mur_in(&project).args(["install", "lead", "helper"]));
    let t = std::time::Instant::now();
    ok(w.mur_in(&project).arg("doctor"));
    let admission = t.elapsed();
    let fakes = crate::support::fake::Fakes::new(&w.root, &[("lead", "exit:0")]);
    let deadline = Duration::from_secs(30);
    let before = std::time::SystemTime::now();
    let out = w
        .mur_in(&project)
        .args(["run", "--roster", "--task", "x", "--deadline", "30"])
        .env("MUR_TEST_MEMBER_PROGRAM", &fakes.program)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let since = |ms: &Value| {
        let at = std::time::UNIX_EPOCH + Duration::from_millis(ms.as_u64().unwrap());
        at.duration_since(before).unwrap_or_default()
    };
    for member in ["lead", "helper"] {
        let creds = &fakes.event(member, "started").unwrap()["credentials"];
        let told = since(&creds["deadline_unix_ms"]);
        // Counted from the launcher's start, the moment lies at most a little after
        // `before + 30 s`; counted from the end of admission, `admission` later.
        assert!(
            told < deadline + admission / 2,
            "{member} was told {told:?} after the launch began; admission took {admission:?}"
        );
        assert!(told >= deadline, "{member}: {told:?}");
    }
}

#[test]
fn a_formation_directory_removed_by_hand_takes_its_peers_traces_with_it() {
    let (w, project) = team(false);
    let out = w
        .mur_in(&project)
        .args(["run", "--roster", "--json", "--task", "Say hello."])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ready: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    let frm = ready["formation_id"].as_str().unwrap();
    let id = |i: usize| {
        ready["members"][i]["session_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (lead, helper) = (id(0), id(1));
    let show = |what: &str| w.mur().args(["trace", "show", what]).output().unwrap();
    let both = String::from_utf8_lossy(&show(frm).stdout).into_owned();
    assert!(both.contains(&lead) && both.contains(&helper), "{both}");
    // 1c: removed by hand, the peers' traces go with it.
    std::fs::remove_dir_all(w.home.join(".murmur/formations").join(frm)).unwrap();
    let after = show(frm);
    let text = String::from_utf8_lossy(&after.stdout);
    assert_eq!(after.status.code(), Some(0));
    assert!(!text.contains(&helper), "{text}");
    assert!(
        text.contains("session_start"),
        "the entry member's trace: {text}"
    );
    assert!(!text.contains("== "), "one session, no headers: {text}");
    let peer = show(&helper);
    assert_eq!(peer.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&peer.stderr).contains("E-RUN-003"));
    assert_eq!(show(&lead).status.code(), Some(0));
}

/// The HTTP status a door answers `SendMessage` with, presenting `token`.
fn status_with(door: &str, token: &str) -> u16 {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}}});
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        mur::door::client()
            .build()
            .unwrap()
            .post(format!("{door}/"))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    })
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
