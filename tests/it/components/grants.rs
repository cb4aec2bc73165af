//! The environment and the files a component sees: exactly its grants, each denial
//! tried from inside a real component.

use super::*;

#[test]
fn only_allowed_variables_reach_a_component_never_murmur_ones_nor_a_credential() {
    let w = World::new();
    let extra = format!(
        "network:\n  authentication:\n    bearer_env: [DOOR_SECRET]\n\
         capabilities:\n  env:\n    allow: [GRANTED_VAR, MURMUR_SESSION_ID, DOOR_SECRET, UNSET_VAR]\n{}",
        tools_yaml(&[("probe", "tools/probe.wasm"), ("env", "tools/env.wasm")])
    );
    install(
        &w,
        "envs",
        &extra,
        &[
            ("tools/probe.wasm", "test-probe"),
            ("tools/env.wasm", "tool-env"),
        ],
        &[
            call("all", "probe", json!({"op": "env"})),
            call("granted", "env", json!({"name": "GRANTED_VAR"})),
            call("path", "env", json!({"name": "PATH"})),
            call("secret", "env", json!({"name": "DOOR_SECRET"})),
        ],
    );
    let out = w
        .run("envs")
        .args(["--task", "Look around."])
        .env("GRANTED_VAR", "granted-value")
        .env("DOOR_SECRET", "door-secret-value")
        .output()
        .unwrap();
    let r = results(&ran(&w, &out));
    assert_eq!(r["all"], (false, "GRANTED_VAR=granted-value\n".to_string()));
    assert_eq!(r["granted"], (false, "granted-value".to_string()));
    assert_eq!(r["path"], (true, "PATH is not set".to_string()));
    assert_eq!(r["secret"], (true, "DOOR_SECRET is not set".to_string()));
}

#[test]
fn files_are_the_work_folder_and_tmp_only() {
    let w = World::new();
    std::fs::write(w.root.join("outside.txt"), "outside").unwrap();
    std::fs::write(w.proj.join("inside.txt"), "inside").unwrap();
    install(
        &w,
        "files",
        &tools_yaml(&[
            ("read-file", "tools/read.wasm"),
            ("write-file", "tools/write.wasm"),
        ]),
        &[
            ("tools/read.wasm", "tool-read-file"),
            ("tools/write.wasm", "tool-write-file"),
        ],
        &[
            call("inside", "read-file", json!({"path": "inside.txt"})),
            call("passwd", "read-file", json!({"path": "/etc/passwd"})),
            call("up", "read-file", json!({"path": "../outside.txt"})),
            call(
                "abs",
                "read-file",
                json!({"path": w.proj.join("inside.txt")}),
            ),
            call(
                "records",
                "read-file",
                json!({"path": w.home.join(".murmur/records")}),
            ),
            call(
                "tmp",
                "write-file",
                json!({"path": "/tmp/scratch.txt", "text": "in tmp"}),
            ),
            call(
                "escape",
                "write-file",
                json!({"path": "../escaped.txt", "text": "no"}),
            ),
        ],
    );
    let r = results(&ran(&w, &w.run_task("files", "Read.")));
    assert_eq!(r["inside"], (false, "inside".to_string()));
    for denied in ["passwd", "up", "abs", "records", "escape"] {
        assert!(r[denied].0, "{denied}: {:?}", r[denied]);
        assert!(
            !r[denied].1.contains("outside") || r[denied].1.starts_with("cannot"),
            "{denied}: {:?}",
            r[denied]
        );
    }
    assert!(!r["tmp"].0, "{:?}", r["tmp"]);
    assert_eq!(
        std::fs::read_to_string(records(&w).join("tmp/scratch.txt")).unwrap(),
        "in tmp"
    );
    assert!(!w.root.join("escaped.txt").exists());
}
