//! `mur lock`, run as the real binary with HOME in a temporary folder.

use std::os::unix::fs::PermissionsExt;

use crate::support::*;
use rstest::rstest;

const ROSTER: &str = "roster_version: 1
members:
  - name: planner
    capsule: local/planner
    version: 0.3.0
    entry: true
  - name: coder
    capsule: local/coder
    version: 1.2.0
";

/// coder in the project store, planner and helper in the global store.
fn world() -> World {
    let w = World::new();
    for (name, version, global) in [
        ("coder", "1.2.0", false),
        ("planner", "0.3.0", true),
        ("helper", "2.0.0", true),
    ] {
        write_capsule(&w.path(name), name, version);
        let mut cmd = w.mur();
        cmd.arg("install");
        if global {
            cmd.arg("--global");
        }
        cmd.arg(w.path(name)).assert().success();
    }
    w
}

fn installed_sha(w: &World, rel: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(std::fs::read(rel_path(w, rel)).unwrap()))
}

fn rel_path(w: &World, rel: &str) -> std::path::PathBuf {
    if let Some(r) = rel.strip_prefix("~/") {
        w.home.join(r)
    } else {
        w.proj.join(rel)
    }
}

#[test]
fn lock_pins_the_project_store_the_roster_and_the_manifest_artifacts() {
    let w = world();
    std::fs::write(w.proj.join("roster.yaml"), ROSTER).unwrap();
    std::fs::write(
        w.proj.join("murmur.yaml"),
        format!(
            "{}artifacts:\n  - name: local/helper\n    version: 2.0.0\n",
            manifest_text("app", "1.0.0")
        ),
    )
    .unwrap();
    let o = w.mur().arg("lock").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(w.proj.join("murmur.lock")).unwrap();
    let expected = format!(
        "# murmur.lock: written by `mur lock`; do not edit.
lock_version: 1
artifacts:
  - name: local/coder
    version: \"1.2.0\"
    sha256: {}
  - name: local/helper
    version: \"2.0.0\"
    sha256: {}
  - name: local/planner
    version: \"0.3.0\"
    sha256: {}
",
        installed_sha(&w, ".murmur/artifacts/local/coder/1.2.0.mur.zip"),
        installed_sha(&w, "~/.murmur/artifacts/local/helper/2.0.0.mur.zip"),
        installed_sha(&w, "~/.murmur/artifacts/local/planner/0.3.0.mur.zip"),
    );
    assert_eq!(text, expected);
    let wrote = format!("wrote {} (3 pins)", w.proj.join("murmur.lock").display());
    assert_eq!(
        stdout(&o).lines().last(),
        Some(wrote.as_str()),
        "{}",
        stdout(&o)
    );
    let o = w.mur().arg("lock").output().unwrap();
    assert_eq!(stdout(&o), "murmur.lock is up to date (3 pins)\n");
    // Other bytes installed: the next `mur lock` pins them.
    std::fs::write(w.path("coder/docs/notes.md"), "new\n").unwrap();
    w.mur()
        .args(["install", "--force"])
        .arg(w.path("coder"))
        .assert()
        .success();
    w.mur().arg("lock").assert().success();
    let text = std::fs::read_to_string(w.proj.join("murmur.lock")).unwrap();
    assert!(text.contains(&installed_sha(
        &w,
        ".murmur/artifacts/local/coder/1.2.0.mur.zip"
    )));
}

/// One case per way `mur lock` refuses; murmur.lock is left as it was.
#[rstest]
#[case::member_not_installed(&ROSTER.replace("1.2.0", "1.3.0"), "", "E-REG-002", "roster.yaml:7:5")]
#[case::artifact_not_installed(
    "",
    "  - name: local/ghost\n    version: 1.0.0\n",
    "E-REG-002",
    "murmur.yaml:7:5"
)]
#[case::two_versions_asked(
    ROSTER,
    "  - name: local/coder\n    version: 9.9.9\n",
    "E-REG-006",
    "murmur.yaml:7:5"
)]
#[case::bare_capsule_name(&ROSTER.replace("local/coder", "coder"), "", "E-ROS-001", "roster.yaml:8:14")]
#[case::roster_not_yaml("members: [\n", "", "E-ROS-001", "roster.yaml:2:1")]
#[case::project_not_writable("", "", "E-REG-007", "murmur.lock")]
fn lock_faults(
    #[case] roster: &str,
    #[case] artifacts: &str,
    #[case] code: &str,
    #[case] place: &str,
) {
    let w = world();
    std::fs::write(w.proj.join("murmur.lock"), "previous\n").unwrap();
    if !roster.is_empty() {
        std::fs::write(w.proj.join("roster.yaml"), roster).unwrap();
    }
    if !artifacts.is_empty() {
        std::fs::write(
            w.proj.join("murmur.yaml"),
            format!("{}artifacts:\n{artifacts}", manifest_text("app", "1.0.0")),
        )
        .unwrap();
    }
    let o = if code == "E-REG-007" {
        let mut cmd = w.mur_unprivileged();
        std::fs::set_permissions(&w.proj, std::fs::Permissions::from_mode(0o555)).unwrap();
        cmd.arg("lock").output().unwrap()
    } else {
        w.mur().arg("lock").output().unwrap()
    };
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("error[{code}]")), "{err}");
    assert!(err.contains(place), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert_eq!(
        std::fs::read_to_string(w.proj.join("murmur.lock")).unwrap(),
        "previous\n"
    );
}
