use std::path::PathBuf;

use rstest::rstest;

use super::write::resolve_in;
use super::*;
use crate::catalogue::{self, Code};
use crate::pack::tests::packed;
use crate::store::{Outcome, StoreKind, Stores, put};

const SHA_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn good() -> String {
    format!(
        "lock_version: 1\nartifacts:\n  - name: local/coder\n    version: 1.10\n    sha256: {SHA_A}\n"
    )
}

#[test]
fn reads_what_it_renders() {
    let (lock, places) = parse(&good(), Path::new("murmur.lock")).unwrap();
    assert_eq!(
        lock.pin("local/coder"),
        Some(&Pin {
            name: "local/coder".into(),
            version: "1.10".into(),
            sha256: SHA_A.parse().unwrap()
        })
    );
    assert_eq!((places[0].line, places[0].column), (3, 5));
    assert_eq!(lock.pin("local/other"), None);
    let again = parse(&lock.render(), Path::new("murmur.lock")).unwrap().0;
    assert_eq!(again, lock);
    assert!(lock.render().contains("version: \"1.10\""));
    let empty = Lock::default();
    assert_eq!(parse(&empty.render(), Path::new("x")).unwrap().0, empty);
}

#[test]
fn load_is_none_without_a_lock() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(load(dir.path()).unwrap(), None);
    std::fs::write(dir.path().join(FILE_NAME), good()).unwrap();
    assert_eq!(load(dir.path()).unwrap().unwrap().pins.len(), 1);
}

/// One case per way a lock file can be wrong: the code, and the line and column.
#[rstest]
#[case::not_yaml("lock_version: [1\n", catalogue::E_REG_001, (2, 1))]
#[case::empty("", catalogue::E_REG_001, (1, 1))]
#[case::not_a_mapping("- 1\n", catalogue::E_REG_001, (1, 1))]
#[case::unknown_key("lock_version: 1\nartifacts: []\nextra: 1\n", catalogue::E_REG_001, (3, 1))]
#[case::no_lock_version("artifacts: []\n", catalogue::E_REG_001, (1, 1))]
#[case::lock_version_2("lock_version: 2\nartifacts: []\n", catalogue::E_REG_001, (1, 15))]
#[case::lock_version_text("lock_version: one\nartifacts: []\n", catalogue::E_REG_001, (1, 15))]
#[case::no_artifacts("lock_version: 1\n", catalogue::E_REG_001, (1, 1))]
#[case::artifacts_not_a_list("lock_version: 1\nartifacts: x\n", catalogue::E_REG_001, (2, 12))]
#[case::pin_not_a_mapping("lock_version: 1\nartifacts:\n  - local/coder\n", catalogue::E_REG_001, (3, 5))]
#[case::pin_unknown_key(&good().replace("    sha256", "    url: x\n    sha256"), catalogue::E_REG_001, (5, 5))]
#[case::pin_without_sha256("lock_version: 1\nartifacts:\n  - name: local/coder\n    version: 1.0.0\n", catalogue::E_REG_001, (3, 5))]
#[case::pin_sha256_a_list(&good().replace(SHA_A, "[a]"), catalogue::E_REG_001, (5, 13))]
#[case::bare_name(&good().replace("local/coder", "coder"), catalogue::E_REG_004, (3, 11))]
#[case::bad_version(&good().replace("1.10", "'../1'"), catalogue::E_REG_004, (4, 14))]
#[case::short_sha256(&good().replace(SHA_A, "abc"), catalogue::E_REG_004, (5, 13))]
#[case::uppercase_sha256(&good().replace(SHA_A, &SHA_A.to_uppercase()), catalogue::E_REG_004, (5, 13))]
#[case::pinned_twice(&format!("{}  - name: local/coder\n    version: 2.0.0\n    sha256: {SHA_A}\n", good()), catalogue::E_REG_003, (6, 11))]
fn bad_lock_files(#[case] text: &str, #[case] code: Code, #[case] at: (usize, usize)) {
    let err = parse(text, Path::new("murmur.lock")).expect_err("expected a refusal");
    assert_eq!(err.code, code, "{err}");
    let loc = err.location.as_ref().expect("a line and column");
    assert_eq!((loc.line, loc.column), at, "{err}");
    assert_eq!(loc.file, PathBuf::from("murmur.lock"));
    assert!(!err.hint_text().is_empty());
}

fn installed(version: &str, sha256: &str) -> Installed {
    Installed {
        name: "local/coder".into(),
        version: version.into(),
        sha256: sha256.parse().unwrap(),
        store: StoreKind::Project,
        path: PathBuf::from("/p/.murmur/artifacts/local/coder/x.mur.zip"),
    }
}

#[rstest]
#[case::same("1.10", SHA_A, None)]
#[case::other_version("1.11", SHA_A, Some("another version"))]
#[case::other_bytes(
    "1.10",
    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
    Some("other bytes")
)]
fn check_holds_what_was_found_against_the_pin(
    #[case] version: &str,
    #[case] sha256: &str,
    #[case] refused: Option<&str>,
) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(FILE_NAME);
    std::fs::write(&file, good()).unwrap();
    let lock = load(dir.path()).unwrap().unwrap();
    let pin = lock.pin("local/coder").unwrap();
    let result = check(pin, &installed(version, sha256), &file);
    match refused {
        None => result.unwrap(),
        Some(what) => {
            let err = result.unwrap_err();
            assert_eq!(err.code, catalogue::E_REG_005);
            for needle in [what, "1.10", version, SHA_A, sha256] {
                assert!(err.message.contains(needle), "{needle}: {err}");
            }
            let loc = err.location.as_ref().unwrap();
            assert_eq!((loc.line, loc.column, &loc.file), (3, 5, &file));
        }
    }
}

/// A project folder with its two stores.
fn project() -> (tempfile::TempDir, PathBuf, Stores) {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let stores = Stores {
        project: proj.join(".murmur/artifacts"),
        global: dir.path().join("home/.murmur/artifacts"),
    };
    (dir, proj, stores)
}

fn add(stores: &Stores, kind: StoreKind, name: &str, version: &str) -> Installed {
    match put(
        stores,
        kind,
        &format!("local/{name}"),
        version,
        &packed(name, version),
        false,
    )
    .unwrap()
    {
        Outcome::Installed(i) | Outcome::Unchanged(i) => i,
        other => panic!("{other:?}"),
    }
}

const ROSTER: &str = "roster_version: 1\nmembers:\n  - name: planner\n    capsule: local/planner\n    version: 0.3.0\n    entry: true\n  - name: coder\n    capsule: local/coder\n    version: 1.2.0\n";

#[test]
fn resolve_pins_the_project_store_roster_members_and_manifest_artifacts() {
    let (_dir, proj, stores) = project();
    let planner = add(&stores, StoreKind::Global, "planner", "0.3.0");
    let coder = add(&stores, StoreKind::Project, "coder", "1.2.0");
    add(&stores, StoreKind::Global, "coder", "1.2.0"); // shadowed by the project's
    let helper = add(&stores, StoreKind::Global, "helper", "2.0.0");
    let extra = add(&stores, StoreKind::Project, "extra", "0.1.0");
    add(&stores, StoreKind::Global, "unused", "9.9.9");
    std::fs::write(proj.join("roster.yaml"), ROSTER).unwrap();
    std::fs::write(
        proj.join("murmur.yaml"),
        "name: app\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\nartifacts:\n  - name: local/helper\n    version: 2.0.0\n  - name: local/coder\n    version: 1.2.0\n",
    )
    .unwrap();
    let (lock, warnings) = resolve_in(&proj, &stores).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let got: Vec<_> = lock
        .pins
        .iter()
        .map(|p| (p.name.as_str(), p.version.as_str(), p.sha256.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("local/coder", "1.2.0", coder.sha256.as_str()),
            ("local/extra", "0.1.0", extra.sha256.as_str()),
            ("local/helper", "2.0.0", helper.sha256.as_str()),
            ("local/planner", "0.3.0", planner.sha256.as_str()),
        ]
    );
}

#[test]
fn several_installed_versions_pin_the_highest_with_a_warning() {
    let (_dir, proj, stores) = project();
    add(&stores, StoreKind::Project, "coder", "1.9.0");
    let top = add(&stores, StoreKind::Project, "coder", "1.10.0");
    let (lock, warnings) = resolve_in(&proj, &stores).unwrap();
    assert_eq!(lock.pins[0].sha256, top.sha256);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].code, catalogue::W_REG_001);
    // A version the roster names wins, without a warning.
    std::fs::write(
        proj.join("roster.yaml"),
        "members:\n  - capsule: local/coder\n    version: 1.9.0\n",
    )
    .unwrap();
    let (lock, warnings) = resolve_in(&proj, &stores).unwrap();
    assert_eq!(lock.pins[0].version, "1.9.0");
    assert!(warnings.is_empty());
}

/// One case per way `mur lock` can refuse to pin.
#[rstest]
#[case::roster_member_not_installed(ROSTER.replace("1.2.0", "1.3.0"), "", catalogue::E_REG_002, Some((7, 5)))]
#[case::manifest_artifact_not_installed(
    String::new(),
    "  - name: local/ghost\n    version: 1.0.0\n",
    catalogue::E_REG_002,
    Some((7, 5))
)]
#[case::two_versions_asked(ROSTER.to_string(), "  - name: local/coder\n    version: 1.3.0\n", catalogue::E_REG_006, Some((7, 5)))]
#[case::bare_capsule_name(ROSTER.replace("local/coder", "coder"), "", catalogue::E_ROS_001, Some((8, 14)))]
#[case::roster_not_yaml("members: [\n".to_string(), "", catalogue::E_ROS_001, Some((2, 1)))]
#[case::roster_member_without_version(ROSTER.replace("    version: 1.2.0\n", ""), "", catalogue::E_ROS_001, Some((7, 5)))]
#[case::manifest_does_not_parse(String::new(), "  - [\n", catalogue::E_MAN_001, None)]
fn lock_faults(
    #[case] roster: String,
    #[case] manifest_artifacts: &str,
    #[case] code: Code,
    #[case] at: Option<(usize, usize)>,
) {
    let (_dir, proj, stores) = project();
    add(&stores, StoreKind::Project, "coder", "1.2.0");
    add(&stores, StoreKind::Global, "planner", "0.3.0");
    if !roster.is_empty() {
        std::fs::write(proj.join("roster.yaml"), &roster).unwrap();
    }
    if !manifest_artifacts.is_empty() {
        std::fs::write(
            proj.join("murmur.yaml"),
            format!("name: app\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\nartifacts:\n{manifest_artifacts}"),
        )
        .unwrap();
    }
    let err = resolve_in(&proj, &stores).expect_err("expected a refusal");
    assert_eq!(err.code, code, "{err}");
    assert!(err.file.is_some(), "{err}");
    if let Some(at) = at {
        let loc = err.location.as_ref().expect("a line and column");
        assert_eq!((loc.line, loc.column), at, "{err}");
    }
}
