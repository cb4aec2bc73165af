//! `mur new` and `mur new --roster`, run as the real binary with HOME in a tempdir.

use std::path::Path;

use crate::support::World;
use mur::manifest::{self, Transport};
use rstest::rstest;

/// A world whose project folder is where `mur new` writes.
struct Sandbox {
    world: World,
}

impl Sandbox {
    fn new() -> Self {
        Sandbox {
            world: World::new(),
        }
    }

    fn mur(&self, args: &[&str]) -> std::process::Output {
        self.world.mur().args(args).output().unwrap()
    }

    fn entries(&self) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(&self.world.proj)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// `mur new` keeps nothing under HOME but the approval of the folder it made
    /// (docs/approval.md): one owner-only record in ~/.murmur/approvals/.
    fn home_untouched(&self) {
        use std::os::unix::fs::PermissionsExt;
        let approvals = self.world.home.join(".murmur/approvals");
        let all = crate::support::files_under(&self.world.home);
        assert_eq!(all.len(), 1, "{all:?}");
        assert!(all[0].starts_with(&approvals), "{all:?}");
        let mode = std::fs::metadata(&all[0]).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn new_writes_a_capsule_that_parses() {
    let s = Sandbox::new();
    let out = s.mur(&["new", "my-agent"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("my-agent/"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(s.entries(), ["my-agent"]);
    let dir = s.world.proj.join("my-agent");
    let m = manifest::load(&dir.join(manifest::FILE_NAME)).unwrap();
    assert_eq!(m.name, "my-agent");
    assert_eq!(m.version, "0.1.0");
    assert_eq!(m.agent.transport, Transport::Builtin);
    assert!(dir.join(m.instructions.unwrap()).is_file());
    s.home_untouched();
}

#[test]
fn new_roster_writes_a_formation_whose_members_parse() {
    let s = Sandbox::new();
    let out = s.mur(&["new", "--roster", "team"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("mur install lead helper"),
        "{}",
        text(&out.stdout)
    );
    let dir = s.world.proj.join("team");
    let mut files: Vec<_> = walk(&dir);
    files.sort();
    assert_eq!(
        files,
        [
            "README.md",
            "helper/INSTRUCTIONS.md",
            "helper/murmur.yaml",
            "lead/INSTRUCTIONS.md",
            "lead/murmur.yaml",
            "roster.yaml",
        ]
    );

    let lead = manifest::load(&dir.join("lead/murmur.yaml")).unwrap();
    let helper = manifest::load(&dir.join("helper/murmur.yaml")).unwrap();
    assert_eq!(
        (lead.name.as_str(), lead.version.as_str()),
        ("team-lead", "0.1.0")
    );
    assert_eq!(
        (helper.name.as_str(), helper.version.as_str()),
        ("team-helper", "0.1.0")
    );
    assert!(helper.exports.peer_tasks.accept);
    assert!(lead.network.authentication.is_some() && helper.network.authentication.is_some());
    assert!(
        lead.capabilities
            .network
            .allow
            .contains(&"localhost".to_string())
    );

    let roster = std::fs::read_to_string(dir.join("roster.yaml")).unwrap();
    for line in [
        "roster_version: 1",
        "capsule: local/team-lead",
        "capsule: local/team-helper",
        "entry: true",
        "from: lead",
        "to: [helper]",
    ] {
        assert!(roster.contains(line), "{line} missing from:\n{roster}");
    }
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("mur install lead helper"), "{readme}");
    s.home_untouched();
}

#[rstest]
#[case::capsule(&["new", "taken"])]
#[case::roster(&["new", "--roster", "taken"])]
fn an_existing_target_is_refused_and_left_alone(#[case] args: &[&str]) {
    let s = Sandbox::new();
    let taken = s.world.proj.join("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("notes.txt"), "mine").unwrap();
    let out = s.mur(args);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("error[E-NEW-002]"), "{err}");
    assert!(err.contains("taken"), "{err}");
    assert!(err.contains("hint: "), "{err}");
    assert_eq!(s.entries(), ["taken"]);
    assert_eq!(walk(&taken), ["notes.txt"]);
    assert_eq!(
        std::fs::read_to_string(taken.join("notes.txt")).unwrap(),
        "mine"
    );
}

#[rstest]
#[case::upper("MyAgent")]
#[case::digit_first("1agent")]
#[case::underscore("my_agent")]
#[case::dot("my.agent")]
#[case::path("a/b")]
#[case::parent("..")]
#[case::too_long("abcdefghijklmnopqrstuvwxyz0123456")]
fn a_bad_name_is_refused_and_nothing_is_written(#[case] name: &str) {
    for roster in [false, true] {
        let s = Sandbox::new();
        let mut args = vec!["new"];
        if roster {
            args.push("--roster");
        }
        args.push(name);
        let out = s.mur(&args);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = text(&out.stderr);
        assert!(err.contains("error[E-NEW-001]"), "{err}");
        assert!(err.contains("^[a-z][a-z0-9-]{0,31}$"), "{err}");
        assert!(s.entries().is_empty(), "{:?}", s.entries());
    }
}

#[test]
fn the_longest_name_is_accepted() {
    let s = Sandbox::new();
    let name = "abcdefghijklmnopqrstuvwxyz012345";
    assert_eq!(name.len(), 32);
    let out = s.mur(&["new", "--roster", name]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let helper = manifest::load(&s.world.proj.join(name).join("helper")).unwrap();
    assert_eq!(helper.name, format!("{name}-helper"));
}

/// Files under `dir`, relative, with `/`.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(
                    p.strip_prefix(dir)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/"),
                );
            }
        }
    }
    out
}
