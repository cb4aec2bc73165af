use super::*;

fn args() -> JobArgs {
    JobArgs {
        image: "registry.example/team:1".into(),
        task: Some("Plan a picnic.".into()),
        tasks: None,
        name: None,
        grace: default_grace(),
        deadline: None,
        cpu: "500m".into(),
        memory: "512Mi".into(),
        retries: 2,
        records_claim: None,
    }
}

/// A project folder with a roster of two members (nothing installed: the Job
/// needs only the roster).
fn project() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("Team_Run.")
        .tempdir()
        .unwrap();
    std::fs::write(
        dir.path().join("roster.yaml"),
        "roster_version: 1\nmembers:\n  - name: lead\n    capsule: local/lead\n    version: 0.1.0\n    entry: true\n  - name: helper\n    capsule: local/helper\n    version: 0.1.0\nreachability:\n  - from: lead\n    to: [helper]\n",
    )
    .unwrap();
    dir
}

fn code(r: Result<String>) -> String {
    r.expect_err("refused").code.to_string()
}

#[test]
fn the_grace_must_cover_the_member_kill_and_the_flush() {
    assert_eq!(default_grace(), 35);
    let p = project();
    let mut a = args();
    a.grace = 34;
    assert_eq!(code(render(&a, p.path())), "E-KUB-001");
    a.grace = 35;
    let yaml = render(&a, p.path()).unwrap();
    assert!(yaml.contains("terminationGracePeriodSeconds: 35"), "{yaml}");
}

#[test]
fn a_single_task_job_never_restarts_and_fails_the_job_on_a_usage_error() {
    let p = project();
    let yaml = render(&args(), p.path()).unwrap();
    for want in [
        "restartPolicy: Never",
        "backoffLimit: 2",
        "type: DisruptionTarget",
        "- action: FailJob",
        "values: [2]",
        "readOnlyRootFilesystem: true",
        "runAsNonRoot: true",
        "emptyDir: {}",
        "- \"--task\"\n        - \"Plan a picnic.\"",
        "members lead, helper",
    ] {
        assert!(yaml.contains(want), "no {want:?} in\n{yaml}");
    }
    assert!(!yaml.contains("ConfigMap"), "{yaml}");
    // The folder `Team_Run.xxxx` made a label.
    assert!(yaml.contains("name: \"team-run-"), "{yaml}");
}

#[test]
fn a_task_file_of_the_project_is_named_from_the_project_root() {
    let p = project();
    std::fs::create_dir(p.path().join("tasks")).unwrap();
    std::fs::write(p.path().join("tasks/a.md"), "Do a.").unwrap();
    let mut a = args();
    a.task = Some("a.md".into());
    let yaml = render(&a, &p.path().join("tasks")).unwrap();
    assert!(yaml.contains("- \"tasks/a.md\""), "{yaml}");
}

#[test]
fn an_indexed_job_reads_its_task_by_its_index_from_a_configmap() {
    let p = project();
    std::fs::write(p.path().join("one.md"), "First \"task\"\nline two").unwrap();
    std::fs::write(p.path().join("two.md"), "Second").unwrap();
    std::fs::write(p.path().join("list.txt"), "# the tasks\none.md\n\ntwo.md\n").unwrap();
    let mut a = args();
    a.task = None;
    a.tasks = Some("list.txt".into());
    let yaml = render(&a, p.path()).unwrap();
    for want in [
        "kind: ConfigMap",
        "\"0\": \"First \\\"task\\\"\\nline two\"",
        "\"1\": \"Second\"",
        "completionMode: Indexed",
        "completions: 2",
        "backoffLimitPerIndex: 2",
        "- action: FailIndex",
        "/var/run/mur-tasks/$(MUR_TASK_INDEX)",
        "job-completion-index",
    ] {
        assert!(yaml.contains(want), "no {want:?} in\n{yaml}");
    }
    assert!(!yaml.contains("backoffLimit: "), "{yaml}");
}

#[test]
fn a_task_list_naming_a_missing_file_is_refused_with_its_line() {
    let p = project();
    std::fs::write(p.path().join("list.txt"), "\nmissing.md\n").unwrap();
    let mut a = args();
    a.task = None;
    a.tasks = Some("list.txt".into());
    let d = render(&a, p.path()).unwrap_err();
    assert_eq!(d.code.to_string(), "E-KUB-002");
    assert!(d.to_string().contains("list.txt:2:1"), "{d}");
    std::fs::write(p.path().join("list.txt"), "# nothing\n").unwrap();
    assert_eq!(code(render(&a, p.path())), "E-KUB-002");
    a.tasks = Some("absent.txt".into());
    assert_eq!(code(render(&a, p.path())), "E-KUB-002");
}

#[test]
fn bad_names_images_and_quantities_are_refused() {
    let p = project();
    for (name, want) in [("Bad_Name", "E-KUB-003"), ("-x", "E-KUB-003")] {
        let mut a = args();
        a.name = Some(name.into());
        assert_eq!(code(render(&a, p.path())), want, "{name}");
    }
    let mut a = args();
    a.image = "reg/x:1\nkind: Pod".into();
    assert_eq!(code(render(&a, p.path())), "E-KUB-004");
    for q in ["", "1.", "12Q", "m", "-1"] {
        let mut a = args();
        a.memory = q.into();
        assert_eq!(code(render(&a, p.path())), "E-KUB-004", "{q:?}");
    }
    for q in ["1", "0.5", "250m", "1Gi", "512Mi", "2G"] {
        assert!(check_quantity("--cpu", q).is_ok(), "{q}");
    }
}

#[test]
fn a_project_without_a_roster_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(render(&args(), dir.path())), "E-ROS-001");
}
