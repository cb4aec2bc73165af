//! Wait cycles (issue 44, item 3), on real formations of builtin members: admission
//! names each cycle that can deadlock with W-ROS-002, and at run time the call that
//! would close it fails at once, naming the chain, instead of hanging.

use crate::support::World;

/// A peer that serves peers, authenticates and may reach its callees' doors.
const PEER: &str = "exports:\n  peer_tasks:\n    accept: true\nnetwork:\n  authentication: {}\n\
    capabilities:\n  network:\n    allow:\n      - localhost\n";

/// Installs `lead` (entry, calls `first`) and `peers` (name, extra yaml), and writes
/// the roster with `rules` after lead's.
fn team(w: &World, peers: &[(&str, &str)], rules: &str, first: &str) {
    w.install(
        "lead",
        "network:\n  authentication: {}\ncapabilities:\n  network:\n    allow:\n      - localhost\n",
        None,
    );
    let mut roster = String::from(
        "roster_version: 1\nmembers:\n  - {name: lead, capsule: local/lead, version: 1.0.0, entry: true}\n",
    );
    for (name, extra) in peers {
        w.install(name, &format!("{PEER}{extra}"), None);
        roster.push_str(&format!(
            "  - {{name: {name}, capsule: local/{name}, version: 1.0.0}}\n"
        ));
    }
    roster.push_str(&format!(
        "reachability:\n  - {{from: lead, to: [{first}]}}\n{rules}"
    ));
    std::fs::write(w.proj.join("roster.yaml"), roster).unwrap();
}

/// `mur doctor --json`'s warnings, by code and message.
fn warnings(w: &World) -> Vec<(String, String, String)> {
    let out = w.mur().args(["doctor", "--json"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["admitted"], true, "{json:#}");
    json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["code"].as_str().unwrap().to_string(),
                w["message"].as_str().unwrap().to_string(),
                w["hint"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The formation's answer to one task, run well within a deadline: the run must end
/// on its own, with the entry member's exit 0.
fn run(w: &World) -> String {
    let out = w
        .mur()
        .args([
            "run",
            "--roster",
            "--deadline",
            "120",
            "--task",
            "Build the parser.",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("E-RUN-053"), "{stderr}");
    String::from_utf8(out.stdout).unwrap()
}

fn assert_cycle_refused(w: &World, cycle: &str) {
    let warned = warnings(w);
    let cycles: Vec<_> = warned.iter().filter(|(c, _, _)| c == "W-ROS-002").collect();
    assert_eq!(cycles.len(), 1, "{warned:#?}");
    assert!(
        cycles[0].1.contains(&format!("wait cycle {cycle}")),
        "{warned:#?}"
    );
    assert!(cycles[0].2.contains("Break the cycle"), "{warned:#?}");
    // The runtime refusal travels back up the answers to the formation's answer.
    let answer = run(w);
    assert!(answer.contains(&format!("Wait cycle {cycle}")), "{answer}");
}

#[test]
fn a_two_member_cycle_is_warned_and_its_closing_call_fails_at_once() {
    let w = World::new();
    team(
        &w,
        &[("a", ""), ("b", "")],
        "  - {from: a, to: [b]}\n  - {from: b, to: [a]}\n",
        "a",
    );
    assert_cycle_refused(&w, "a → b → a");
}

#[test]
fn a_three_member_cycle_is_warned_and_its_closing_call_fails_at_once() {
    let w = World::new();
    team(
        &w,
        &[("a", ""), ("b", ""), ("c", "")],
        "  - {from: a, to: [b]}\n  - {from: b, to: [c]}\n  - {from: c, to: [a]}\n",
        "a",
    );
    assert_cycle_refused(&w, "a → b → c → a");
}

#[test]
fn a_cycle_through_a_member_that_never_waits_is_not_warned_and_runs() {
    let w = World::new();
    // b has two turns: it calls a, answers, and never waits for a's answer.
    team(
        &w,
        &[("a", ""), ("b", "inference:\n  max_turns: 2\n")],
        "  - {from: a, to: [b]}\n  - {from: b, to: [a]}\n",
        "a",
    );
    let warned = warnings(&w);
    assert!(
        !warned.iter().any(|(c, _, _)| c == "W-ROS-002"),
        "{warned:#?}"
    );
    let answer = run(&w);
    assert!(!answer.contains("Wait cycle"), "{answer}");
    assert!(answer.contains("a answered:"), "{answer}");
}
