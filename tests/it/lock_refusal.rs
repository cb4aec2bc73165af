//! `mur lock` outside a project: refused with E-REG-008, and no murmur.lock written.

use crate::support::*;

#[test]
fn lock_in_a_folder_that_is_no_project_is_refused_and_writes_nothing() {
    let w = World::new();
    let o = w.mur().arg("lock").output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("E-REG-008"), "{err}");
    assert!(err.contains(&w.proj.display().to_string()), "{err}");
    assert!(err.contains("hint:") || err.contains("Hint:"), "{err}");
    assert!(!w.proj.join("murmur.lock").exists());
}

#[test]
fn a_manifest_with_no_artifacts_still_gets_its_empty_lock() {
    let w = World::new();
    std::fs::write(w.proj.join("murmur.yaml"), manifest_text("app", "1.0.0")).unwrap();
    let o = w.mur().arg("lock").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(w.proj.join("murmur.lock")).unwrap();
    assert!(text.ends_with("artifacts: []\n"), "{text}");
}
