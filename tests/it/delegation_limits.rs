//! Delegation is bounded (issue 43 item 3; docs/delegation.md): a session tree nests
//! no deeper than its root allows, runs no more delegated sessions at once than its
//! root allows, and a child can raise neither.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::{KillOnDrop, World};

const LIMIT: Duration = Duration::from_secs(60);

/// A harness that delegates `args` once per call in `calls` (the same each time), each
/// tool result to `<out>/<session>-<i>.json`, then waits for the answers and says done.
fn delegating(out: &Path, args: &str, calls: usize) -> String {
    let o = out.display();
    let mut s = String::from("IFS= read -r task\n");
    for i in 0..calls {
        s.push_str(&format!(
            "echo '{{\"type\":\"tool_call\",\"id\":\"c{i}\",\"name\":\"delegate\",\"arguments\":{args}}}'\n\
             IFS= read -r result\nprintf '%s\\n' \"$result\" > '{o}/'\"$MURMUR_SESSION_ID\"'-{i}.json'\n"
        ));
    }
    s.push_str("echo '{\"type\":\"message\",\"text\":\"waiting\"}'\nIFS= read -r reply\necho '{\"type\":\"message\",\"text\":\"done\"}'\n");
    s
}

/// Every tool result the harnesses wrote, by file name.
fn results(out: &Path) -> Vec<(String, Value)> {
    let mut found: Vec<(String, Value)> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("ses_"))
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            (e.file_name().to_string_lossy().into_owned(), v)
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

fn refusals(found: &[(String, Value)]) -> Vec<String> {
    found
        .iter()
        .filter(|(_, v)| v["is_error"] == true)
        .map(|(_, v)| v["output"].as_str().unwrap().to_string())
        .collect()
}

fn sessions(w: &World) -> usize {
    crate::support::files_under(&w.records_root())
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "trace.jsonl"))
        .count()
}

/// A capsule that delegates to itself, whose murmur.yaml asks for depth 50: the root's
/// `--max-delegation-depth 2` wins over its own manifest, and no child raises it.
#[test]
fn self_delegation_stops_at_the_root_s_depth_and_a_child_cannot_raise_it() {
    let w = World::new();
    let args = r#"{"capsule":"local/selfie","version":"1.0.0","task":"Again."}"#;
    let spawn = "capabilities:\n  spawn:\n    allow: [local/selfie]\n    max_depth: 50\n";
    w.install("selfie", spawn, Some(&delegating(&w.proj, args, 1)));
    let out = w
        .run("selfie")
        .args(["--max-delegation-depth", "2", "--task", "go"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = results(&w.proj);
    // The root (depth 0), a child (1), a grandchild (2): three sessions, one refusal.
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(sessions(&w), 3);
    let refused = refusals(&found);
    assert_eq!(refused.len(), 1, "{found:?}");
    let r = &refused[0];
    assert!(r.contains("the depth limit is 2"), "{r}");
    assert!(r.contains("at depth 2"), "{r}");
    assert!(r.contains("--max-delegation-depth"), "{r}");
    assert!(r.contains("capabilities.spawn.max_depth"), "{r}");
}

/// a → b → a → b: the default depth (3) ends the cycle.
#[test]
fn a_cycle_stops_at_the_default_depth() {
    let w = World::new();
    let to =
        |n: &str| format!(r#"{{"capsule":"local/{n}","version":"1.0.0","task":"Pass it on."}}"#);
    let spawn = |n: &str| format!("capabilities:\n  spawn:\n    allow: [local/{n}]\n");
    w.install("a", &spawn("b"), Some(&delegating(&w.proj, &to("b"), 1)));
    w.install("b", &spawn("a"), Some(&delegating(&w.proj, &to("a"), 1)));
    let out = w.run_task("a", "go");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = results(&w.proj);
    let depth = mur::delegation::tree::DEFAULT_MAX_DEPTH as usize;
    assert_eq!(found.len(), depth + 1, "{found:?}");
    assert_eq!(sessions(&w), depth + 1);
    let refused = refusals(&found);
    assert_eq!(refused.len(), 1, "{found:?}");
    assert!(
        refused[0].contains(&format!("the depth limit is {depth}")),
        "{}",
        refused[0]
    );
}

/// Five delegations in one turn with `--max-live-delegations 2`: two children run,
/// three calls are refused with the limit; neither child's harness holds the tree's
/// descriptors.
#[test]
fn a_fan_out_stops_at_the_live_limit() {
    let w = World::new();
    let fds = w.proj.join("fds");
    std::fs::create_dir(&fds).unwrap();
    let kid = format!(
        "IFS= read -r task\nfor f in 3 4 5; do readlink /proc/$$/fd/$f; done > '{}/'\"$MURMUR_SESSION_ID\"\nexec sleep 600\n",
        fds.display()
    );
    w.install("kid", "", Some(&kid));
    let args = r#"{"capsule":"local/kid","version":"1.0.0","task":"Work."}"#;
    let spawn = "capabilities:\n  spawn:\n    allow: [local/kid]\n";
    w.install("boss", spawn, Some(&delegating(&w.proj, args, 5)));
    let parent = w
        .run("boss")
        .args(["--max-live-delegations", "2", "--task", "go"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut parent = KillOnDrop::pid(parent);
    let until = Instant::now() + LIMIT;
    while results(&w.proj).len() < 5 || std::fs::read_dir(&fds).unwrap().count() < 2 {
        assert!(Instant::now() < until, "{:?}", results(&w.proj));
        std::thread::sleep(Duration::from_millis(20));
    }
    let found = results(&w.proj);
    let refused = refusals(&found);
    assert_eq!(refused.len(), 3, "{found:?}");
    for r in &refused {
        assert!(r.contains("the live-delegations limit is 2"), "{r}");
        assert!(r.contains("--max-live-delegations"), "{r}");
    }
    for e in std::fs::read_dir(&fds).unwrap().flatten() {
        let seen = std::fs::read_to_string(e.path()).unwrap();
        assert!(
            !seen.contains("pipe:"),
            "a harness holds a tree descriptor: {seen}"
        );
    }
    assert_eq!(sessions(&w), 3);
    kill(Pid::from_raw(parent.id() as i32), Signal::SIGTERM).unwrap();
    parent.wait().unwrap();
}
