//! `mur kube job` end to end: the real binary on a scaffolded project, its refusals,
//! and every manifest it writes validated offline against Kubernetes' own schemas.
//!
//! The schema check needs `kubernetes-validate` (PyPI) in `.venv`; CI installs it
//! (.ci/run) and runs `cargo test --test it kube::validate -- --ignored`. Without it
//! the test fails: it never passes on a manifest it did not validate.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::World;

/// The Kubernetes version the manifests must be valid for: the oldest one where
/// everything the Job uses is GA (`podFailurePolicy` 1.31, `backoffLimitPerIndex` 1.33).
const KUBERNETES: &str = "1.33.0";

fn team() -> (World, PathBuf) {
    let w = World::new();
    let out = w.mur().args(["new", "--roster", "team"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let project = w.proj.join("team");
    std::fs::create_dir(project.join("tasks")).unwrap();
    for (file, task) in [
        ("a.md", "Plan a picnic."),
        ("b.md", "Plan a hike.\nWith \"quotes\": yes."),
        ("c.md", "Plan a swim."),
    ] {
        std::fs::write(project.join("tasks").join(file), task).unwrap();
    }
    std::fs::write(
        project.join("tasks/list.txt"),
        "a.md\nb.md\n# not this one\nc.md\n",
    )
    .unwrap();
    (w, project)
}

fn job(w: &World, project: &Path, args: &[&str]) -> Output {
    w.mur_in(project)
        .args(["kube", "job", "--image", "registry.example/team:1"])
        .args(args)
        .output()
        .unwrap()
}

fn yaml(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn refused(out: &Output, code: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout when refused");
    assert!(stderr.contains(code), "{code} in: {stderr}");
    stderr
}

#[test]
fn the_job_s_cross_field_checks_refuse_with_a_code() {
    let (w, project) = team();
    refused(
        &job(&w, &project, &["--task", "x", "--grace", "30"]),
        "E-KUB-001",
    );
    let missing = project.join("tasks/bad.txt");
    std::fs::write(&missing, "a.md\nnope.md\n").unwrap();
    let e = refused(
        &job(&w, &project, &["--tasks", "tasks/bad.txt"]),
        "E-KUB-002",
    );
    assert!(e.contains("bad.txt:2:1"), "{e}");
    refused(
        &job(&w, &project, &["--task", "x", "--name", "Team"]),
        "E-KUB-003",
    );
    refused(
        &job(&w, &project, &["--task", "x", "--memory", "lots"]),
        "E-KUB-004",
    );
    // No project here: the roster's own refusal.
    let out = w
        .mur_in(&w.proj)
        .args(["kube", "job", "--image", "x:1", "--task", "t"])
        .output()
        .unwrap();
    refused(&out, "E-ROS-001");
    // Neither --task nor --tasks: a usage error.
    let out = job(&w, &project, &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_task_file_is_passed_as_the_pod_reads_it() {
    let (w, project) = team();
    let out = w
        .mur_in(&project.join("tasks"))
        .args(["kube", "job", "--image", "x:1", "--task", "a.md"])
        .output()
        .unwrap();
    let text = yaml(&out);
    assert!(text.contains("- \"tasks/a.md\""), "{text}");
    assert!(text.contains("workingDir: \"/project\""), "{text}");
}

fn validator() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/.venv/bin/kubernetes-validate"
    ))
}

fn validate(manifest: &str, name: &str, dir: &Path) {
    let file = dir.join(name);
    std::fs::write(&file, manifest).unwrap();
    let out = std::process::Command::new(validator())
        .args(["--strict", "-k", KUBERNETES])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (pip install kubernetes-validate into .venv, as .ci/run does)",
                validator().display()
            )
        });
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{name} is not a valid Kubernetes {KUBERNETES} manifest:\n{said}\n{manifest}"
    );
    let documents = manifest.split("\n---\n").count();
    assert_eq!(
        said.matches(" passed for resource ").count(),
        documents,
        "every document validated: {said}"
    );
}

#[test]
#[ignore = "needs kubernetes-validate in .venv (.ci/run installs it): cargo test --test it kube::validate -- --ignored"]
fn validate_every_manifest_mur_kube_job_writes() {
    let (w, project) = team();
    let cases: &[(&str, &[&str])] = &[
        ("single.yaml", &["--task", "Plan a picnic."]),
        (
            "file.yaml",
            &[
                "--task",
                "tasks/a.md",
                "--deadline",
                "600",
                "--name",
                "picnic",
            ],
        ),
        (
            "records.yaml",
            &[
                "--task",
                "x",
                "--grace",
                "120",
                "--cpu",
                "2",
                "--memory",
                "1Gi",
                "--records-claim",
                "mur-records",
                "--retries",
                "0",
            ],
        ),
        ("indexed.yaml", &["--tasks", "tasks/list.txt"]),
    ];
    for (name, args) in cases {
        let text = yaml(&job(&w, &project, args));
        validate(&text, name, &w.root);
    }
}
