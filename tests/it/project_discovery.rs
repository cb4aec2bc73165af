//! Finding the project: a command run in a member's folder finds it, and the search
//! stops below HOME.

use serde_json::Value;

use crate::first_hour::team;
use crate::support::World;

#[test]
fn commands_find_the_project_from_a_member_s_folder() {
    let (w, project) = team();
    let lead = project.join("lead");
    // mur doctor finds ../roster.yaml, mur ls ../.murmur/.
    let doctor = w.mur_in(&lead).arg("doctor").output().unwrap();
    assert_eq!(
        doctor.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&doctor.stderr)
    );
    assert!(String::from_utf8_lossy(&doctor.stdout).contains("lead"));
    let ls = w.mur_in(&lead).args(["ls", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&ls.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    // mur lock writes the project's murmur.lock, not one in the member's folder.
    let lock = w.mur_in(&lead).arg("lock").output().unwrap();
    assert!(
        lock.status.success(),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );
    assert!(project.join("murmur.lock").is_file());
    assert!(!lead.join("murmur.lock").exists());
    // mur run --roster launches the project's formation from deeper still.
    let deeper = lead.join("notes");
    std::fs::create_dir_all(&deeper).unwrap();
    let run = w
        .mur_in(&deeper)
        .args(["run", "--roster", "--task", "Say hello."])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Outside any project nothing is found: the folder itself.
    let elsewhere = w.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let ls = w
        .mur_in(&elsewhere)
        .args(["ls", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&ls.stdout).unwrap(),
        serde_json::json!([])
    );
}

/// The search for the project stops below the home folder: its `.murmur/` is the
/// global store, never a project, so a folder in home with no marker is its own project.
#[test]
fn the_project_search_stops_below_home() {
    let w = World::new();
    let src = w.root.join("src/c");
    crate::support::write_capsule(&src, "c", "1.0.0");
    let global = w
        .mur()
        .args(["install", "--global"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        global.status.success(),
        "{}",
        String::from_utf8_lossy(&global.stderr)
    );
    assert!(
        w.home
            .join(".murmur/artifacts/local/c/1.0.0.mur.zip")
            .is_file()
    );
    let work = w.home.join("work/notes");
    std::fs::create_dir_all(&work).unwrap();
    let install = w.mur_in(&work).arg("install").arg(&src).output().unwrap();
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    // Into the folder's own project store, not home's (which would be the global one).
    assert!(
        work.join(".murmur/artifacts/local/c/1.0.0.mur.zip")
            .is_file()
    );
    let ls = w.mur_in(&work).args(["ls", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&ls.stdout).unwrap();
    let stores: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["store"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(stores, ["project", "global"], "{listed}");
}
