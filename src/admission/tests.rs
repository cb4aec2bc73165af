//! The parts of admission that need no store: edges, checks 7 and 8 and W-ROS-001 over
//! parsed manifests. Checks 6–8 end to end, with installed capsules: tests/it/admission.rs.

use std::path::{Path, PathBuf};

use rstest::rstest;

use super::*;
use crate::catalogue::{Code, W_ROS_002};
use crate::store::StoreKind;

/// A member's manifest: `p` serves peers, `a` declares authentication, `qN` queues N.
fn manifest(flags: &str) -> Manifest {
    let mut text =
        String::from("name: m\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n");
    if flags.contains('p') {
        text.push_str("exports:\n  peer_tasks:\n    accept: true\n");
    }
    if flags.contains('a') {
        text.push_str("network:\n  authentication: {}\n");
    }
    if let Some(q) = flags.split('q').nth(1) {
        text.push_str(&format!(
            "lifecycle:\n  task_acceptance: queue\n  queue_depth: {q}\n"
        ));
    }
    manifest::parse(&text, Path::new("murmur.yaml")).unwrap()
}

/// A roster of `members` ("name:flags", the first is the entry member) and `reach`.
fn setup(members: &[&str], reach: &str) -> (Roster, Vec<(Installed, Manifest)>) {
    let mut text = String::from("roster_version: 1\nmembers:\n");
    let mut bound = Vec::new();
    for (i, spec) in members.iter().enumerate() {
        let (name, flags) = spec.split_once(':').unwrap_or((spec, ""));
        text.push_str(&format!(
            "  - {{name: {name}, capsule: local/{name}, version: 1.0.0, entry: {}}}\n",
            i == 0
        ));
        let installed = Installed {
            name: format!("local/{name}"),
            version: "1.0.0".into(),
            sha256: "0".repeat(64).parse().unwrap(),
            store: StoreKind::Project,
            path: PathBuf::from(format!("{name}.mur.zip")),
        };
        bound.push((installed, manifest(flags)));
    }
    text.push_str(reach);
    let roster = roster::parse(&text, Path::new("roster.yaml")).unwrap();
    roster::check(&roster).unwrap();
    (roster, bound)
}

fn named(roster: &Roster, edges: &[(usize, usize)]) -> Vec<String> {
    edges
        .iter()
        .map(|&(f, t)| format!("{}>{}", roster.members[f].name, roster.members[t].name))
        .collect()
}

fn accepts(bound: &[(Installed, Manifest)]) -> Vec<bool> {
    bound
        .iter()
        .map(|(_, m)| m.exports.peer_tasks.accept)
        .collect()
}

/// Checks 7 and 8 and the edges, as `admit_report` runs them after check 6.
fn after_binding(members: &[&str], reach: &str) -> Result<(Vec<String>, Vec<Diagnostic>), Refusal> {
    let (roster, bound) = setup(members, reach);
    let accepts = accepts(&bound);
    callees_serve_peers(&roster, &bound, &accepts)?;
    let edges = edges(&roster, &accepts);
    doors_authenticate(&roster, &bound, &edges)?;
    Ok((named(&roster, &edges), crowded(&roster, &bound, &edges)))
}

// ---- The `reachability` table: Value -> Edges ---------------------------------

#[rstest]
#[case::absent(&["e:pa", "b:pa"], "", &[])]
#[case::empty_list(&["e:pa", "b:pa"], "reachability: []\n", &[])]
// `all`: every ordered pair of distinct members that both serve peers, except pairs
// into the entry member; `c` serves no peers, so it is on no edge.
#[case::all(&["e:pa", "b:pa", "c:a", "d:pa"], "reachability: all\n", &["e>b", "e>d", "b>d", "d>b"])]
// An entry member that serves no peers calls no one under `all`.
#[case::all_entry_not_serving(&["e:a", "b:pa", "d:pa"], "reachability: all\n", &["b>d", "d>b"])]
// Rules: each from to each to; rules add together, an edge written twice is one edge,
// and edges come sorted by roster order.
#[case::rules(
    &["e:a", "b:pa", "c:pa"],
    "reachability:\n  - {from: c, to: [b]}\n  - {from: e, to: [c, b, c]}\n  - {from: e, to: [b]}\n",
    &["e>b", "e>c", "c>b"]
)]
fn reachability_edges(#[case] members: &[&str], #[case] reach: &str, #[case] expected: &[&str]) {
    let (edges, _) = after_binding(members, reach).unwrap_or_else(|r| panic!("{}", r.diagnostic));
    assert_eq!(edges, expected);
}

// ---- Checks 7 and 8 ------------------------------------------------------------

#[rstest]
// 7: every member a rule lists in `to` must serve peers ...
#[case::check_7_callee_not_serving(&["e:a", "b:a"], "reachability:\n  - {from: e, to: [b]}\n", E_ROS_005, "b", 6, 20)]
// ... members in roster order: `b` comes before `c` though a rule calls `c` first.
#[case::check_7_roster_order(
    &["e:a", "b:a", "c:a"],
    "reachability:\n  - {from: e, to: [c]}\n  - {from: e, to: [b]}\n", E_ROS_005, "b", 8, 20)]
// 8: with any edge, every member declares network.authentication, even one on no edge.
#[case::check_8_member_on_no_edge(&["e:a", "b:pa", "c:p"], "reachability:\n  - {from: e, to: [b]}\n", E_ROS_006, "c", 5, 12)]
#[case::check_8_caller(&["e:p", "b:pa"], "reachability:\n  - {from: e, to: [b]}\n", E_ROS_006, "e", 3, 12)]
#[case::check_8_with_all(&["e:pa", "b:p"], "reachability: all\n", E_ROS_006, "b", 4, 12)]
// 7 comes before 8.
#[case::check_7_before_8(&["e", "b"], "reachability:\n  - {from: e, to: [b]}\n", E_ROS_005, "b", 6, 20)]
fn refused_after_binding(
    #[case] members: &[&str],
    #[case] reach: &str,
    #[case] code: Code,
    #[case] member: &str,
    #[case] line: usize,
    #[case] column: usize,
) {
    let r = after_binding(members, reach).expect_err("should be refused");
    let d = &r.diagnostic;
    assert_eq!(d.code, code, "{d}");
    let loc = d.location.as_ref().unwrap();
    assert_eq!((loc.line, loc.column), (line, column), "{d}");
    assert!(d.message.contains(&format!("member `{member}`")), "{d}");
    assert!(!d.hint_text().is_empty());
    assert!(
        matches!(&r.fault, Fault::Member { name: Some(n), .. } if n == member),
        "{:?}",
        r.fault
    );
}

/// A caller need not serve peers.
#[test]
fn caller_need_not_serve_peers() {
    let (edges, _) =
        after_binding(&["e:a", "b:pa"], "reachability:\n  - {from: e, to: [b]}\n").unwrap();
    assert_eq!(edges, ["e>b"]);
}

/// No edges, no authentication needed: one member, no reachability, an `all` that
/// pairs no members.
#[rstest]
#[case::one_member(&["e"], "reachability: all\n")]
#[case::no_reachability(&["e", "b:p"], "")]
#[case::empty_rules(&["e", "b:p"], "reachability: []\n")]
#[case::all_pairs_none(&["e:p", "b", "c"], "reachability: all\n")]
fn no_edges_need_no_authentication(#[case] members: &[&str], #[case] reach: &str) {
    let (edges, warnings) =
        after_binding(members, reach).unwrap_or_else(|r| panic!("{}", r.diagnostic));
    assert!(edges.is_empty(), "{edges:?}");
    assert!(warnings.is_empty());
}

// ---- W-ROS-001 ------------------------------------------------------------------

#[rstest]
// Two callers, a single-task member: warned, with queue_depth 1 and task_acceptance.
#[case::single_two_callers(&["e:pa", "b:pa", "c:pa"], "reachability: all\n", &["c", "b"], "queue_depth: 1")]
// Queue of 1 holds 2: three callers need queue_depth 2.
#[case::queue_too_short(
    &["e:a", "b:a", "c:a", "d:paq1"],
    "reachability:\n  - {from: e, to: [d]}\n  - {from: b, to: [d]}\n  - {from: c, to: [d]}\n",
    &["d"], "queue_depth: 2")]
fn warns_when_callers_exceed_what_a_member_holds(
    #[case] members: &[&str],
    #[case] reach: &str,
    #[case] warned: &[&str],
    #[case] depth: &str,
) {
    let (_, warnings) = after_binding(members, reach).unwrap();
    let mut names: Vec<&str> = Vec::new();
    for w in &warnings {
        assert_eq!(w.code, W_ROS_001);
        assert!(w.message.contains(depth), "{w}");
        assert!(w.hint_text().contains(depth), "{w}");
        let name = w.message.split('`').nth(1).unwrap();
        names.push(name);
    }
    names.sort_unstable();
    let mut expected = warned.to_vec();
    expected.sort_unstable();
    assert_eq!(names, expected);
}

#[test]
fn single_member_warning_says_to_queue() {
    let (_, warnings) = after_binding(
        &["e:a", "b:a", "c:pa"],
        "reachability:\n  - {from: e, to: [c]}\n  - {from: b, to: [c]}\n",
    )
    .unwrap();
    assert_eq!(warnings.len(), 1);
    let w = &warnings[0];
    assert!(
        w.message
            .contains("called by 2 members (e, b) but holds 1 task at once"),
        "{w}"
    );
    assert!(
        w.hint_text()
            .contains("task_acceptance: queue and lifecycle.queue_depth: 1"),
        "{w}"
    );
    assert_eq!(w.location.as_ref().map(|l| l.line), Some(5));
}

#[rstest]
// One caller into a single-task member: it holds it.
#[case::one_caller(&["e:a", "b:pa"], "reachability:\n  - {from: e, to: [b]}\n")]
// Queue of 1 holds two callers exactly.
#[case::queue_holds_all(&["e:a", "b:a", "c:paq1"], "reachability:\n  - {from: e, to: [c]}\n  - {from: b, to: [c]}\n")]
// The same caller written twice is one caller.
#[case::same_caller_twice(&["e:a", "b:pa"], "reachability:\n  - {from: e, to: [b]}\n  - {from: e, to: [b, b]}\n")]
fn no_warning_when_a_member_holds_its_callers(#[case] members: &[&str], #[case] reach: &str) {
    let (_, warnings) = after_binding(members, reach).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn admitted_answers_entry_callees_and_callers() {
    let (roster, bound) = setup(
        &["e:a", "b:pa", "c:pa"],
        "reachability:\n  - {from: c, to: [b]}\n  - {from: e, to: [c, b]}\n",
    );
    let accepts = accepts(&bound);
    let edges = edges(&roster, &accepts);
    let admitted = Admitted::new(roster, PathBuf::from("."), bound, &edges, Vec::new());
    assert_eq!(admitted.entry().name, "e");
    let callees = |m: &str| {
        admitted
            .callees(&m.parse().unwrap())
            .into_iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(callees("e"), ["b", "c"]);
    assert!(callees("b").is_empty());
    assert_eq!(admitted.callers("b"), ["e", "c"]);
    assert_eq!(
        admitted.member("c").map(|m| m.installed.name.as_str()),
        Some("local/c")
    );
    assert!(admitted.member("zz").is_none());
}

// ---- W-ROS-002 ------------------------------------------------------------------

#[test]
fn every_elementary_cycle_is_found_once() {
    // 0→1→0, 1→2→1, 0→1→2→0; 3 is on no cycle.
    let edges = [(0, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 3)];
    let mut found = cycles::cycles(4, &edges);
    found.sort();
    assert_eq!(found, vec![vec![0, 1], vec![0, 1, 2], vec![1, 2]]);
    assert!(cycles::cycles(3, &[(0, 1), (1, 2)]).is_empty());
}

#[test]
fn a_dense_roster_whose_entry_is_on_no_cycle_is_walked_to_the_cap() {
    // `reachability: all` over 64 members: the entry calls every member and none calls
    // it, so no cycle starts at 0; every other pair is a cycle. A walk of every path
    // from 0 never ended (admission's bench, 2026-12-08); Johnson's stops at the cap.
    let n = 64;
    let edges: Vec<(usize, usize)> = (0..n)
        .flat_map(|f| (1..n).filter(move |&t| t != f).map(move |t| (f, t)))
        .collect();
    let found = cycles::cycles(n, &edges);
    assert_eq!(found.len(), 32);
    assert!(
        found.iter().all(|c| c[0] == 1 && !c.contains(&0)),
        "{found:?}"
    );
    // Every one elementary: no member twice.
    for c in &found {
        let mut sorted = c.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), c.len(), "{c:?}");
    }
}

#[test]
fn the_cycles_of_a_ring_with_chords_are_each_found_once() {
    // 0→1→2→3→0 plus chords 1→3 and 3→1: cycles 0123, 013, 123, 13.
    let edges = [(0, 1), (1, 2), (2, 3), (3, 0), (1, 3), (3, 1)];
    let mut found = cycles::cycles(4, &edges);
    found.sort();
    assert_eq!(
        found,
        vec![vec![0, 1, 2, 3], vec![0, 1, 3], vec![1, 2, 3], vec![1, 3]]
    );
}

#[test]
fn a_crowded_member_on_a_wait_cycle_is_told_to_break_it_not_to_queue() {
    // `all`: e calls b and c, and b and c call each other.
    let (roster, bound) = setup(&["e:pa", "b:pa", "c:pa"], "reachability: all\n");
    let edges = edges(&roster, &accepts(&bound));
    let cycles = wait_cycles(&roster, &bound, &edges);
    assert_eq!(cycles.len(), 1);
    assert_eq!(cycles[0].code, W_ROS_002);
    assert!(
        cycles[0].message.contains("wait cycle b → c → b"),
        "{}",
        cycles[0]
    );
    assert!(
        cycles[0]
            .hint_text()
            .contains("drop `b` from the `to` of `c`")
    );
    let crowded = crowded(&roster, &bound, &edges);
    assert_eq!(crowded.len(), 2);
    for w in &crowded {
        assert!(
            w.hint_text().contains("wait cycle b → c → b (W-ROS-002)"),
            "{w}"
        );
        assert!(w.hint_text().contains("break that cycle first"), "{w}");
    }
}

#[test]
fn a_member_with_too_few_turns_to_wait_breaks_the_cycle() {
    let (roster, mut bound) = setup(&["e:pa", "b:pa", "c:pa"], "reachability: all\n");
    bound[2].1.inference.max_turns = 2;
    let edges = edges(&roster, &accepts(&bound));
    assert!(wait_cycles(&roster, &bound, &edges).is_empty());
    for w in crowded(&roster, &bound, &edges) {
        assert!(w.hint_text().contains("run `mur sync`"), "{w}");
        assert!(!w.hint_text().contains("W-ROS-002"), "{w}");
    }
}
