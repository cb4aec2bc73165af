//! What `mur pack`, `mur install` and `mur run` refuse of the files murmur.yaml names.

use super::*;

fn source(w: &World, name: &str, files: &[(&str, &[u8])], extra: &str) -> PathBuf {
    let src = w.dir.path().join("src").join(name);
    std::fs::create_dir_all(&src).unwrap();
    for (rel, bytes) in files {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    std::fs::write(
        src.join("murmur.yaml"),
        format!(
            "name: {name}\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n{extra}"
        ),
    )
    .unwrap();
    src
}

fn refused(w: &World, args: &[&str], dir: &Path) -> String {
    let out = w.mur_in(dir).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    stderr
}

#[test]
fn a_missing_file_is_e_man_007_at_its_line_for_pack_and_install() {
    let w = World::new();
    let src = source(
        &w,
        "gone",
        &[],
        "tools:\n  - name: lost\n    path: tools/lost.wasm\n    description: Not there.\n",
    );
    for args in [vec!["pack"], vec!["install", "."]] {
        let e = refused(&w, &args, &src);
        assert!(
            e.contains("E-MAN-007") && e.contains("tools/lost.wasm"),
            "{e}"
        );
        assert!(e.contains("murmur.yaml:8:11"), "{args:?}: {e}");
    }
    let hook = source(
        &w,
        "nohook",
        &[],
        "hooks:\n  - event: task_end\n    path: hooks/h.wasm\n",
    );
    let e = refused(&w, &["pack"], &hook);
    assert!(
        e.contains("E-MAN-007") && e.contains("murmur.yaml:8:11"),
        "{e}"
    );
}

#[test]
fn a_core_module_and_a_component_of_another_world_are_refused_naming_the_file() {
    let w = World::new();
    let hook = std::fs::read(guest("test-hook")).unwrap();
    let core: &[u8] = b"\0asm\x01\0\0\0";
    let tool = "tools:\n  - name: t\n    path: tools/t.wasm\n    description: A tool.\n";
    let src = source(&w, "core", &[("tools/t.wasm", core)], tool);
    let e = refused(&w, &["pack"], &src);
    assert!(
        e.contains("E-CMP-001") && e.contains("tools/t.wasm") && e.contains("core"),
        "{e}"
    );
    // mur run from the folder: refused at start.
    let e = refused(&w, &["run", "--task", "x"], &src);
    assert!(e.contains("E-CMP-001") && e.contains("tools/t.wasm"), "{e}");
    let src = source(&w, "world", &[("tools/t.wasm", &hook)], tool);
    let e = refused(&w, &["install", "."], &src);
    assert!(
        e.contains("E-CMP-002") && e.contains("murmur:capsule/tool@0.1.0"),
        "{e}"
    );
}
