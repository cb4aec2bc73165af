//! `mur run` as a formation member, with the test acting as its launcher: the channel
//! and lifeline are real pipes handed over at fds 4 and 3, as src/formation/member.rs
//! hands them. Lifeline EOF, the 20 s limit (scaled), the deadline, every E-RUN-046
//! case, E-RUN-047, W-RUN-007, and no token anywhere it must not be.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::session::*;
use crate::support::{KillOnDrop, World};
use command_fds::{CommandFdExt, FdMapping};
use nix::sys::signal::Signal;
use rstest::rstest;
use serde_json::json;

fn member_cmd(w: &World, name: &str) -> std::process::Command {
    let mut cmd = w.mur();
    cmd.args([
        "run",
        "--capsule",
        &format!("local/{name}"),
        "--capsule-version",
        "1.0.0",
        "--json",
    ]);
    cmd
}

fn index(trace: &[serde_json::Value], pred: impl Fn(&serde_json::Value) -> bool) -> usize {
    trace
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no such record in {trace:#?}"))
}

#[test]
fn lifeline_eof_mid_task_writes_formation_ended_first_and_exits_0() {
    let w = World::new();
    w.install("sleeper", "", Some(SLEEPER));
    let mut l = Launcher::new();
    let creds = l.credentials(&w, "coder", &[], &installed_sha(&w, "sleeper"));
    l.send(creds);
    let mut cmd = member_cmd(&w, "sleeper");
    cmd.args(["--task", "Sleep."]);
    l.attach(&mut cmd, true);
    let s = Session::spawn(cmd);
    let ready = s.ready();
    assert_eq!(ready["formation_id"], l.formation().as_str());
    let id = ready["session_id"].as_str().unwrap().to_string();
    wait_harness(&w);
    l.lifeline.close();
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{stderr}");
    let trace = w.trace(&id);
    assert_eq!(trace[0]["formation_id"], l.formation().as_str());
    assert_eq!(trace[0]["formation_member"], "coder");
    assert_eq!(trace[0]["formation_callees"], json!([]));
    let ended = index(&trace, |r| r["type"] == "formation_ended");
    let canceled = index(&trace, |r| r["to"] == "canceled");
    assert!(ended < canceled, "formation_ended comes first: {trace:#?}");
    assert_eq!(trace[ended]["formation_id"], l.formation().as_str());
    let end = trace.last().unwrap();
    assert_eq!(end["exit_status"], "formation_ended");
    assert_eq!(end["exit_code"], 0);
    assert_eq!(w.result(&id), "canceled: formation ended\n");
    assert!(!stderr.contains("E-RUN-040"), "{stderr}");
}

#[test]
fn lifeline_eof_while_idle_ends_ok() {
    let w = World::new();
    w.install("demo", "", None);
    let mut l = Launcher::new();
    let creds = l.credentials(&w, "coder", &[], &installed_sha(&w, "demo"));
    l.send(creds);
    let mut cmd = member_cmd(&w, "demo");
    l.attach(&mut cmd, true);
    let s = Session::spawn(cmd);
    let id = s.ready()["session_id"].as_str().unwrap().to_string();
    l.lifeline.close();
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{stderr}");
    let trace = w.trace(&id);
    assert_eq!(
        types(&trace),
        ["session_start", "formation_ended", "session_end"]
    );
    assert_eq!(trace[2]["exit_status"], "ok");
    let shown = w
        .mur()
        .args(["trace", "show", &l.formation()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains(&id) && text.contains("formation_ended"),
        "{text}"
    );
}

/// A formation member on the `stubborn` harness (it ignores SIGTERM) working on a
/// task, with its lifeline attached; `deadline` is the formation's, if any. It runs
/// at the time scale `scale` (`MUR_TEST_TIME_SCALE`), or at full time with `None`.
fn stubborn_member(
    w: &World,
    l: &mut Launcher,
    deadline: Option<SystemTime>,
    scale: Option<&str>,
) -> Session {
    w.install("stubborn", "", Some(STUBBORN));
    let mut creds = l.credentials(w, "coder", &[], &installed_sha(w, "stubborn"));
    creds.deadline_unix_ms =
        deadline.map(|at| at.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64);
    l.send(creds);
    let mut cmd = member_cmd(w, "stubborn");
    cmd.args(["--task", "Sleep."]);
    match scale {
        Some(scale) => cmd.env("MUR_TEST_TIME_SCALE", scale),
        None => cmd.env_remove("MUR_TEST_TIME_SCALE"),
    };
    l.attach(&mut cmd, true);
    Session::spawn(cmd)
}

#[test]
fn a_member_blocked_in_teardown_exits_143_at_the_scaled_20_seconds() {
    // The harness ignores SIGTERM, so teardown waits 2 s (unscaled) for its SIGKILL;
    // the limit (20 s scaled by 0.01 = 0.2 s), armed before that SIGTERM, comes first.
    // Teardown could win only if the limit's thread woke 1.8 s late while the runtime's
    // ran on time; the test runs in nextest's serial group (.config/nextest.toml). No
    // scale gives more: the margin is below the harness's unscaled 2 s grace.
    let w = World::new();
    let mut l = Launcher::new();
    let s = stubborn_member(&w, &mut l, None, Some("0.01"));
    let id = s.ready()["session_id"].as_str().unwrap().to_string();
    wait_harness(&w);
    l.lifeline.close();
    let (code, _) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 143);
    let kinds = types(&w.trace(&id));
    assert!(kinds.contains(&"formation_ended".to_string()));
    assert!(!kinds.contains(&"session_end".to_string()), "{kinds:?}");
    assert!(!w.running_dir().join(format!("{id}.json")).exists());
}

/// Waits until the door reports the session's one task canceled: a wind-down began.
fn wait_canceled(w: &World, ready: &serde_json::Value) {
    let id = ready["session_id"].as_str().unwrap();
    let door = ready["door"].as_str().unwrap();
    let token = w.token(id);
    wait_for("the task canceled", || {
        let listed = rpc(door, &token, "ListTasks", json!({}));
        listed["result"]["tasks"][0]["status"]["state"] == "TASK_STATE_CANCELED"
    });
}

#[test]
fn the_lifeline_closing_after_a_sigterm_changes_nothing() {
    let w = World::new();
    let mut l = Launcher::new();
    let s = stubborn_member(&w, &mut l, None, None);
    let ready = s.ready();
    let id = ready["session_id"].as_str().unwrap().to_string();
    wait_harness(&w);
    s.signal(Signal::SIGTERM);
    wait_canceled(&w, &ready);
    l.lifeline.close();
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("E-RUN-040"));
    let trace = w.trace(&id);
    assert!(!types(&trace).contains(&"formation_ended".to_string()));
    assert_eq!(trace.last().unwrap()["exit_status"], "canceled");
}

#[test]
fn a_sigterm_after_the_lifeline_closed_changes_nothing() {
    let w = World::new();
    let mut l = Launcher::new();
    let s = stubborn_member(&w, &mut l, None, None);
    let id = s.ready()["session_id"].as_str().unwrap().to_string();
    wait_harness(&w);
    l.lifeline.close();
    wait_record(&w, "formation_ended");
    s.signal(Signal::SIGTERM);
    s.signal(Signal::SIGTERM);
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        w.trace(&id).last().unwrap()["exit_status"],
        "formation_ended"
    );
}

#[test]
fn the_formation_deadline_wins_over_a_lifeline_closing_a_moment_later() {
    let w = World::new();
    let mut l = Launcher::new();
    let at = SystemTime::now() + Duration::from_millis(1500);
    let s = stubborn_member(&w, &mut l, Some(at), None);
    let ready = s.ready();
    let id = ready["session_id"].as_str().unwrap().to_string();
    wait_canceled(&w, &ready);
    l.lifeline.close();
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("E-RUN-053"), "{stderr}");
    let trace = w.trace(&id);
    assert!(!types(&trace).contains(&"formation_ended".to_string()));
    let end = trace.last().unwrap();
    assert_eq!(end["exit_status"], "deadline_reached");
    assert_eq!(end["error_code"], "E-RUN-053");
    assert_eq!(w.result(&id), "canceled: deadline reached (E-RUN-053)\n");
}

#[derive(Debug, Clone, Copy)]
enum Bad {
    ChannelWithoutId,
    FdNotOpen,
    FdNotPipeOrFile,
    NoFirstLine,
    NotCredentials,
    ForeignToken,
    OtherFormation,
    PeersInOwnEnv,
    RosterInsideFormation,
}

// One case per E-RUN-046 cause the spec lists, plus the two environment refusals.
#[rstest]
#[case::channel_without_formation_id(Bad::ChannelWithoutId, "without MURMUR_FORMATION_ID")]
#[case::descriptor_not_open(Bad::FdNotOpen, "not open")]
#[case::descriptor_not_a_pipe_or_file(Bad::FdNotPipeOrFile, "neither a pipe nor a file")]
#[case::no_first_line_in_time(Bad::NoFirstLine, "no first line")]
#[case::first_line_not_credentials(Bad::NotCredentials, "not a member's credentials")]
#[case::token_not_issued_to_this_member(Bad::ForeignToken, "not issued to this member")]
#[case::another_formation(Bad::OtherFormation, "names formation")]
#[case::peers_in_own_environment(Bad::PeersInOwnEnv, "MURMUR_FORMATION_PEERS")]
#[case::roster_inside_a_formation(Bad::RosterInsideFormation, "inside")]
fn bad_formation_environments_are_e_run_046(#[case] bad: Bad, #[case] says: &str) {
    let w = World::new();
    w.install("demo", "", None);
    let sha = installed_sha(&w, "demo");
    let mut l = Launcher::new();
    let mut cmd = member_cmd(&w, "demo");
    let _keep;
    match bad {
        Bad::ChannelWithoutId => {
            cmd.env("MURMUR_FORMATION_CHANNEL", "4");
        }
        Bad::FdNotOpen => {
            cmd.env("MURMUR_FORMATION_ID", l.formation())
                .env("MURMUR_FORMATION_CHANNEL", "57");
        }
        Bad::FdNotPipeOrFile => {
            let sock = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            cmd.env("MURMUR_FORMATION_ID", l.formation())
                .env("MURMUR_FORMATION_CHANNEL", "4");
            cmd.fd_mappings(vec![FdMapping {
                parent_fd: sock.into(),
                child_fd: 4,
            }])
            .unwrap();
        }
        Bad::NoFirstLine => {
            l.attach(&mut cmd, true);
        }
        Bad::NotCredentials => {
            use std::io::Write;
            let (r, w2) = std::io::pipe().unwrap();
            let mut w2 = std::fs::File::from(std::os::fd::OwnedFd::from(w2));
            w2.write_all(b"{\"hello\": 1}\n").unwrap();
            _keep = w2;
            // A launched member: without a lifeline the channel is closed unread.
            cmd.env("MURMUR_FORMATION_ID", l.formation())
                .env("MURMUR_FORMATION_CHANNEL", "4")
                .env("MURMUR_FORMATION_LIFELINE", "3");
            cmd.fd_mappings(vec![
                FdMapping {
                    parent_fd: r.into(),
                    child_fd: 4,
                },
                FdMapping {
                    parent_fd: l.take_lifeline_read(),
                    child_fd: 3,
                },
            ])
            .unwrap();
        }
        Bad::ForeignToken => {
            let mut creds = l.credentials(&w, "coder", &[], &sha);
            // A token for the edge reviewer → tester, filed as this member's.
            creds.tokens = vec![("tester".parse().unwrap(), l.key.issue("reviewer", "tester"))];
            l.send(creds);
            l.attach(&mut cmd, true);
        }
        Bad::OtherFormation => {
            let other = Launcher::new();
            let creds = other.credentials(&w, "coder", &[], &sha);
            l.send(creds);
            l.attach(&mut cmd, true);
        }
        Bad::PeersInOwnEnv => {
            l.send(l.credentials(&w, "coder", &[], &sha));
            l.attach(&mut cmd, true);
            cmd.env("MURMUR_FORMATION_PEERS", "x=http://x.formation.invalid");
        }
        Bad::RosterInsideFormation => {
            cmd = w.mur();
            cmd.args(["run", "--roster"])
                .env("MURMUR_FORMATION_ID", l.formation());
        }
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("E-RUN-046"), "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
    assert!(out.stdout.is_empty(), "no readiness line");
    assert!(w.sessions().is_empty(), "nothing staged");
}

#[test]
fn an_artifact_changed_since_admission_is_e_run_047() {
    let w = World::new();
    w.install("demo", "", None);
    let mut l = Launcher::new();
    l.send(l.credentials(&w, "coder", &[], &"0".repeat(64)));
    let mut cmd = member_cmd(&w, "demo");
    l.attach(&mut cmd, true);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("E-RUN-047"), "{stderr}");
    assert!(w.sessions().is_empty());
}

#[test]
fn a_member_started_by_hand_warns_w_run_007_once_and_mur_stop_frm_reaches_it() {
    let w = World::new();
    w.install("demo", "", None);
    let frm = "frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071";
    let mut cmd = member_cmd(&w, "demo");
    cmd.env("MURMUR_FORMATION_ID", frm);
    let s = Session::spawn(cmd);
    let ready = s.ready();
    assert!(
        ready.get("formation_id").is_none(),
        "it runs as any mur run"
    );
    let id = ready["session_id"].as_str().unwrap().to_string();
    let stop = w.mur().args(["stop", frm]).output().unwrap();
    assert_eq!(
        stop.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0);
    assert_eq!(stderr.matches("W-RUN-007").count(), 1, "{stderr}");
    let trace = w.trace(&id);
    assert!(trace[0].get("formation_id").is_none());
    assert!(!types(&trace).contains(&"formation_ended".to_string()));
}

#[test]
fn no_token_appears_in_output_trace_records_env_or_argv() {
    let w = World::new();
    w.install(
        "demo",
        "exports:\n  peer_tasks:\n    accept: true\nnetwork:\n  authentication: {}\n",
        None,
    );
    let mut l = Launcher::new();
    let creds = l.credentials(
        &w,
        "planner",
        &["coder", "reviewer"],
        &installed_sha(&w, "demo"),
    );
    let formation_tokens: Vec<String> = creds
        .tokens
        .iter()
        .map(|(_, t)| t.expose().to_string())
        .collect();
    l.send(creds);
    let mut cmd = member_cmd(&w, "demo");
    l.attach(&mut cmd, true);
    let s = Session::spawn(cmd);
    let ready = s.ready();
    let id = ready["session_id"].as_str().unwrap().to_string();
    let door = ready["door"].as_str().unwrap().to_string();
    let operator = w.token(&id);
    // A task from the operator, and one from a member presenting the token issued
    // for this door (coder → planner is not an edge; a token for this door is).
    let sent = rpc(
        &door,
        &operator,
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Go."}]}}),
    );
    assert_eq!(
        sent["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let peer_token = l.key.issue("coder", "planner");
    let from_peer = rpc(
        &door,
        peer_token.expose(),
        "SendMessage",
        json!({"message": {"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "From a peer."}]}}),
    );
    assert_eq!(
        from_peer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{from_peer}"
    );
    let pid = s.pid();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let trace = w.trace(&id);
    assert!(
        trace.iter().any(|r| r["credential"] == "member:coder"),
        "{trace:#?}"
    );
    l.lifeline.close();
    let mut stdout = String::new();
    while let Ok(line) = s.lines.recv_timeout(Duration::from_millis(200)) {
        stdout.push_str(&line);
    }
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{stderr}");
    let mut records = Vec::new();
    collect_files(&w.records(&id), &mut records);
    let mut secrets = formation_tokens;
    secrets.push(operator);
    secrets.push(peer_token.expose().to_string());
    for secret in &secrets {
        let hay = |b: &[u8]| String::from_utf8_lossy(b).contains(secret.as_str());
        assert!(!hay(stdout.as_bytes()), "stdout");
        assert!(!hay(stderr.as_bytes()), "stderr");
        assert!(!hay(&environ), "environment");
        assert!(!hay(&cmdline), "command line");
        for (path, bytes) in &records {
            assert!(!hay(bytes), "{}", path.display());
        }
    }
    assert!(records.iter().any(|(p, _)| p.ends_with("trace.jsonl")));
}

fn collect_files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_files(&p, out);
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
}

#[test]
fn a_scaffolded_roster_runs_end_to_end_with_real_members() {
    let w = World::new();
    let new = w.mur().args(["new", "--roster", "team"]).output().unwrap();
    assert!(
        new.status.success(),
        "{}",
        String::from_utf8_lossy(&new.stderr)
    );
    let team = w.proj.join("team");
    let mut install = w.mur();
    install
        .current_dir(&team)
        .args(["install", "lead", "helper"]);
    assert!(install.output().unwrap().status.success());
    let mut run = w.mur();
    run.current_dir(&team)
        .args(["run", "--roster", "--task", "Say hello."]);
    let out = run.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("completed\n"));
    assert!(stderr.contains("[helper] status: ok"), "{stderr}");
    let ids = w.sessions();
    assert_eq!(ids.len(), 2, "{ids:?}");
    let traces: Vec<_> = ids.iter().map(|id| w.trace(id)).collect();
    let lead = traces
        .iter()
        .find(|t| t[0]["formation_member"] == "lead")
        .expect("the entry member's trace");
    let helper = traces
        .iter()
        .find(|t| t[0]["formation_member"] == "helper")
        .expect("the peer's trace");
    let frm = lead[0]["formation_id"].as_str().unwrap().to_string();
    assert_eq!(helper[0]["formation_id"], frm.as_str());
    assert_eq!(lead[0]["formation_callees"], json!(["helper"]));
    assert_eq!(lead.last().unwrap()["exit_status"], "ok");
    // The entry member handed the task to helper (call-member) and answered from its
    // reply; helper was idle again when the entry member ended, so it ended ok.
    assert_eq!(
        types(helper),
        [
            "session_start",
            "a2a_task_received",
            "task_state",
            "inference_turn",
            "task_state",
            "formation_ended",
            "session_end"
        ]
    );
    assert_eq!(helper[1]["credential"], "member:lead");
    // The operator's task (--task) is trusted, and so is the part lead handed on.
    assert_eq!(lead[1]["trust"], "trusted");
    assert_eq!(helper[1]["trust"], "trusted");
    let lead_types = types(lead);
    assert!(
        lead_types.contains(&"member_call".to_string()),
        "{lead_types:?}"
    );
    assert!(
        lead_types.contains(&"member_answer".to_string()),
        "{lead_types:?}"
    );
    assert_eq!(helper.last().unwrap()["exit_status"], "ok");
    let helper_dir = helper[0]["workdir"].as_str().unwrap();
    assert!(
        helper_dir.contains(&format!(".murmur/formations/{frm}/helper")),
        "{helper_dir}"
    );
    let shown = w.mur().args(["trace", "show", &frm]).output().unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(ids.iter().all(|id| text.contains(id.as_str())), "{text}");
    assert_eq!(std::fs::read_dir(w.running_dir()).unwrap().count(), 0);
    // A peer's session resumed by hand: its capsule, installed only in the roster's
    // project store, is found through the formation's marker; no formation part comes back.
    let helper_id = helper[0]["session_id"].as_str().unwrap().to_string();
    let out = w
        .mur()
        .args(["run", "--resume", &helper_id, "--task", "Once more."])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = w.trace(&helper_id);
    let starts: Vec<_> = trace
        .iter()
        .filter(|r| r["type"] == "session_start")
        .collect();
    assert_eq!(starts.len(), 2);
    assert!(starts[1].get("formation_id").is_none());
    assert_eq!(starts[1]["capsule"]["name"], "local/team-helper");
}

#[test]
fn a_member_with_a_lifeline_leaves_sigint_to_its_launcher() {
    let w = World::new();
    w.install("demo", "", None);
    let mut l = Launcher::new();
    l.send(l.credentials(&w, "coder", &[], &installed_sha(&w, "demo")));
    let mut cmd = member_cmd(&w, "demo");
    l.attach(&mut cmd, true);
    let s = Session::spawn(cmd);
    let ready = s.ready();
    let id = ready["session_id"].as_str().unwrap().to_string();
    let door = ready["door"].as_str().unwrap().to_string();
    s.signal(Signal::SIGINT);
    // Still taking tasks: a wind-down would have closed the door to new ones.
    let sent = rpc(
        &door,
        &w.token(&id),
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Still here?"}]}}),
    );
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    l.lifeline.close();
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{stderr}");
    let trace = w.trace(&id);
    assert!(types(&trace).contains(&"formation_ended".to_string()));
    assert_eq!(trace.last().unwrap()["exit_status"], "ok");
}

/// `mur new --roster team` with both members on process harnesses: `lead` calls
/// `helper` twice side by side; `helper` holds its first task until `release` exists.
fn busy_team(w: &World, release: &std::path::Path) -> std::path::PathBuf {
    let new = w.mur().args(["new", "--roster", "team"]).output().unwrap();
    assert!(new.status.success());
    let team = w.proj.join("team");
    let lead = "IFS= read -r task\n\
        echo '{\"type\":\"tool_call\",\"calls\":[\
        {\"id\":\"c1\",\"name\":\"call-member\",\"arguments\":{\"member\":\"helper\",\"task\":\"first part\"}},\
        {\"id\":\"c2\",\"name\":\"call-member\",\"arguments\":{\"member\":\"helper\",\"task\":\"second part\"}}]}'\n\
        IFS= read -r r1\nIFS= read -r r2\n\
        echo '{\"type\":\"message\",\"text\":\"asked\"}'\n\
        IFS= read -r answers\n\
        echo '{\"type\":\"message\",\"text\":\"both answered\"}'\n"
        .to_string();
    let helper = format!(
        "IFS= read -r task\n\
         while [ ! -e '{}' ]; do sleep 0.02; done\n\
         echo '{{\"type\":\"message\",\"text\":\"part done\"}}'\n",
        release.display()
    );
    for (member, script) in [("lead", lead), ("helper", helper)] {
        let dir = team.join(member);
        let manifest = std::fs::read_to_string(dir.join("murmur.yaml")).unwrap();
        let manifest = manifest.replace(
            "  transport: builtin",
            "  transport: process\n  command: [\"sh\", \"harness.sh\"]",
        );
        std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
        std::fs::write(dir.join("harness.sh"), script).unwrap();
    }
    let mut install = w.mur();
    install
        .current_dir(&team)
        .args(["install", "lead", "helper"]);
    let out = install.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    team
}

/// The member's trace in a live formation, once a record satisfies `pred`.
fn wait_for_record(w: &World, member: &str, pred: impl Fn(&serde_json::Value) -> bool) {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let found = w.sessions().iter().any(|id| {
            let t = w.trace(id);
            t.first().is_some_and(|s| s["formation_member"] == member) && t.iter().any(&pred)
        });
        if found {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "no such record at {member}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_busy_member_records_each_refusal_and_takes_the_task_once_free() {
    let w = World::new();
    let release = w.dir.path().join("release");
    let team = busy_team(&w, &release);
    let mut run = w.mur();
    run.current_dir(&team)
        .args(["run", "--roster", "--task", "Split it."])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = KillOnDrop::pid(run.spawn().unwrap());
    // helper holds the first part; the second was refused as busy, at helper's door.
    wait_for_record(&w, "helper", |r| r["type"] == "a2a_task_refused");
    std::fs::write(&release, "").unwrap();
    let out = child.wait_with_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("both answered"));
    let traces: Vec<_> = w.sessions().iter().map(|id| w.trace(id)).collect();
    let of = |m: &str| {
        traces
            .iter()
            .find(|t| t[0]["formation_member"] == m)
            .unwrap()
            .clone()
    };
    let (lead, helper) = (of("lead"), of("helper"));
    let refused: Vec<_> = helper
        .iter()
        .filter(|r| r["type"] == "a2a_task_refused")
        .collect();
    assert!(!refused.is_empty());
    for r in &refused {
        assert_eq!(r["credential"], "member:lead", "{r}");
        assert_eq!(r["reason"], "busy", "{r}");
        assert_eq!(r["holds"], 1, "{r}");
    }
    // Each refusal is one of the offers lead recorded, and both parts were taken,
    // each from lead, trusted: lead's task came from the operator (--task).
    let offers = lead.iter().filter(|r| r["type"] == "member_offer").count();
    assert_eq!(offers, refused.len(), "{lead:?}");
    let received: Vec<_> = helper
        .iter()
        .filter(|r| r["type"] == "a2a_task_received")
        .collect();
    assert_eq!(received.len(), 2);
    for r in received {
        assert_eq!(r["credential"], "member:lead", "{r}");
        assert_eq!(r["trust"], "trusted", "{r}");
    }
    assert_eq!(lead[1]["trust"], "trusted");
}
