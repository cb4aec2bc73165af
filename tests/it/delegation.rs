//! The `delegate` tool through real sessions: a parent whose process harness
//! delegates to an installed child capsule (docs/delegation.md).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use mur::delegation::ANSWERS_LEAD;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::{KillOnDrop, World, files_under};

const LIMIT: Duration = Duration::from_secs(30);
const SPAWN: &str = "capabilities:\n  spawn:\n    allow: [acme/*, local/kid]\n";

/// A parent harness: one `delegate` call with `args`, its result to `<out>/tool.json`,
/// then (`wait`) an answer that makes the task wait for the child, and the message it
/// continues with to `<out>/reply.json`.
fn parent(out: &Path, args: &str) -> String {
    let o = out.display();
    format!(
        "IFS= read -r task\necho '{{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"delegate\",\"arguments\":{args}}}'\nIFS= read -r result\nprintf '%s\\n' \"$result\" > '{o}/tool.json'\necho '{{\"type\":\"message\",\"text\":\"waiting\"}}'\nIFS= read -r reply\nprintf '%s\\n' \"$reply\" > '{o}/reply.json'\necho '{{\"type\":\"message\",\"text\":\"done\"}}'\n"
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_child_runs_the_task_and_its_answer_comes_back_fenced() {
    let w = World::new();
    w.install("kid", "", None);
    let args = r#"{"capsule":"local/kid","version":"1.0.0","task":"Say hello."}"#;
    w.install("boss", SPAWN, Some(&parent(&w.proj, args)));
    let out = w.run_task("boss", "go");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tool = read_json(&w.proj.join("tool.json"));
    assert_eq!(tool["is_error"], false, "{tool}");
    let reply = read_json(&w.proj.join("reply.json"));
    let text = reply["text"].as_str().unwrap();
    assert!(text.starts_with(ANSWERS_LEAD), "{text}");
    assert!(text.contains("child:local/kid@1.0.0 (completed)"), "{text}");
    // The child's own session ran and ended ok, in the same records tree.
    let kid = trace_of(&w, "local/kid");
    assert_eq!(kid.last().unwrap()["type"], "session_end");
    assert_eq!(kid.last().unwrap()["exit_status"], "ok");
}

/// `-v` reaches a delegated child: its log, in the parent's `logs/delegate-*.log`.
#[test]
fn a_verbose_parent_s_child_logs_as_much() {
    let w = World::new();
    w.install("kid", "", None);
    let args = r#"{"capsule":"local/kid","version":"1.0.0","task":"Say hello."}"#;
    w.install("boss", SPAWN, Some(&parent(&w.proj, args)));
    let out = w.run("boss").args(["-v", "--task", "go"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("(local/boss 1.0.0) serving at"), "{stderr}");
    let log = the_delegate_log(&w);
    assert!(
        log.contains("[mur run] note: session ses_")
            && log.contains("(local/kid 1.0.0) serving at"),
        "{log}"
    );
    assert!(log.contains(": completed"), "{log}");
}

#[test]
fn a_capsule_outside_spawn_allow_is_refused_with_the_patterns() {
    let w = World::new();
    let args = r#"{"capsule":"other/thing","version":"1.0.0","task":"x"}"#;
    w.install("boss", SPAWN, Some(&parent(&w.proj, args)));
    let out = w.run_task("boss", "go");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tool = read_json(&w.proj.join("tool.json"));
    assert_eq!(tool["is_error"], true, "{tool}");
    let msg = tool["output"].as_str().unwrap();
    assert!(
        msg.contains("`other/thing` is not in capabilities.spawn.allow"),
        "{msg}"
    );
    assert!(msg.contains("acme/*, local/kid"), "{msg}");
}

fn trace_of(w: &World, capsule: &str) -> Vec<Value> {
    for f in files_under(&w.records_root()) {
        if f.file_name().is_some_and(|n| n == "trace.jsonl") {
            let recs: Vec<Value> = std::fs::read_to_string(&f)
                .unwrap()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            if recs
                .first()
                .is_some_and(|r| r["capsule"]["name"] == capsule)
            {
                return recs;
            }
        }
    }
    panic!("no trace of {capsule}");
}

/// The running record of the session running `capsule`, once there is one.
fn running(w: &World, capsule: &str) -> Value {
    let until = Instant::now() + LIMIT;
    loop {
        for e in std::fs::read_dir(w.running_dir())
            .into_iter()
            .flatten()
            .flatten()
        {
            if e.path().extension().is_some_and(|x| x == "json")
                && let Ok(v) =
                    serde_json::from_slice::<Value>(&std::fs::read(e.path()).unwrap_or_default())
                && v["capsule"] == capsule
            {
                return v;
            }
        }
        assert!(Instant::now() < until, "{capsule} never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn gone(pid: i32) -> bool {
    mur::descendants::stat(pid as u32).is_none_or(|p| p.is_zombie())
}

fn wait_gone(pid: i32) -> Duration {
    let start = Instant::now();
    while !gone(pid) {
        assert!(start.elapsed() < LIMIT, "child {pid} still running");
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

/// A parent in formation `frm` (by hand: W-RUN-007 is its own) delegating to a kid
/// whose harness works for ten minutes; returns the parent and the kid's record.
fn busy_pair(w: &World, frm: &str) -> (KillOnDrop, Value) {
    w.install("kid", "", Some("IFS= read -r task\nexec sleep 600\n"));
    let args = r#"{"capsule":"local/kid","version":"1.0.0","task":"Work."}"#;
    w.install("boss", SPAWN, Some(&parent(&w.proj, args)));
    let parent = w
        .run("boss")
        .args(["--task", "go"])
        .env("MURMUR_FORMATION_ID", frm)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let parent = KillOnDrop::pid(parent);
    let kid = running(w, "local/kid");
    (parent, kid)
}

const FRM: &str = "frm_0199c4e2f1b7712a9d3e4f5061728394";

#[test]
fn a_child_inherits_only_the_formation_id_and_refuses_formation_tokens() {
    let w = World::new();
    let (mut parent, kid) = busy_pair(&w, FRM);
    let pid = kid["pid"].as_i64().unwrap() as i32;
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let vars: Vec<String> = environ
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .filter(|v| v.starts_with("MURMUR_"))
        .collect();
    let mut names: Vec<&str> = vars.iter().map(|v| v.split('=').next().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "MURMUR_FORMATION_ID",
            "MURMUR_HOST_WARNINGS_REPORTED",
            "MURMUR_SPAWNER_LIFELINE"
        ],
        "{vars:?}"
    );
    assert!(vars.contains(&format!("MURMUR_FORMATION_ID={FRM}")));
    // A formation token, well formed and signed, is 401 at the child's door.
    let key = mur::credential::FormationKey::mint().unwrap();
    let token = key.issue("boss", "kid");
    let token = token.expose();
    let url = format!("{}/", kid["door_url"].as_str().unwrap());
    let status = ureq_status(&url, token);
    assert_eq!(status, 401);
    kill(Pid::from_raw(parent.id() as i32), Signal::SIGTERM).unwrap();
    parent.wait().unwrap();
    wait_gone(pid);
    // The child printed no W-RUN-007 (its stderr is the parent's logs/delegate-*.log).
    let log = the_delegate_log(&w);
    assert!(!log.contains("W-RUN-007"), "{log}");
}

/// A bare HTTP POST of an A2A request with `token`; returns the status code.
fn ureq_status(url: &str, token: &str) -> u16 {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#;
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(
        s,
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn the_parent_s_first_sigterm_cancels_the_live_delegation() {
    let w = World::new();
    let (mut parent, kid) = busy_pair(&w, FRM);
    let pid = kid["pid"].as_i64().unwrap() as i32;
    kill(Pid::from_raw(parent.id() as i32), Signal::SIGTERM).unwrap();
    parent.wait().unwrap();
    // The parent waited for its child to wind down before it ended.
    assert!(gone(pid), "the parent ended before its child");
    let end = trace_of(&w, "local/kid").last().unwrap().clone();
    assert_eq!(end["type"], "session_end", "{end}");
    assert_eq!(end["exit_status"], "formation_ended", "{end}");
}

#[test]
fn a_child_winds_down_when_its_parent_is_killed() {
    let w = World::new();
    let (mut parent, kid) = busy_pair(&w, FRM);
    let pid = kid["pid"].as_i64().unwrap() as i32;
    kill(Pid::from_raw(parent.id() as i32), Signal::SIGKILL).unwrap();
    parent.wait().unwrap();
    let took = wait_gone(pid);
    eprintln!("kill -9 of the parent: child gone after {took:?}");
    let end = trace_of(&w, "local/kid").last().unwrap().clone();
    assert_eq!(end["type"], "session_end", "{end}");
    assert_eq!(end["exit_status"], "formation_ended", "{end}");
}

#[test]
fn a_formation_member_delegates_and_its_child_ends_with_the_formation() {
    let w = World::new();
    let (mut launcher, kid) = {
        w.install("kid", "", Some("IFS= read -r task\nexec sleep 600\n"));
        let args = r#"{"capsule":"local/kid","version":"1.0.0","task":"Work."}"#;
        w.install("boss", SPAWN, Some(&parent(&w.proj, args)));
        std::fs::write(
            w.proj.join("roster.yaml"),
            "roster_version: 1\nmembers:\n  - name: boss\n    capsule: local/boss\n    version: 1.0.0\n    entry: true\n",
        )
        .unwrap();
        let launcher = w
            .mur()
            .args(["run", "--roster", "--task", "go"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(w.root.join("launcher.err")).unwrap())
            .spawn()
            .unwrap();
        let launcher = KillOnDrop::pid(launcher);
        let kid = std::panic::catch_unwind(|| running(&w, "local/kid")).unwrap_or_else(|_| {
            panic!(
                "no child; launcher: {}; tool: {:?}",
                std::fs::read_to_string(w.root.join("launcher.err")).unwrap_or_default(),
                std::fs::read_to_string(w.proj.join("tool.json"))
            )
        });
        (launcher, kid)
    };
    // The child resolved local/kid from the roster's project, and carries the
    // formation's id (and nothing else of it).
    let frm = kid["formation_id"].as_str().unwrap().to_string();
    assert!(frm.starts_with("frm_"), "{kid}");
    assert_eq!(running(&w, "local/boss")["formation_id"], frm.as_str());
    let pid = kid["pid"].as_i64().unwrap() as i32;
    let environ = String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/environ")).unwrap())
        .into_owned();
    assert!(environ.contains(&format!("MURMUR_FORMATION_ID={frm}")));
    assert!(!environ.contains("MURMUR_FORMATION_LIFELINE"));
    assert!(!environ.contains("MURMUR_FORMATION_CHANNEL"));
    // The member dies; the launcher, whose stray the child now is, ends with nothing left.
    let boss = running(&w, "local/boss")["pid"].as_i64().unwrap() as i32;
    kill(Pid::from_raw(boss), Signal::SIGKILL).unwrap();
    assert_eq!(launcher.wait().unwrap().code(), Some(137));
    assert!(
        gone(pid),
        "the launcher exited, leaving the delegated child"
    );
}

/// The one child's stderr, the parent's `logs/delegate-*.log`.
fn the_delegate_log(w: &World) -> String {
    let logs: Vec<_> = files_under(&w.records_root())
        .into_iter()
        .filter(|f| {
            f.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("delegate-")
        })
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    std::fs::read_to_string(&logs[0]).unwrap()
}

/// Issue 43, item 1: every tool and hook of a session has its records `tmp/` read-write
/// and may fill it with symlinks at the names mur will use. The parent's harness plants
/// them where the task file and the child's log used to go (`delegate-<pid>-0.*`, the
/// pid being its session's): the task's, relative, to a file outside every grant
/// (overwrite); the log's, absolute, to a name there that does not exist (create). mur
/// follows none: the targets are untouched and the delegation works.
#[test]
fn symlinks_planted_in_tmp_make_mur_write_nothing_outside() {
    let w = World::new();
    let outside = w.root.join("outside");
    std::fs::create_dir(&outside).unwrap();
    let victim = outside.join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    let created = outside.join("created.txt");
    // From <records>/tmp/ up to the world's root, as a relative link spells it.
    let tmp_depth = w
        .records_root()
        .join(w.proj.strip_prefix("/").unwrap())
        .join("ses_x/tmp")
        .strip_prefix(&w.root)
        .unwrap()
        .components()
        .count();
    let up = "../".repeat(tmp_depth);
    let plant = format!(
        "echo \"$PPID\" > '{root}/pid'\n\
         ln -s '{up}outside/victim.txt' \"$TMPDIR/delegate-$PPID-0.md\"\n\
         ln -s '{created}' \"$TMPDIR/delegate-$PPID-0.log\"\n\
         [ -f \"$TMPDIR/delegate-$PPID-0.md\" ] && echo resolves > '{root}/relative'\n",
        root = w.proj.display(),
        created = created.display(),
    );
    w.install("kid", "", None);
    let args = r#"{"capsule":"local/kid","version":"1.0.0","task":"Say hello."}"#;
    w.install(
        "boss",
        SPAWN,
        Some(&format!("{plant}{}", parent(&w.proj, args))),
    );
    let out = w.run_task("boss", "go");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The relative link did point at the victim: the plant was a real one.
    assert!(
        w.proj.join("relative").exists(),
        "the relative link resolves nowhere"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(
        !created.exists(),
        "mur created a file through a planted link"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    // The delegation still worked, with the names the harness predicted.
    let tool = read_json(&w.proj.join("tool.json"));
    assert_eq!(tool["is_error"], false, "{tool}");
    let reply = read_json(&w.proj.join("reply.json"));
    let text = reply["text"].as_str().unwrap();
    assert!(text.contains("child:local/kid@1.0.0 (completed)"), "{text}");
    let pid = std::fs::read_to_string(w.proj.join("pid")).unwrap();
    let log = files_under(&w.records_root())
        .into_iter()
        .find(|f| f.ends_with(format!("logs/delegate-{}-0.log", pid.trim())))
        .expect("the child's log is not at the predicted name");
    assert!(!log.is_symlink());
    // The task file went in runtime/ and is gone with the child.
    let runtime = log.parent().unwrap().parent().unwrap().join("runtime");
    assert_eq!(std::fs::read_dir(&runtime).unwrap().count(), 0);
}
