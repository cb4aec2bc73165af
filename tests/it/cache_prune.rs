//! `mur cache prune`: removes from ~/.murmur/cache/ the unpacked copies no store and
//! no live session uses and the compiled components no kept copy holds (or of
//! another wasmtime); keeps the rest, and names mur never makes.

use std::time::Duration;

use nix::sys::signal::Signal;
use sha2::Digest;

use crate::support::session::{Session, installed_sha};
use crate::support::{World, stderr, stdout};

/// Bytes that end in `.wasm` in a capsule: their sha256 keys a compiled component.
const BLOB: &[u8] = b"\0asm not really a component";

fn install(w: &World, name: &str) {
    let src = w.root.join("src").join(name);
    crate::support::write_capsule(&src, name, "1.0.0");
    std::fs::write(src.join("blob.wasm"), BLOB).unwrap();
    std::fs::write(src.join("docs/which.md"), name).unwrap();
    let out = w.mur().arg("install").arg(&src).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn cache_prune_removes_what_nothing_uses_and_keeps_the_rest() {
    let w = World::new();
    for name in ["kept", "gone", "live"] {
        install(&w, name);
    }
    for name in ["kept", "gone"] {
        let run = w.run_task(name, "Say hello.");
        assert!(run.status.success(), "{}", stderr(&run));
    }
    let mut live = w.run("live");
    live.arg("--json");
    let live = Session::spawn(live);
    live.ready();
    let cache = w.home.join(".murmur/cache");
    let [kept, gone, running] = ["kept", "gone", "live"].map(|n| cache.join(installed_sha(&w, n)));
    for dir in [&kept, &gone, &running] {
        assert!(
            dir.join("murmur.yaml").is_file(),
            "{} unpacked",
            dir.display()
        );
    }
    // `gone` and `live` leave the store; `live` still runs from its copy.
    for name in ["gone", "live"] {
        std::fs::remove_file(
            w.proj
                .join(format!(".murmur/artifacts/local/{name}/1.0.0.mur.zip")),
        )
        .unwrap();
    }
    let approved = w.mur().arg("approve").output().unwrap();
    assert!(approved.status.success(), "{}", stderr(&approved));
    let blob = hex::encode(sha2::Sha256::digest(BLOB));
    let other = hex::encode(sha2::Sha256::digest(b"no capsule holds this"));
    let v = mur::component::WASMTIME_VERSION;
    let components = cache.join("components");
    std::fs::create_dir_all(&components).unwrap();
    let used = components.join(format!("{blob}-wasmtime-{v}-0123456789abcdef.cwasm"));
    let stale = components.join(format!("{blob}-wasmtime-1.0.0-0123456789abcdef.cwasm"));
    let unused = components.join(format!("{other}-wasmtime-{v}-0123456789abcdef.cwasm"));
    let foreign = cache.join("notes.txt");
    for file in [&used, &stale, &unused, &foreign] {
        std::fs::write(file, b"x").unwrap();
    }

    let dry = w
        .mur()
        .args(["cache", "prune", "--dry-run"])
        .output()
        .unwrap();
    assert!(dry.status.success(), "{}", stderr(&dry));
    let said = stdout(&dry);
    assert!(
        said.contains(&format!("would remove {}", gone.display())),
        "{said}"
    );
    assert!(said.contains("would remove 3 entries"), "{said}");
    assert!(
        gone.exists() && stale.exists() && unused.exists(),
        "a dry run removes nothing"
    );

    let pruned = w.mur().args(["cache", "prune"]).output().unwrap();
    assert!(pruned.status.success(), "{}", stderr(&pruned));
    let said = stdout(&pruned);
    for path in [&gone, &stale, &unused] {
        assert!(!path.exists(), "{} stays: {said}", path.display());
        assert!(
            said.contains(&format!("removed {}", path.display())),
            "{said}"
        );
    }
    for path in [&kept, &running, &used, &foreign] {
        assert!(path.exists(), "{} went: {said}", path.display());
    }
    assert!(
        said.lines()
            .last()
            .unwrap()
            .starts_with("removed 3 entries ("),
        "{said}"
    );
    assert!(
        said.lines().last().unwrap().ends_with("kept 3 in use"),
        "{said}"
    );

    // What was kept still runs; pruning again finds nothing more.
    let run = w.run_task("kept", "Again.");
    assert!(run.status.success(), "{}", stderr(&run));
    live.signal(Signal::SIGTERM);
    let (code, err) = live.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    let again = w.mur().args(["cache", "prune"]).output().unwrap();
    let said = stdout(&again);
    // `live` ended and its artifact is gone: now its copy goes too.
    assert!(
        said.contains(&format!("removed {}", running.display())),
        "{said}"
    );
    assert!(kept.exists() && used.exists());
}
