//! The formation launcher on real processes: members are stand-ins
//! (tests/fixtures/fake_member.py) that speak the launcher's real protocol over real
//! pipes, lifelines and HTTP on 127.0.0.1.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mur::credential::VerifyKey;
use mur::formation::launch::{Options, Places, Plan, PlanMember, launch};
use mur::manifest::Retain;
use mur::retention::Dirs;
use serde_json::Value;

use crate::support::fake::Fakes;
use crate::support::files_under;

struct Rig {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    fakes: Fakes,
    places: Places,
}

fn world(behaviours: &[(&str, &str)]) -> Rig {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("project")).unwrap();
    let fakes = Fakes::new(&root, behaviours);
    let places = Places {
        retention: Dirs {
            formations: root.join("formations"),
            records: root.join("records"),
        },
        running: root.join("running"),
        program: fakes.program.clone(),
    };
    Rig {
        _tmp: tmp,
        root,
        fakes,
        places,
    }
}

fn member(name: &str, entry: bool, callees: &[&str]) -> PlanMember {
    PlanMember {
        name: name.parse().unwrap(),
        capsule: format!("local/{name}"),
        version: "0.1.0".into(),
        sha256: "ab".repeat(32).parse().unwrap(),
        entry,
        callees: callees.iter().map(|c| c.parse().unwrap()).collect(),
    }
}

/// lead (entry) → coder → reviewer.
fn chain(w: &Rig) -> Plan {
    Plan {
        project_dir: w.root.join("project"),
        members: vec![
            member("lead", true, &["coder"]),
            member("coder", false, &["reviewer"]),
            member("reviewer", false, &[]),
        ],
        retain: Retain::default(),
    }
}

impl Rig {
    fn events(&self, member: &str) -> Vec<Value> {
        self.fakes.events(member)
    }

    fn event(&self, member: &str, kind: &str) -> Option<Value> {
        self.fakes.event(member, kind)
    }

    fn formation_dirs(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.places.retention.formations)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }
}

async fn run(w: &Rig, plan: &Plan) -> i32 {
    launch(
        plan,
        &Options {
            task: Some("do it".into()),
            ..Options::default()
        },
        &w.places,
        mur::credential::FormationKey::mint().unwrap(),
        None,
    )
    .await
}

#[tokio::test]
async fn the_entry_member_s_end_ends_the_formation() {
    let w = world(&[("lead", "exit:7")]);
    let status = run(&w, &chain(&w)).await;
    assert_eq!(
        status, 7,
        "the launcher exits with the entry member's status"
    );
    for peer in ["coder", "reviewer"] {
        assert!(
            w.event(peer, "lifeline_closed").is_some(),
            "{peer} saw its lifeline close"
        );
    }
    let lead = w.event("lead", "started").unwrap();
    let argv: Vec<&str> = lead["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // The launcher's root span of the formation task (docs/trace.md, Trace context).
    let (argv, traced) = argv.split_at(argv.len() - 2);
    assert_eq!(traced[0], "--trace-parent");
    assert!(
        mur::trace::context::SpanContext::parse(traced[1]).is_some(),
        "{traced:?}"
    );
    assert_eq!(
        argv,
        [
            "run",
            "--capsule",
            "local/lead",
            "--capsule-version",
            "0.1.0",
            "--json",
            "--lifecycle-task-acceptance",
            "single",
            "--lifecycle-after-task",
            "exit",
            "--task",
            "do it"
        ]
    );
    let coder = w.event("coder", "started").unwrap();
    let argv: Vec<&str> = coder["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        argv,
        [
            "run",
            "--capsule",
            "local/coder",
            "--capsule-version",
            "0.1.0",
            "--json"
        ]
    );
}

#[tokio::test]
async fn members_get_their_environment_groups_and_folders() {
    let w = world(&[("lead", "exit:0")]);
    assert_eq!(run(&w, &chain(&w)).await, 0);
    let dirs = w.formation_dirs();
    assert_eq!(dirs.len(), 1);
    let frm_dir = &dirs[0];
    let frm = frm_dir.file_name().unwrap().to_str().unwrap().to_string();
    assert!(frm.starts_with("frm_") && frm.len() == 36, "{frm}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&w.places.retention.formations), 0o700);
    assert_eq!(mode(frm_dir), 0o700);
    assert_eq!(mode(&frm_dir.join("formation.json")), 0o600);
    let marker: Value =
        serde_json::from_slice(&std::fs::read(frm_dir.join("formation.json")).unwrap()).unwrap();
    assert_eq!(
        marker["project_dir"],
        w.root.join("project").to_str().unwrap()
    );
    assert_eq!(marker["launcher_pid"], std::process::id());

    let our_pgid = nix::unistd::getpgrp().as_raw() as u64;
    for (name, entry) in [("lead", true), ("coder", false), ("reviewer", false)] {
        let started = w.event(name, "started").unwrap();
        let env = &started["env"];
        assert_eq!(env["MURMUR_FORMATION_ID"], frm.as_str());
        assert_eq!(env["MURMUR_FORMATION_CHANNEL"], "4");
        assert_eq!(env["MURMUR_FORMATION_LIFELINE"], "3");
        assert_eq!(env["MURMUR_HOST_WARNINGS_REPORTED"], "1");
        let creds = &started["credentials"];
        assert_eq!(creds["formation"], frm.as_str());
        assert_eq!(creds["entry"], entry);
        let (pid, pgid) = (
            started["pid"].as_u64().unwrap(),
            started["pgid"].as_u64().unwrap(),
        );
        if entry {
            assert_eq!(
                pgid, our_pgid,
                "the entry member stays in the launcher's group"
            );
            assert_eq!(creds["workdir"], w.root.join("project").to_str().unwrap());
        } else {
            assert_eq!(pgid, pid, "each peer leads a process group of its own");
            let workdir = frm_dir.join(name);
            assert_eq!(creds["workdir"], workdir.to_str().unwrap());
            assert_eq!(mode(&workdir), 0o700);
        }
    }
}

#[tokio::test]
async fn one_token_per_edge_signed_for_that_edge_and_nowhere_else() {
    let w = world(&[("lead", "exit:0")]);
    assert_eq!(run(&w, &chain(&w)).await, 0);
    let edges = [("lead", "coder"), ("coder", "reviewer")];
    let mut all_tokens = Vec::new();
    for name in ["lead", "coder", "reviewer"] {
        let started = w.event(name, "started").unwrap();
        let creds = &started["credentials"];
        let key = VerifyKey::from_text(
            creds["formation"].as_str().unwrap(),
            creds["verify_key"].as_str().unwrap(),
        )
        .unwrap();
        let tokens = creds["tokens"].as_array().unwrap();
        let expected: Vec<&str> = edges
            .iter()
            .filter(|(f, _)| *f == name)
            .map(|(_, t)| *t)
            .collect();
        assert_eq!(tokens.len(), expected.len(), "{name}");
        for (pair, to) in tokens.iter().zip(expected) {
            assert_eq!(pair[0], to);
            let token = pair[1].as_str().unwrap();
            let claims = key.verify(token).unwrap();
            assert_eq!((claims.from.as_str(), claims.to.as_str()), (name, to));
            all_tokens.push(token.to_string());
        }
    }
    // No token in any member's environment or command line, nor in any file left behind.
    for name in ["lead", "coder", "reviewer"] {
        let started = w.event(name, "started").unwrap();
        let visible = format!("{} {}", started["env"], started["argv"]);
        for token in &all_tokens {
            assert!(
                !visible.contains(token.as_str()),
                "a token leaked into {name}'s env or argv"
            );
        }
    }
    for entry in files_under(&w.places.retention.formations) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("mft1."),
            "a token was written to {}",
            entry.display()
        );
    }
}

#[tokio::test]
async fn addresses_reach_exactly_the_members_that_may_call() {
    let w = world(&[("lead", "exit:0")]);
    assert_eq!(run(&w, &chain(&w)).await, 0);
    let doors = |name: &str| -> Vec<Value> {
        w.events(name)
            .into_iter()
            .filter(|e| e["event"] == "channel_line")
            .map(|e| e["line"].clone())
            .collect()
    };
    let coder = doors("coder");
    assert_eq!(coder.len(), 1);
    assert!(
        coder[0]["doors"]["reviewer"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    assert!(
        doors("reviewer").is_empty(),
        "a member that calls nobody is sent no addresses"
    );
    let lead = doors("lead");
    assert_eq!(lead.len(), 1);
    assert_eq!(
        lead[0]["doors"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["coder"]
    );
}

#[tokio::test]
async fn a_peer_that_does_not_come_up_refuses_the_launch() {
    for fault in [
        "exit_early",
        "garbage",
        "no_door",
        "other_formation",
        "exit_after_report",
    ] {
        let w = world(&[("lead", "exit:0"), ("reviewer", fault)]);
        let status = run(&w, &chain(&w)).await;
        assert_eq!(status, 1, "{fault}");
        assert!(
            w.event("lead", "started").is_none(),
            "{fault}: the entry member never starts"
        );
        assert!(
            w.event("coder", "lifeline_closed").is_some(),
            "{fault}: started peers are stopped"
        );
    }
}

#[tokio::test]
async fn a_path_already_there_launches_nothing() {
    let w = world(&[("lead", "exit:0")]);
    // A file where ~/.murmur/formations/ should be a directory.
    std::fs::write(&w.places.retention.formations, "").unwrap();
    assert_eq!(run(&w, &chain(&w)).await, 1);
    for name in ["lead", "coder", "reviewer"] {
        assert!(w.event(name, "started").is_none(), "{name} must not start");
    }
}

#[tokio::test]
async fn a_roster_of_one_makes_no_formation_directory() {
    let w = world(&[("solo", "exit:0")]);
    let plan = Plan {
        project_dir: w.root.join("project"),
        members: vec![member("solo", true, &[])],
        retain: Retain::default(),
    };
    assert_eq!(run(&w, &plan).await, 0);
    assert!(w.event("solo", "started").is_some());
    assert!(!w.places.retention.formations.exists());
}
