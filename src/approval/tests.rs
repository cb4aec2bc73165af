use super::*;

fn sha(s: &str) -> Sha256 {
    Sha256::of(s.as_bytes())
}

fn state(files: &[(&str, &str)], artifacts: &[(&str, &str)]) -> State {
    State {
        files: files.iter().map(|(k, v)| (k.to_string(), sha(v))).collect(),
        artifacts: artifacts
            .iter()
            .map(|(k, v)| (k.to_string(), sha(v)))
            .collect(),
        capsules: BTreeMap::new(),
        launched: false,
    }
}

#[test]
fn every_difference_is_one_change_and_artifacts_show_their_sha256() {
    let was = state(
        &[("roster.yaml", "a"), ("murmur.lock", "l")],
        &[("local/helper 0.1.0", "h")],
    );
    let now = state(
        &[("roster.yaml", "b")],
        &[("local/helper 0.1.0", "planted"), ("local/evil 1.0.0", "e")],
    );
    let changes = compare(&was, &now, None);
    let lines: Vec<String> = changes.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(
        lines.contains(&"murmur.lock: removed".to_string()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"roster.yaml: changed".to_string()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&format!(
            "local/helper 0.1.0 (project store): sha256 {} → {}",
            sha("h"),
            sha("planted")
        )),
        "{lines:?}"
    );
    assert!(
        lines.contains(&format!(
            "local/evil 1.0.0 (project store): added, sha256 {}",
            sha("e")
        )),
        "{lines:?}"
    );
    assert!(compare(&was, &was, None).is_empty());
}

#[test]
fn only_the_capsule_folder_launched_is_compared() {
    let mut was = State::default();
    let mut now = State::default();
    for (key, old, new) in [("lead", "x", "y"), ("helper", "p", "q")] {
        was.capsules
            .insert(key.into(), [("murmur.yaml".to_string(), sha(old))].into());
        now.capsules
            .insert(key.into(), [("murmur.yaml".to_string(), sha(new))].into());
    }
    let lead: Vec<String> = compare(&was, &now, Some("lead"))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(lead, ["lead/murmur.yaml: changed"]);
    assert_eq!(compare(&was, &now, None).len(), 2);
}

#[test]
fn a_record_reads_back_and_refuses_unknown_keys() {
    let record = Record {
        record_version: RECORD_VERSION,
        project: PathBuf::from("/p"),
        approved: state(&[("roster.yaml", "a")], &[("local/x 1", "b")]),
    };
    let text = serde_json::to_string(&record).unwrap();
    let back: Record = serde_json::from_str(&text).unwrap();
    assert_eq!(back.approved, record.approved);
    let widened = text.replacen('{', "{\"extra\":1,", 1);
    assert!(
        serde_json::from_str::<Record>(&widened).is_err(),
        "{widened}"
    );
}

#[test]
fn a_path_is_one_shell_word() {
    assert_eq!(shell_word(Path::new("/home/u/team")), "/home/u/team");
    assert_eq!(
        shell_word(Path::new("/home/u/my team")),
        "'/home/u/my team'"
    );
    assert_eq!(shell_word(Path::new("/x/it's")), r"'/x/it'\''s'");
}
