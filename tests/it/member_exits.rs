//! A member that exits while its formation runs, and the failures a formation's end
//! sums up (docs/formation.md, "A member that exits" and "What the launcher prints"),
//! on real formations: the real launcher, a real `kill -9` of the pid `mur ps --json`
//! gives, `mur stop` of a member's session, process harnesses that call and fail.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::{KillOnDrop, World, ok};

const LIMIT: Duration = Duration::from_secs(60);

/// `mur new --roster team` with both members on process harnesses, installed.
fn team(w: &World, lead: &str, helper: &str) -> PathBuf {
    team_of(w, lead, &[("helper", helper)])
}

/// `mur new --roster team` whose `lead` may call each of `workers`: the scaffold's
/// `helper` first, then copies of it under other names, in roster order. Every member
/// runs a process harness; all are installed.
fn team_of(w: &World, lead: &str, workers: &[(&str, &str)]) -> PathBuf {
    assert_eq!(workers.first().map(|(name, _)| *name), Some("helper"));
    ok(w.mur_in(&w.root).args(["new", "--roster", "team"]));
    let project = w.root.join("team");
    let helper = std::fs::read_to_string(project.join("helper/murmur.yaml")).unwrap();
    let mut roster = std::fs::read_to_string(project.join("roster.yaml")).unwrap();
    for (name, _) in workers.iter().skip(1) {
        let dir = project.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            project.join("helper/INSTRUCTIONS.md"),
            dir.join("INSTRUCTIONS.md"),
        )
        .unwrap();
        let manifest = helper.replace("name: team-helper", &format!("name: team-{name}"));
        std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
        roster = roster.replace(
            "reachability:",
            &format!(
                "  - name: {name}\n    capsule: local/team-{name}\n    version: 0.1.0\nreachability:"
            ),
        );
    }
    let names: Vec<&str> = workers.iter().map(|(name, _)| *name).collect();
    roster = roster.replace("to: [helper]", &format!("to: [{}]", names.join(", ")));
    std::fs::write(project.join("roster.yaml"), roster).unwrap();
    // The scaffold recorded its files; the roster edited here is the test's own.
    ok(w.mur_in(&project).arg("approve"));
    let members = std::iter::once(("lead", lead)).chain(workers.iter().copied());
    for (member, script) in members {
        let dir = project.join(member);
        let manifest = std::fs::read_to_string(dir.join("murmur.yaml")).unwrap();
        let manifest = manifest.replace(
            "  transport: builtin",
            "  transport: process\n  command: [\"sh\", \"harness.sh\"]",
        );
        std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
        std::fs::write(dir.join("harness.sh"), script).unwrap();
        std::fs::set_permissions(dir.join("harness.sh"), PermissionsExt::from_mode(0o755)).unwrap();
    }
    let mut install = w.mur_in(&project);
    install.arg("install").arg("lead").args(&names);
    ok(&mut install);
    project
}

/// A launcher whose stderr goes to a file, read while it runs.
struct Launch {
    child: KillOnDrop,
    stderr: PathBuf,
}

fn launch(w: &World, project: &Path, args: &[&str]) -> Launch {
    let stderr = w.root.join("launcher.stderr");
    let child = w
        .mur_in(project)
        .args(["run", "--roster"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    Launch {
        child: KillOnDrop::pid(child),
        stderr,
    }
}

impl Launch {
    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits until the launcher's stderr holds `text`.
    fn said(&self, text: &str) {
        let until = Instant::now() + LIMIT;
        while !self.stderr().contains(text) {
            assert!(
                Instant::now() < until,
                "the launcher never said {text:?}:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// `mur ps --json`, in the project (`mur ps` lists the current project's sessions).
fn ps(w: &World) -> Vec<Value> {
    let out = ok(w.mur_in(&w.root.join("team")).args(["ps", "--json"]));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `mur ps --json`'s entry for `member`, once `pred` holds for it.
fn ps_member(w: &World, member: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let until = Instant::now() + LIMIT;
    loop {
        if let Some(found) = ps(w)
            .into_iter()
            .find(|r| r["formation_member"] == member && pred(r))
        {
            return found;
        }
        assert!(
            Instant::now() < until,
            "mur ps never showed {member} so: {:#?}",
            ps(w)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn running_with_door(r: &Value) -> bool {
    r["status"] == "running" && r["door_url"].is_string()
}

/// `lead` waits for `go`, then calls `helper` and writes the tool result it got to
/// `result`, and answers. `helper` holds every task. The entry member's work folder is
/// the project: the one place a confined lead writes.
fn calling_team(w: &World) -> (PathBuf, PathBuf, PathBuf) {
    let (go, result) = (w.root.join("go"), w.root.join("team/result.json"));
    let lead = format!(
        "IFS= read -r task\n\
         while [ ! -e '{go}' ]; do sleep 0.02; done\n\
         echo '{{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"call-member\",\"arguments\":{{\"member\":\"helper\",\"task\":\"a part\"}}}}'\n\
         IFS= read -r r1\n\
         printf '%s\\n' \"$r1\" > '{result}'\n\
         echo '{{\"type\":\"message\",\"text\":\"done without helper\"}}'\n",
        go = go.display(),
        result = result.display()
    );
    let helper = "IFS= read -r task\nexec sleep 600\n";
    (team(w, &lead, helper), go, result)
}

#[test]
fn a_peer_killed_9_is_reported_at_once_listed_as_exited_and_calls_to_it_fail_saying_so() {
    let w = World::new();
    let (project, go, result) = calling_team(&w);
    let mut l = launch(&w, &project, &["--json", "--task", "Ask helper."]);
    let helper = ps_member(&w, "helper", running_with_door);
    ps_member(&w, "lead", running_with_door);
    let frm = helper["formation_id"].as_str().unwrap().to_string();
    kill(
        Pid::from_raw(helper["pid"].as_i64().unwrap() as i32),
        Signal::SIGKILL,
    )
    .unwrap();
    l.said("[helper] exited with status 137 (SIGKILL)");
    // The formation goes on: lead still runs, helper is listed as exited.
    let exited = ps_member(&w, "helper", |r| r["status"] == "exited");
    assert_eq!(exited["exit_status"], 137, "{exited}");
    assert_eq!(exited["signal"], "SIGKILL", "{exited}");
    assert_eq!(exited["session_id"], helper["session_id"], "{exited}");
    assert_eq!(exited["formation_id"], frm.as_str());
    // For people too: its row says how it ended.
    let table =
        String::from_utf8(ok(w.mur_in(&w.root.join("team")).args(["ps", "--no-trunc"])).stdout)
            .unwrap();
    let row = table
        .lines()
        .find(|l| l.contains(helper["session_id"].as_str().unwrap()))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("exited, status 137 (SIGKILL)"), "{table}");
    assert!(
        row.contains(frm.as_str()) && row.ends_with("helper"),
        "{table}"
    );
    ps_member(&w, "lead", running_with_door);
    let at = exited["exited_at"].as_str().unwrap().to_string();
    // The formation's records hold it.
    let record = std::fs::read_to_string(
        w.home
            .join(".murmur/formations")
            .join(&frm)
            .join("exited.jsonl"),
    )
    .unwrap();
    let record: Value = serde_json::from_str(record.lines().next().unwrap()).unwrap();
    assert_eq!(record["member"], "helper");
    assert_eq!(record["status"], 137);
    assert_eq!(record["exited_at"], at.as_str());
    // A call to it fails at once, saying it exited and when.
    std::fs::write(&go, "").unwrap();
    let out = l.child.wait_with_output();
    let stderr = l.stderr();
    // The spec's exit code: the entry member's, which completed.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let answer = std::fs::read_to_string(&result).unwrap();
    assert!(
        answer.contains(&format!(
            "helper exited with status 137 (SIGKILL) at {at}, while the formation runs"
        )),
        "{answer}"
    );
    assert!(!answer.contains("could not be reached"), "{answer}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let outcome: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(outcome["state"], "completed", "{outcome}");
    assert_eq!(
        outcome["exited_members"][0]["member"], "helper",
        "{outcome}"
    );
    assert_eq!(outcome["exited_members"][0]["status"], 137, "{outcome}");
    assert_eq!(
        outcome["exited_members"][0]["signal"], "SIGKILL",
        "{outcome}"
    );
    assert_eq!(
        stderr.matches("exited with status").count(),
        1,
        "one report, for helper only: {stderr}"
    );
}

#[test]
fn a_peer_stopped_by_its_session_id_is_reported_with_its_exit_code() {
    let w = World::new();
    let project = team(
        &w,
        "IFS= read -r task\nexec sleep 600\n",
        "IFS= read -r task\nexec sleep 600\n",
    );
    let mut l = launch(&w, &project, &[]);
    let helper = ps_member(&w, "helper", running_with_door);
    ps_member(&w, "lead", running_with_door);
    let session = helper["session_id"].as_str().unwrap();
    ok(w.mur().args(["stop", session]));
    // An idle member stopped by SIGTERM ends ok, with exit code 0: no signal named.
    l.said("[helper] exited with status 0;");
    let exited = ps_member(&w, "helper", |r| r["status"] == "exited");
    assert_eq!(exited["exit_status"], 0, "{exited}");
    assert!(exited["signal"].is_null(), "{exited}");
    let frm = helper["formation_id"].as_str().unwrap();
    ok(w.mur().args(["stop", frm]));
    let out = l.child.wait_with_output();
    assert_eq!(out.status.code(), Some(0), "{}", l.stderr());
}

#[test]
fn a_formation_ends_with_a_line_for_each_member_whose_tasks_failed_and_its_exit_code_unchanged() {
    let w = World::new();
    // lead hands helper a part and answers once the answer is in; helper's harness
    // ends without answering, so helper's task fails.
    let lead = "IFS= read -r task\n\
        echo '{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"call-member\",\"arguments\":{\"member\":\"helper\",\"task\":\"a part\"}}'\n\
        IFS= read -r r1\n\
        echo '{\"type\":\"message\",\"text\":\"asked\"}'\n\
        IFS= read -r answers\n\
        echo '{\"type\":\"message\",\"text\":\"done anyway\"}'\n";
    let project = team(&w, lead, "IFS= read -r task\nexit 3\n");
    let mut l = launch(&w, &project, &["--json", "--task", "Split it."]);
    let out = l.child.wait_with_output();
    let stderr = l.stderr();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("task failed") || l.contains("tasks failed"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("[mur run] helper: 1 of 1 task failed; "),
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let outcome: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(outcome["state"], "completed", "{outcome}");
    assert_eq!(outcome["exit_code"], 0, "{outcome}");
    let failed = outcome["failed_members"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{outcome}");
    assert_eq!(failed[0]["member"], "helper");
    assert_eq!(
        (failed[0]["failed"].as_u64(), failed[0]["tasks"].as_u64()),
        (Some(1), Some(1))
    );
    let reason = failed[0]["reason"].as_str().unwrap();
    assert!(lines[0].ends_with(reason), "{} / {reason}", lines[0]);
    assert_eq!(
        outcome["exited_members"],
        serde_json::json!([]),
        "{outcome}"
    );
}

/// Waits until `file` is in `member`'s work folder in some formation.
fn appears_in_formation(w: &World, member: &str, file: &str) {
    let until = Instant::now() + LIMIT;
    let formations = w.home.join(".murmur/formations");
    loop {
        let found = std::fs::read_dir(&formations)
            .into_iter()
            .flatten()
            .flatten()
            .any(|f| f.path().join(member).join(file).exists());
        if found {
            return;
        }
        assert!(Instant::now() < until, "{member}'s {file} never appeared");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The launcher's summary lines (`[mur run] <member>: N of M task(s) failed; …`).
fn summary_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("[mur run] ") && l.contains(" failed"))
        .filter(|l| l.contains(" task failed") || l.contains(" tasks failed"))
        .collect()
}

#[test]
fn a_call_in_flight_to_a_peer_killed_9_fails_at_once_saying_it_exited_and_when() {
    let w = World::new();
    // Each in its writer's work folder: the project for lead, and for helper its own
    // folder under the formation's (found once it exists).
    let answers = w.root.join("team/answers");
    // lead calls helper, ends its turn, and writes the answers message it is given.
    let lead = format!(
        "IFS= read -r task\n\
         echo '{{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"call-member\",\"arguments\":{{\"member\":\"helper\",\"task\":\"a part\"}}}}'\n\
         IFS= read -r r1\n\
         echo '{{\"type\":\"message\",\"text\":\"asked\"}}'\n\
         IFS= read -r reply\n\
         printf '%s\\n' \"$reply\" > '{answers}'\n\
         echo '{{\"type\":\"message\",\"text\":\"done without helper\"}}'\n",
        answers = answers.display()
    );
    // helper takes the part, says so, and never answers.
    let helper = "IFS= read -r task\n: > \"$MURMUR_WORKDIR/got\"\nexec sleep 600\n";
    let project = team(&w, &lead, helper);
    let mut l = launch(&w, &project, &["--json", "--task", "Ask helper."]);
    appears_in_formation(&w, "helper", "got");
    let helper = ps_member(&w, "helper", running_with_door);
    let frm = helper["formation_id"].as_str().unwrap().to_string();
    kill(
        Pid::from_raw(helper["pid"].as_i64().unwrap() as i32),
        Signal::SIGKILL,
    )
    .unwrap();
    l.said("[helper] exited with status 137 (SIGKILL)");
    let out = l.child.wait_with_output();
    let stderr = l.stderr();
    // The entry member completed: the spec's 0, whatever its peers did.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let record = std::fs::read_to_string(
        w.home
            .join(".murmur/formations")
            .join(&frm)
            .join("exited.jsonl"),
    )
    .unwrap();
    let record: Value = serde_json::from_str(record.lines().next().unwrap()).unwrap();
    let at = record["exited_at"].as_str().unwrap();
    let answers = std::fs::read_to_string(&answers).unwrap();
    assert!(answers.contains("member:helper (failed"), "{answers}");
    assert!(
        answers.contains(&format!(
            "helper exited with status 137 (SIGKILL) at {at}, while the formation runs"
        )),
        "{answers}"
    );
    assert!(!answers.contains("could not be reached"), "{answers}");
    // The task helper was running never ends: the summary counts it failed.
    let lines = summary_lines(&stderr);
    assert_eq!(
        lines,
        [
            "[mur run] helper: 1 of 1 task failed; it exited with status 137 (SIGKILL) while the task ran"
        ],
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let outcome: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(outcome["exit_code"], 0, "{outcome}");
    assert_eq!(
        outcome["failed_members"][0]["member"], "helper",
        "{outcome}"
    );
    assert_eq!(
        outcome["exited_members"][0]["member"], "helper",
        "{outcome}"
    );
}

#[test]
fn a_formation_whose_workers_all_failed_says_so_once_per_member_in_roster_order_and_exits_0() {
    let w = World::new();
    // lead hands a part to each worker and answers once the answers are in.
    let lead = "IFS= read -r task\n\
        echo '{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"call-member\",\"arguments\":{\"member\":\"helper\",\"task\":\"part one\"}}'\n\
        echo '{\"type\":\"tool_call\",\"id\":\"c2\",\"name\":\"call-member\",\"arguments\":{\"member\":\"checker\",\"task\":\"part two\"}}'\n\
        IFS= read -r r1\n\
        IFS= read -r r2\n\
        echo '{\"type\":\"message\",\"text\":\"asked\"}'\n\
        IFS= read -r answers\n\
        echo '{\"type\":\"message\",\"text\":\"done anyway\"}'\n";
    let project = team_of(
        &w,
        lead,
        &[
            ("helper", "IFS= read -r task\nexit 3\n"),
            ("checker", "IFS= read -r task\nexit 4\n"),
        ],
    );
    // For people, not --json: the answer alone on stdout, the summary on stderr.
    let mut l = launch(&w, &project, &["--task", "Split it."]);
    let out = l.child.wait_with_output();
    let stderr = l.stderr();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.ends_with("done anyway\n"), "{stdout}");
    assert!(!stdout.contains("failed"), "{stdout}");
    let lines = summary_lines(&stderr);
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].starts_with("[mur run] helper: 1 of 1 task failed; ")
            && lines[0].contains("status 3"),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with("[mur run] checker: 1 of 1 task failed; ")
            && lines[1].contains("status 4"),
        "{stderr}"
    );
    // Said after every member stopped: nothing of the formation follows them.
    let last = stderr.lines().last().unwrap();
    assert_eq!(last, lines[1], "{stderr}");
}

#[test]
fn an_entry_member_whose_task_failed_exits_1_and_is_summed_up_like_the_others() {
    let w = World::new();
    let project = team(
        &w,
        "IFS= read -r task\nexit 5\n",
        "IFS= read -r task\nexec sleep 600\n",
    );
    let mut l = launch(&w, &project, &["--json", "--task", "Fail."]);
    let out = l.child.wait_with_output();
    let stderr = l.stderr();
    // The exit-code contract's "the task failed": 1.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines = summary_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("[mur run] lead: 1 of 1 task failed; ")
            && lines[0].contains("status 5"),
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let outcome: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(outcome["state"], "failed", "{outcome}");
    assert_eq!(outcome["exit_code"], 1, "{outcome}");
    let failed = outcome["failed_members"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{outcome}");
    assert_eq!(failed[0]["member"], "lead", "{outcome}");
    assert_eq!(
        outcome["exited_members"],
        serde_json::json!([]),
        "{outcome}"
    );
}
