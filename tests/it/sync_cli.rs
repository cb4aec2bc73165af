//! `mur sync`: the edit, install and lock loop in one command.

use crate::first_hour::team;

#[test]
fn sync_is_the_edit_install_lock_loop_in_one_command() {
    let (w, project) = team();
    // Without murmur.lock, sync writes none.
    let out = w.mur_in(&project).arg("sync").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("matches its source folder"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        !project.join("murmur.lock").exists(),
        "admission and sync never make a lock"
    );
    assert!(
        w.mur_in(&project)
            .arg("lock")
            .output()
            .unwrap()
            .status
            .success()
    );
    // One edit to a member's source.
    let instructions = project.join("lead/INSTRUCTIONS.md");
    let mut text = std::fs::read_to_string(&instructions).unwrap();
    text.push_str("\nBe brief.\n");
    std::fs::write(&instructions, text).unwrap();
    let out = w
        .mur_in(&project.join("lead"))
        .arg("sync")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("lead: reinstalled local/team-lead 0.1.0"),
        "{stdout}"
    );
    assert!(!stdout.contains("helper: reinstalled"), "{stdout}");
    assert!(
        stdout.contains("murmur.lock: pinned local/team-lead 0.1.0"),
        "{stdout}"
    );
    let run = w
        .mur_in(&project)
        .args(["run", "--roster", "--task", "Say hello."])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let again = w.mur_in(&project).arg("sync").output().unwrap();
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(
        stdout.contains("matches its source folder") && !stdout.contains("pinned"),
        "{stdout}"
    );
}
