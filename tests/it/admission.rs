//! Admission and `mur doctor` end to end: capsules installed with the real `mur install`
//! into a temporary project (HOME a temporary folder too), admitted by the real binary.

use std::path::{Path, PathBuf};

use std::process::Command;

use crate::support::{OutputAssertExt, World};
use rstest::rstest;
use serde_json::Value;

/// A world whose project folder holds the roster; capsule sources go under HOME.
struct Project {
    world: World,
}

/// What a capsule declares: serves peers, authenticates, queues N.
#[derive(Clone, Copy, Default)]
struct Decl {
    serves: bool,
    auth: bool,
    queue: Option<u32>,
}

const PEER: Decl = Decl {
    serves: true,
    auth: true,
    queue: None,
};
const AUTH: Decl = Decl {
    serves: false,
    auth: true,
    queue: None,
};
const BARE: Decl = Decl {
    serves: false,
    auth: false,
    queue: None,
};

impl Project {
    fn new() -> Self {
        Project {
            world: World::new(),
        }
    }

    fn path(&self) -> &Path {
        &self.world.proj
    }

    fn mur(&self) -> Command {
        self.world.mur()
    }

    /// A capsule source folder outside the project.
    fn capsule(&self, name: &str, version: &str, decl: Decl) -> PathBuf {
        let dir = self
            .world
            .home
            .join("src")
            .join(format!("{name}-{version}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = format!(
            "name: {name}\nversion: \"{version}\"\ndescription: The {name} capsule.\nagent:\n  transport: builtin\n\
             capabilities:\n  network:\n    allow: [localhost]\n"
        );
        if decl.serves {
            text.push_str("exports:\n  peer_tasks:\n    accept: true\n");
        }
        if decl.auth {
            text.push_str("network:\n  authentication: {}\n");
        }
        if let Some(q) = decl.queue {
            text.push_str(&format!(
                "lifecycle:\n  task_acceptance: queue\n  queue_depth: {q}\n"
            ));
        }
        std::fs::write(dir.join("murmur.yaml"), text).unwrap();
        dir
    }

    /// `mur install` of a fresh capsule folder, into the project store or the global one.
    fn install(&self, name: &str, version: &str, decl: Decl, global: bool) {
        let folder = self.capsule(name, version, decl);
        let mut cmd = self.mur();
        cmd.arg("install").arg(&folder);
        if global {
            cmd.arg("--global");
        }
        cmd.assert().success();
    }

    fn roster(&self, text: &str) {
        std::fs::write(self.path().join("roster.yaml"), text).unwrap();
    }

    /// `mur doctor --json`: exit status and the one object it prints.
    fn doctor(&self) -> (i32, Value) {
        let out = self.mur().args(["doctor", "--json"]).output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let json: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("not one JSON object ({e}): {stdout:?}"));
        (out.status.code().unwrap(), json)
    }

    fn refused(&self) -> Value {
        let (status, json) = self.doctor();
        assert_eq!(status, 1, "{json:#}");
        assert_eq!(json["admitted"], false);
        let error = json["error"].clone();
        // Roster codes point into the roster; E-REG-005 is where the lock says.
        if error["code"].as_str().unwrap().starts_with("E-ROS-") {
            assert_eq!(error["file"], "roster.yaml", "{error:#}");
            assert!(error["line"].as_u64().unwrap() >= 1, "{error:#}");
            assert!(error["column"].as_u64().unwrap() >= 1, "{error:#}");
        }
        assert!(!error["hint"].as_str().unwrap().is_empty(), "{error:#}");
        error
    }

    fn admitted(&self) -> Value {
        let (status, json) = self.doctor();
        assert_eq!(status, 0, "{json:#}");
        assert_eq!(json["admitted"], true);
        json
    }

    fn pin(&self, pins: &[(&str, &str, &str)]) {
        let mut text = String::from("lock_version: 1\nartifacts:\n");
        for (name, version, sha) in pins {
            text.push_str(&format!(
                "  - name: {name}\n    version: \"{version}\"\n    sha256: {sha}\n"
            ));
        }
        std::fs::write(self.path().join("murmur.lock"), text).unwrap();
    }
}

/// A roster of members "name" (capsule local/name, version 1.0.0), the first the entry.
fn roster(members: &[&str], reach: &str) -> String {
    let mut text = String::from("roster_version: 1\nmembers:\n");
    for (i, name) in members.iter().enumerate() {
        text.push_str(&format!(
            "  - name: {name}\n    capsule: local/{name}\n    version: 1.0.0\n"
        ));
        if i == 0 {
            text.push_str("    entry: true\n");
        }
    }
    text + reach
}

const ZERO: &str = "0000000000000000000000000000000000000000000000000000000000000000";

// ---- The Admission order table: one case per row ------------------------------

/// Each row's fault alone; everything else in order. Installs: (name, decl).
#[rstest]
#[case::row_1_shape(&[], "roster_version: 1\nmembers:\n  - {name: a, capsule: local/a, version: 1.0.0, entry: true, colour: red}\n", None, "E-ROS-001", "member", 3, 62)]
#[case::row_2_unique_names(&[], "roster_version: 1\nmembers:\n  - {name: a, capsule: local/a, version: 1.0.0, entry: true}\n  - {name: a, capsule: local/b, version: 1.0.0}\n", None, "E-ROS-003", "member", 4, 12)]
#[case::row_3_one_entry(&[], "roster_version: 1\nmembers:\n  - {name: a, capsule: local/a, version: 1.0.0}\n", None, "E-ROS-002", "roster", 2, 1)]
#[case::row_4_rule_names_members(&[], "roster_version: 1\nmembers:\n  - {name: a, capsule: local/a, version: 1.0.0, entry: true}\nreachability:\n  - {from: a, to: [b]}\n", None, "E-ROS-004", "rule", 5, 20)]
#[case::row_5_entry_not_called(&[], "roster_version: 1\nmembers:\n  - {name: a, capsule: local/a, version: 1.0.0, entry: true}\n  - {name: b, capsule: local/b, version: 1.0.0}\nreachability:\n  - {from: b, to: [a]}\n", None, "E-ROS-008", "rule", 6, 20)]
#[case::row_6_installed(&[("a", PEER)], "roster_version: 1\nmembers:\n  - {name: a, capsule: local/a, version: 1.0.0, entry: true}\n  - {name: b, capsule: local/b, version: 1.0.0}\n", None, "E-ROS-007", "member", 4, 24)]
#[case::row_6_lock_agrees(&[("a", PEER)], "roster_version: 1\nmembers:\n  - {name: a, capsule: local/a, version: 1.0.0, entry: true}\n", Some(("local/a", "1.0.0")), "E-REG-005", "member", 0, 0)]
#[case::row_7_callee_serves_peers(&[("a", AUTH), ("b", AUTH)], "roster_version: 1\nmembers:\n  - {name: a, capsule: local/a, version: 1.0.0, entry: true}\n  - {name: b, capsule: local/b, version: 1.0.0}\nreachability:\n  - {from: a, to: [b]}\n", None, "E-ROS-005", "member", 6, 20)]
#[case::row_8_doors_authenticate(&[("a", AUTH), ("b", PEER), ("c", BARE)], "roster_version: 1\nmembers:\n  - {name: a, capsule: local/a, version: 1.0.0, entry: true}\n  - {name: b, capsule: local/b, version: 1.0.0}\n  - {name: c, capsule: local/c, version: 1.0.0}\nreachability:\n  - {from: a, to: [b]}\n", None, "E-ROS-006", "member", 5, 12)]
fn admission_order_rows(
    #[case] installs: &[(&str, Decl)],
    #[case] text: &str,
    #[case] pin: Option<(&str, &str)>,
    #[case] code: &str,
    #[case] kind: &str,
    #[case] line: u64,
    #[case] column: u64,
) {
    let p = Project::new();
    for (name, decl) in installs {
        p.install(name, "1.0.0", *decl, false);
    }
    if let Some((name, version)) = pin {
        p.pin(&[(name, version, ZERO)]);
    }
    p.roster(text);
    let error = p.refused();
    assert_eq!(error["code"], code, "{error:#}");
    assert_eq!(error["at_fault"]["kind"], kind, "{error:#}");
    if code == "E-REG-005" {
        // Reported as the lock reports it, naming the member.
        assert!(
            error["message"].as_str().unwrap().starts_with("member `a`"),
            "{error:#}"
        );
    } else {
        assert_eq!(
            (error["line"].as_u64(), error["column"].as_u64()),
            (Some(line), Some(column)),
            "{error:#}"
        );
    }
}

// ---- Ordering across checks --------------------------------------------------------

/// Checks 1–5 read no store: a structural fault is refused even though nothing is
/// installed and the lock does not parse.
#[test]
fn structural_faults_come_before_any_store() {
    let p = Project::new();
    std::fs::write(p.path().join("murmur.lock"), "not: [a lock\n").unwrap();
    p.roster(&roster(&["a", "b", "a"], ""));
    assert_eq!(p.refused()["code"], "E-ROS-003");
}

/// Check 6 takes each member through both rows before the next: member 1's lock
/// mismatch beats member 2 not being installed, and member 1 not installed beats
/// member 2's lock mismatch.
#[rstest]
#[case::lock_of_first_before_install_of_second(&["a"], &["local/a"], "E-REG-005", "a")]
#[case::install_of_first_before_lock_of_second(&["b"], &["local/b"], "E-ROS-007", "a")]
fn check_6_takes_each_member_through_both_rows(
    #[case] installed: &[&str],
    #[case] pinned: &[&str],
    #[case] code: &str,
    #[case] member: &str,
) {
    let p = Project::new();
    for name in installed {
        p.install(name, "1.0.0", PEER, false);
    }
    let pins: Vec<(&str, &str, &str)> = pinned.iter().map(|n| (*n, "1.0.0", ZERO)).collect();
    p.pin(&pins);
    p.roster(&roster(&["a", "b"], ""));
    let error = p.refused();
    assert_eq!(error["code"], code, "{error:#}");
    assert_eq!(error["at_fault"]["name"], member, "{error:#}");
}

/// 6 before 7, 7 before 8; within 7 and 8, members in roster order.
#[rstest]
#[case::installed_before_serving(&[("a", BARE)], &["a", "b"], "reachability:\n  - {from: a, to: [b]}\n", "E-ROS-007", "b")]
#[case::serving_before_authentication(&[("a", BARE), ("b", BARE)], &["a", "b"], "reachability:\n  - {from: a, to: [b]}\n", "E-ROS-005", "b")]
#[case::serving_in_roster_order(&[("a", AUTH), ("b", AUTH), ("c", AUTH)], &["a", "b", "c"], "reachability:\n  - {from: a, to: [c]}\n  - {from: a, to: [b]}\n", "E-ROS-005", "b")]
#[case::authentication_in_roster_order(&[("a", BARE), ("b", PEER), ("c", BARE)], &["a", "b", "c"], "reachability:\n  - {from: a, to: [b]}\n", "E-ROS-006", "a")]
fn later_checks_in_order(
    #[case] installs: &[(&str, Decl)],
    #[case] members: &[&str],
    #[case] reach: &str,
    #[case] code: &str,
    #[case] member: &str,
) {
    let p = Project::new();
    for (name, decl) in installs {
        p.install(name, "1.0.0", *decl, false);
    }
    p.roster(&roster(members, reach));
    let error = p.refused();
    assert_eq!(error["code"], code, "{error:#}");
    assert_eq!(error["at_fault"]["name"], member, "{error:#}");
}

/// murmur.lock is read when the first member found needs it: a lock that does not
/// read comes after an earlier member's E-ROS-007, and is refused with its own code.
#[test]
fn a_lock_that_does_not_read_is_reported_at_the_first_member_found() {
    let p = Project::new();
    std::fs::write(p.path().join("murmur.lock"), "lock_version: [\n").unwrap();
    p.install("b", "1.0.0", BARE, false);
    p.roster(&roster(&["a", "b"], ""));
    assert_eq!(p.refused()["code"], "E-ROS-007");
    p.install("a", "1.0.0", BARE, false);
    let error = p.refused();
    assert!(
        error["code"].as_str().unwrap().starts_with("E-REG-"),
        "{error:#}"
    );
    assert_eq!(error["at_fault"]["name"], "a", "{error:#}");
}

// ---- Admitted rosters --------------------------------------------------------------

#[test]
fn admitted_roster_reports_members_edges_and_warnings() {
    let p = Project::new();
    p.install("planner", "1.0.0", AUTH, false);
    p.install("coder", "1.0.0", PEER, true);
    p.install("reviewer", "1.0.0", PEER, false);
    p.roster(&roster(
        &["planner", "coder", "reviewer"],
        "reachability:\n  - from: planner\n    to: [coder, reviewer]\n  - from: reviewer\n    to: [coder]\n  - from: planner\n    to: [coder]\n",
    ));
    let json = p.admitted();
    let members = json["members"].as_array().unwrap();
    let names: Vec<&str> = members
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["planner", "coder", "reviewer"]);
    assert_eq!(members[0]["entry"], true);
    assert_eq!(members[1]["store"], "global");
    assert_eq!(members[2]["store"], "project");
    for m in members {
        assert_eq!(m["version"], "1.0.0");
        assert_eq!(m["sha256"].as_str().unwrap().len(), 64);
        // The sha256 is of the bytes found.
        let bytes = std::fs::read(m["path"].as_str().unwrap()).unwrap();
        assert_eq!(m["sha256"], sha256_hex(&bytes));
    }
    let edges: Vec<String> = json["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}>{}",
                e["from"].as_str().unwrap(),
                e["to"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        edges,
        ["planner>coder", "planner>reviewer", "reviewer>coder"]
    );
    // coder: two callers, holds one task.
    let warnings = json["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert_eq!(warnings[0]["code"], "W-ROS-001");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(
        message.contains("member `coder`") && message.contains("queue_depth: 1"),
        "{message}"
    );

    // The human report says the same, on stdout, exit 0.
    let out = p.mur().arg("doctor").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("roster.yaml: admitted (3 members, 3 edges, 1 warning)"),
        "{text}"
    );
    assert!(text.contains("planner -> reviewer"), "{text}");
    assert!(
        text.contains(&format!(
            "sha256:{}",
            members[1]["sha256"].as_str().unwrap()
        )),
        "{text}"
    );
    assert!(text.contains("warning[W-ROS-001]"), "{text}");
}

#[test]
fn refusal_in_human_form_names_code_place_and_hint() {
    let p = Project::new();
    p.roster(
        "roster_version: 1\nmembers:\n  - {name: a, capsule: coder, version: 1.0.0, entry: true}\n",
    );
    let out = p.mur().arg("doctor").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "roster.yaml: refused\n\
         error[E-ROS-001]: member `a`: `capsule: coder` is a bare name; a member names its \
         capsule by its full name, `<scope>/<name>`\n  \
         --> roster.yaml:3:24\n   \
         |\n \
         3 |   - {name: a, capsule: coder, version: 1.0.0, entry: true}\n   \
         |                        ^\n  \
         = hint: Write `capsule: local/coder` for a capsule installed from its .mur.zip, or \
         `<scope>/coder` with the scope it was installed under.\n"
    );
}

#[test]
fn doctor_takes_a_roster_path_or_its_folder() {
    let p = Project::new();
    p.install("a", "1.0.0", BARE, false);
    let other = p.path().join("elsewhere.yaml");
    std::fs::write(&other, roster(&["a"], "")).unwrap();
    let run = |arg: &Path| {
        let out = p
            .world
            .mur_in(&p.world.home)
            .args(["doctor", "--json", "--roster"])
            .arg(arg)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let (status, out) = run(&other);
    assert_eq!(status, Some(0), "{out}");
    // The folder: its roster.yaml, absent here.
    let (status, out) = run(p.path());
    assert_eq!(status, Some(1), "{out}");
    assert!(out.contains("E-ROS-001"), "{out}");
}

/// The project store comes before the global store, and binds the project's bytes.
#[test]
fn project_store_before_global_store() {
    let p = Project::new();
    p.install("a", "1.0.0", AUTH, true);
    p.install("a", "1.0.0", PEER, false);
    p.roster(&roster(&["a"], ""));
    let json = p.admitted();
    assert_eq!(json["members"][0]["store"], "project");
}

/// A member installed only at another version: refused, and the hint names it.
#[test]
fn not_installed_hint_names_installed_versions() {
    let p = Project::new();
    p.install("a", "0.9.0", BARE, false);
    p.roster(&roster(&["a"], ""));
    let error = p.refused();
    assert_eq!(error["code"], "E-ROS-007");
    assert!(
        error["hint"].as_str().unwrap().contains("0.9.0 (project)"),
        "{error:#}"
    );
}

// ---- murmur.lock is only read ----------------------------------------------------------

#[test]
fn admission_never_creates_a_lock() {
    let p = Project::new();
    p.install("a", "1.0.0", BARE, false);
    p.roster(&roster(&["a"], ""));
    p.admitted();
    assert!(!p.path().join("murmur.lock").exists());
}

#[test]
fn admission_never_changes_the_lock_and_a_matching_pin_is_admitted() {
    let p = Project::new();
    p.install("a", "1.0.0", PEER, false);
    p.install("b", "1.0.0", PEER, false);
    p.roster(&roster(&["a", "b"], "reachability: all\n"));
    let sha = p.admitted()["members"][0]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    // Pins `a` only; `b` is admitted at the roster's version.
    p.pin(&[("local/a", "1.0.0", &sha)]);
    let lock = p.path().join("murmur.lock");
    let before = (
        std::fs::read(&lock).unwrap(),
        std::fs::metadata(&lock).unwrap().modified().unwrap(),
    );
    let json = p.admitted();
    assert_eq!(json["edges"].as_array().unwrap().len(), 1);
    // A pin at another version refuses, and still changes nothing.
    p.pin(&[("local/a", "2.0.0", &sha)]);
    let pinned = (
        std::fs::read(&lock).unwrap(),
        std::fs::metadata(&lock).unwrap().modified().unwrap(),
    );
    assert_eq!(p.refused()["code"], "E-REG-005");
    let after = (
        std::fs::read(&lock).unwrap(),
        std::fs::metadata(&lock).unwrap().modified().unwrap(),
    );
    assert_eq!(pinned, after);
    assert_ne!(before.0, after.0);
}

// ---- The murmur.yaml beside the roster ---------------------------------------------------

#[test]
fn murmur_yaml_beside_the_roster_is_not_a_member_unless_named() {
    let p = Project::new();
    p.install("a", "1.0.0", BARE, false);
    // Not a valid manifest at all: admission does not read it.
    std::fs::write(p.path().join("murmur.yaml"), "name: [broken\n").unwrap();
    p.roster(&roster(&["a"], ""));
    let json = p.admitted();
    assert_eq!(json["members"].as_array().unwrap().len(), 1);

    // Named by a member, it must be installed like any other capsule.
    std::fs::write(
        p.path().join("murmur.yaml"),
        "name: here\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n",
    )
    .unwrap();
    p.roster(&roster(&["a", "here"], ""));
    let error = p.refused();
    assert_eq!(error["code"], "E-ROS-007");
    assert!(
        error["hint"].as_str().unwrap().contains("mur install ."),
        "{error:#}"
    );
    p.mur().args(["install", "."]).assert().success();
    let json = p.admitted();
    assert_eq!(json["members"][1]["capsule"], "local/here");
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// `mur new --roster` writes a roster that admission accepts as written, once its
/// members are installed.
#[test]
fn mur_new_roster_is_admitted_as_written() {
    let p = Project::new();
    p.mur().args(["new", "--roster", "team"]).assert().success();
    let team = p.path().join("team");
    let mur = |args: &[&str]| p.world.mur_in(&team).args(args).output().unwrap();
    let out = mur(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("E-ROS-007"));
    assert!(mur(&["install", "lead", "helper"]).status.success());
    let out = mur(&["doctor", "--json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{json:#}");
    assert_eq!(
        json["edges"],
        serde_json::json!([{"from": "lead", "to": "helper"}])
    );
}
