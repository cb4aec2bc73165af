use super::*;
use crate::catalogue;
use crate::pack::tests::packed;

/// Two empty stores in a temporary folder.
fn stores() -> (tempfile::TempDir, Stores) {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores {
        project: dir.path().join("proj/.murmur/artifacts"),
        global: dir.path().join("home/.murmur/artifacts"),
    };
    std::fs::create_dir_all(dir.path().join("proj")).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    (dir, stores)
}

fn install(stores: &Stores, kind: StoreKind, name: &str, bytes: &[u8]) -> Outcome {
    put(
        stores,
        kind,
        &format!("local/{name}"),
        "1.2.0",
        bytes,
        false,
    )
    .unwrap()
}

#[test]
fn find_looks_in_the_project_store_first() {
    let (_dir, stores) = stores();
    let global = packed("coder", "1.2.0");
    let mut project = packed("coder", "1.2.0");
    project.extend_from_slice(b"\n"); // other bytes, same name and version
    assert_eq!(stores.find("local/coder", "1.2.0").unwrap(), None);
    install(&stores, StoreKind::Global, "coder", &global);
    let found = stores.find("local/coder", "1.2.0").unwrap().unwrap();
    assert_eq!(found.store, StoreKind::Global);
    assert_eq!(found.sha256, crate::ids::Sha256::of(&global));
    install(&stores, StoreKind::Project, "coder", &project);
    let found = stores.find("local/coder", "1.2.0").unwrap().unwrap();
    assert_eq!(found.store, StoreKind::Project);
    assert_eq!(found.sha256, crate::ids::Sha256::of(&project));
    assert_eq!(found.path, stores.project.join("local/coder/1.2.0.mur.zip"));
    assert_eq!(stores.find("local/coder", "1.3.0").unwrap(), None);
    // Names no store can hold are simply not there.
    assert_eq!(stores.find("coder", "1.2.0").unwrap(), None);
    assert_eq!(stores.find("local/../x", "1.2.0").unwrap(), None);
    assert_eq!(stores.find("local/coder", "../1").unwrap(), None);
}

#[test]
fn list_orders_project_first_then_name_then_version() {
    let (_dir, stores) = stores();
    for (kind, name, version) in [
        (StoreKind::Global, "zed", "1.0.0"),
        (StoreKind::Project, "coder", "1.10.0"),
        (StoreKind::Project, "coder", "1.9.0"),
        (StoreKind::Project, "alpha", "0.1.0"),
    ] {
        let bytes = packed(name, version);
        put(
            &stores,
            kind,
            &format!("local/{name}"),
            version,
            &bytes,
            false,
        )
        .unwrap();
    }
    let got: Vec<_> = stores
        .list()
        .unwrap()
        .into_iter()
        .map(|i| format!("{} {} {}", i.store, i.name, i.version))
        .collect();
    assert_eq!(
        got,
        [
            "project local/alpha 0.1.0",
            "project local/coder 1.9.0",
            "project local/coder 1.10.0",
            "global local/zed 1.0.0"
        ]
    );
}

#[test]
fn leftover_temporary_files_are_ignored() {
    let (_dir, stores) = stores();
    install(
        &stores,
        StoreKind::Project,
        "coder",
        &packed("coder", "1.2.0"),
    );
    let dir = stores.project.join("local/coder");
    // What a killed install leaves: a dot file beside the artifacts.
    std::fs::write(dir.join(".tmpA1b2C3.partial"), b"half an archi").unwrap();
    std::fs::write(dir.join(".1.3.0.mur.zip"), b"half").unwrap();
    std::fs::create_dir_all(stores.project.join(".tmp")).unwrap();
    std::fs::write(stores.project.join("README"), b"not an artifact").unwrap();
    let listed = stores.list().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].version, "1.2.0");
    assert_eq!(stores.find("local/coder", "1.3.0").unwrap(), None);
}

#[test]
fn same_bytes_again_change_nothing_other_bytes_are_refused_unless_forced() {
    let (_dir, stores) = stores();
    let first = packed("coder", "1.2.0");
    let mut other = first.clone();
    other.push(b'\n');
    let Outcome::Installed(one) = install(&stores, StoreKind::Project, "coder", &first) else {
        panic!("not installed")
    };
    assert!(matches!(
        install(&stores, StoreKind::Project, "coder", &first),
        Outcome::Unchanged(_)
    ));
    let err = put(
        &stores,
        StoreKind::Project,
        "local/coder",
        "1.2.0",
        &other,
        false,
    )
    .unwrap_err();
    assert_eq!(err.code, catalogue::E_STO_003);
    assert!(err.message.contains(one.sha256.as_str()), "{err}");
    assert!(
        err.message
            .contains(crate::ids::Sha256::of(&other).as_str()),
        "{err}"
    );
    assert_eq!(std::fs::read(&one.path).unwrap(), first);
    let forced = put(
        &stores,
        StoreKind::Project,
        "local/coder",
        "1.2.0",
        &other,
        true,
    )
    .unwrap();
    assert!(
        matches!(&forced, Outcome::Replaced { old_sha256, .. } if *old_sha256 == one.sha256),
        "{forced:?}"
    );
    assert_eq!(std::fs::read(&one.path).unwrap(), other);
    // Nothing but the artifact is left in its folder.
    let files: Vec<_> = std::fs::read_dir(stores.project.join("local/coder"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, ["1.2.0.mur.zip"]);
}

#[test]
fn verify_refuses_changed_bytes() {
    let (_dir, stores) = stores();
    let Outcome::Installed(one) = install(
        &stores,
        StoreKind::Project,
        "coder",
        &packed("coder", "1.2.0"),
    ) else {
        panic!("not installed")
    };
    verify(&one).unwrap();
    let mut bytes = std::fs::read(&one.path).unwrap();
    bytes.push(0);
    std::fs::write(&one.path, bytes).unwrap();
    let err = verify(&one).unwrap_err();
    assert_eq!(err.code, catalogue::E_RUN_047);
    assert!(err.message.contains(one.sha256.as_str()), "{err}");
    std::fs::remove_file(&one.path).unwrap();
    assert_eq!(verify(&one).unwrap_err().code, catalogue::E_RUN_047);
}

#[test]
fn a_store_path_that_is_a_file_is_refused() {
    let (dir, stores) = stores();
    std::fs::write(dir.path().join("proj/.murmur"), b"a file").unwrap();
    let err = put(
        &stores,
        StoreKind::Project,
        "local/coder",
        "1.2.0",
        &packed("coder", "1.2.0"),
        false,
    )
    .unwrap_err();
    assert_eq!(err.code, catalogue::E_STO_001, "{err}");
    // A store whose home folder is missing is not made.
    let gone = Stores {
        project: stores.project.clone(),
        global: dir.path().join("no-such-home/.murmur/artifacts"),
    };
    let err = put(
        &gone,
        StoreKind::Global,
        "local/coder",
        "1.2.0",
        b"x",
        false,
    )
    .unwrap_err();
    assert_eq!(err.code, catalogue::E_STO_001, "{err}");
    assert!(!dir.path().join("no-such-home").exists());
}

#[test]
fn versions_order_as_semver_does() {
    assert_eq!(compare_versions("1.9.0", "1.10.0"), Ordering::Less);
    assert_eq!(compare_versions("1.0.0-rc.1", "1.0.0"), Ordering::Less);
    assert_eq!(
        compare_versions("1.0.0-rc.2", "1.0.0-rc.10"),
        Ordering::Less
    );
    assert_eq!(
        compare_versions("1.0.0-alpha", "1.0.0-1"),
        Ordering::Greater
    );
    assert_eq!(compare_versions("2", "10"), Ordering::Less);
}

/// Two installs racing on one name and version with other bytes: exactly one wins,
/// the other is refused, and the winner's bytes are what is stored.
#[test]
fn racing_installs_never_overwrite_each_other() {
    let (_dir, stores) = stores();
    let a = packed("coder", "1.2.0");
    let mut b = a.clone();
    b.push(b'\n');
    let barrier = std::sync::Barrier::new(2);
    let run = |bytes: &[u8]| {
        barrier.wait();
        put(
            &stores,
            StoreKind::Project,
            "local/coder",
            "1.2.0",
            bytes,
            false,
        )
    };
    let (ra, rb) = std::thread::scope(|s| {
        let ta = s.spawn(|| run(&a));
        let tb = s.spawn(|| run(&b));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    let (winner, loser) = match (&ra, &rb) {
        (Ok(Outcome::Installed(_)), Err(e)) => (&a, e),
        (Err(e), Ok(Outcome::Installed(_))) => (&b, e),
        other => panic!("not one winner: {other:?}"),
    };
    assert_eq!(loser.code, catalogue::E_STO_003, "{loser}");
    let stored = stores.project.join("local/coder/1.2.0.mur.zip");
    assert_eq!(&std::fs::read(stored).unwrap(), winner);
}

#[test]
fn an_install_sweeps_day_old_leftovers_only() {
    let (_dir, stores) = stores();
    let dir = stores.project.join("local/coder");
    std::fs::create_dir_all(&dir).unwrap();
    let old = dir.join(".tmpOld.partial");
    let fresh = dir.join(".tmpNew.partial");
    std::fs::write(&old, b"x").unwrap();
    std::fs::write(&fresh, b"x").unwrap();
    let two_days = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(two_days)
        .unwrap();
    install(
        &stores,
        StoreKind::Project,
        "coder",
        &packed("coder", "1.2.0"),
    );
    assert!(!old.exists());
    assert!(fresh.exists(), "an install in progress may own it");
}
