//! How a capsule named on the command line is found: a guess for a bare or
//! misversioned name, and the version left out where the lock or the one install decides.

use crate::first_hour::team;
use crate::support::World;

#[test]
fn a_bare_or_misversioned_capsule_name_gets_a_guess() {
    let (w, project) = team();
    let run = |name: &str, version: &str| {
        let out = w
            .mur_in(&project)
            .args(["run", "--capsule", name, "--capsule-version", version])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let bare = run("team-lead", "0.1.0");
    assert!(bare.contains("error[E-RUN-001]"), "{bare}");
    assert!(bare.contains("did you mean `local/team-lead`?"), "{bare}");
    let other = run("local/team-lead", "9.9.9");
    assert!(
        other.contains("local/team-lead is installed at 0.1.0"),
        "{other}"
    );
    let unknown = run("local/nothing", "1.0.0");
    assert!(!unknown.contains("did you mean"), "{unknown}");
}

#[test]
fn the_capsule_version_may_be_left_out_when_the_lock_or_one_install_decides() {
    let (w, project) = team();
    let run = |w: &World| {
        w.mur_in(&project)
            .args(["run", "--capsule", "local/team-helper", "--task", "Say hi."])
            .output()
            .unwrap()
    };
    let out = run(&w);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("local/team-helper 0.1.0: the only version installed"),
        "{stderr}"
    );
    // A second version: now the lock must decide.
    let helper = project.join("helper/murmur.yaml");
    let text = std::fs::read_to_string(&helper).unwrap();
    std::fs::write(&helper, text.replace("version: 0.1.0", "version: 0.2.0")).unwrap();
    let install = w
        .mur_in(&project)
        .args(["install", "helper"])
        .output()
        .unwrap();
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let out = run(&w);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[E-RUN-001]"), "{stderr}");
    assert!(stderr.contains("installed at 0.1.0, 0.2.0"), "{stderr}");
    // roster.yaml names 0.1.0, so the lock pins it.
    let lock = w.mur_in(&project).arg("lock").output().unwrap();
    assert!(
        lock.status.success(),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );
    let out = run(&w);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("local/team-helper 0.1.0: the version murmur.lock pins"),
        "{stderr}"
    );
}
