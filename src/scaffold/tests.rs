use super::*;
use crate::catalogue::{E_NEW_001, E_NEW_002};
use crate::manifest::{self, Transport};
use crate::yaml;

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

#[test]
fn capsule_scaffold_parses_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let target = create(dir.path(), "my-agent", false).unwrap();
    assert_eq!(target, dir.path().join("my-agent"));
    let m = manifest::load(&target.join(manifest::FILE_NAME)).unwrap();
    assert_eq!(m.name, "my-agent");
    assert_eq!(m.version, "0.1.0");
    assert_eq!(m.agent.transport, Transport::Builtin);
    let instructions = m.instructions.unwrap();
    assert!(target.join(&instructions).is_file(), "{instructions}");
    assert!(leftovers(dir.path()).is_empty());
}

#[cfg(unix)]
#[test]
fn scaffold_folder_has_the_mode_of_a_plain_mkdir() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let target = create(dir.path(), "moded", false).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&target), mode(&plain));
}

#[test]
fn roster_scaffold_is_admissible_once_installed() {
    let dir = tempfile::tempdir().unwrap();
    let target = create(dir.path(), "team", true).unwrap();
    let lead = manifest::load(&target.join("lead/murmur.yaml")).unwrap();
    let helper = manifest::load(&target.join("helper/murmur.yaml")).unwrap();
    assert_eq!(
        (lead.name.as_str(), lead.version.as_str()),
        ("team-lead", "0.1.0")
    );
    assert_eq!(
        (helper.name.as_str(), helper.version.as_str()),
        ("team-helper", "0.1.0")
    );
    // E-ROS-005: the callee serves peers. E-ROS-006: with an edge, both authenticate.
    assert!(helper.exports.peer_tasks.accept);
    assert!(lead.network.authentication.is_some());
    assert!(helper.network.authentication.is_some());
    // W-RUN-008: the caller can reach its callee's door on loopback.
    assert!(
        lead.capabilities
            .network
            .allow
            .iter()
            .any(|h| h == "localhost")
    );
    for m in [&lead, &helper] {
        assert_eq!(m.agent.transport, Transport::Builtin);
        assert!(m.capabilities.spawn.allow.is_empty());
        assert!(
            target
                .join(if m == &lead { "lead" } else { "helper" })
                .join(m.instructions.as_ref().unwrap())
                .is_file()
        );
    }

    let roster_path = target.join("roster.yaml");
    let text = std::fs::read_to_string(&roster_path).unwrap();
    let root = yaml::parse(&text, &roster_path, crate::catalogue::E_ROS_001).unwrap();
    let r = yaml::Reader::new(&roster_path, crate::catalogue::E_ROS_001);
    let top = r
        .map(&root, "", &["roster_version", "members", "reachability"])
        .unwrap();
    assert_eq!(
        r.integer(top.get("roster_version").unwrap(), "v").unwrap(),
        1
    );
    let members = r.seq(top.get("members").unwrap(), "members").unwrap();
    let expect = [
        ("lead", "local/team-lead", true),
        ("helper", "local/team-helper", false),
    ];
    assert_eq!(members.len(), 2);
    for (node, (name, capsule, entry)) in members.iter().zip(expect) {
        let m = r
            .map(node, "members[]", &["name", "capsule", "version", "entry"])
            .unwrap();
        assert_eq!(r.string(m.get("name").unwrap(), "").unwrap(), name);
        assert_eq!(r.string(m.get("capsule").unwrap(), "").unwrap(), capsule);
        assert_eq!(r.string(m.get("version").unwrap(), "").unwrap(), "0.1.0");
        assert_eq!(
            m.get("entry")
                .map(|e| r.bool(e, "").unwrap())
                .unwrap_or(false),
            entry
        );
    }
    let rules = r
        .seq(top.get("reachability").unwrap(), "reachability")
        .unwrap();
    assert_eq!(rules.len(), 1);
    let rule = r.map(&rules[0], "", &["from", "to"]).unwrap();
    assert_eq!(r.string(rule.get("from").unwrap(), "").unwrap(), "lead");
    assert_eq!(r.strings(rule.get("to").unwrap(), "").unwrap(), ["helper"]);

    let readme = std::fs::read_to_string(target.join("README.md")).unwrap();
    assert!(readme.contains("    mur install lead helper\n"), "{readme}");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn longest_name_gives_valid_member_names() {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("a{}", "b".repeat(31));
    let target = create(dir.path(), &name, true).unwrap();
    let helper = manifest::load(&target.join("helper")).unwrap();
    assert_eq!(helper.name, format!("{name}-helper"));
}

#[test]
fn existing_target_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("taken");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep.txt"), "mine").unwrap();
    for roster in [false, true] {
        let err = create(dir.path(), "taken", roster).unwrap_err();
        assert_eq!(err.code, E_NEW_002);
        assert_eq!(err.file.as_deref(), Some(target.as_path()));
    }
    // A plain file, and an empty folder, count as existing too.
    std::fs::write(dir.path().join("file"), "").unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    assert_eq!(
        create(dir.path(), "file", false).unwrap_err().code,
        E_NEW_002
    );
    assert_eq!(
        create(dir.path(), "empty", false).unwrap_err().code,
        E_NEW_002
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("empty")).unwrap().count(),
        0
    );
    assert_eq!(
        std::fs::read_to_string(target.join("keep.txt")).unwrap(),
        "mine"
    );
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 1);
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn rename_never_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("from");
    let to = dir.path().join("to");
    std::fs::create_dir(&from).unwrap();
    std::fs::create_dir(&to).unwrap();
    let err = rename_no_replace(&from, &to).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert!(from.is_dir());
}

#[test]
fn bad_names_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [
        "",
        "1abc",
        "-a",
        "Abc",
        "a_b",
        "a.b",
        "a/b",
        "..",
        "é",
        &"a".repeat(33),
    ] {
        let err = create(dir.path(), bad, false).unwrap_err();
        assert_eq!(err.code, E_NEW_001, "{bad:?}");
        assert!(
            err.message.contains("^[a-z][a-z0-9-]{0,31}$"),
            "{}",
            err.message
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn an_unwritable_place_is_e_new_003_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let err = create(&gone, "agent", false).unwrap_err();
    assert_eq!(err.code, crate::catalogue::E_NEW_003);
    assert!(err.message.contains("gone"), "{}", err.message);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
