//! docs/errors.md is the catalogue in src/catalogue.rs, printed by `mur explain --markdown`.
//! Set MUR_UPDATE_DOCS=1 to rewrite the file from the catalogue.

use crate::support;

#[test]
fn docs_errors_md_matches_the_catalogue() {
    let out = support::mur()
        .args(["explain", "--markdown"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/errors.md");
    if std::env::var_os(mur::env::MUR_UPDATE_DOCS).is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/errors.md is stale: run `MUR_UPDATE_DOCS=1 cargo test --test it catalogue_docs`"
    );
}

#[test]
fn explain_prints_one_entry_and_refuses_unknown_codes() {
    let out = support::mur()
        .args(["explain", "e-ros-008"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("E-ROS-008 — "), "{text}");
    assert!(text.contains("Hint: "), "{text}");

    let out = support::mur()
        .args(["explain", "E-NOPE-1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("error[E-CLI-001]"), "{err}");
    assert!(err.contains("hint: Run `mur explain --list`"), "{err}");
}
