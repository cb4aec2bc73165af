//! The toolbox's tools offered and called; traps, timeouts and the memory bound as
//! tool errors; the trace; the on-disk cache.

use super::*;

#[test]
fn each_tool_is_offered_with_its_description_and_schema_and_its_calls_come_back() {
    let w = World::new();
    let tools = [
        ("echo", "tools/echo.wasm"),
        ("write-file", "tools/write.wasm"),
        ("read-file", "tools/read.wasm"),
    ];
    install(
        &w,
        "box",
        &tools_yaml(&tools),
        &[
            ("tools/echo.wasm", "tool-echo"),
            ("tools/write.wasm", "tool-write-file"),
            ("tools/read.wasm", "tool-read-file"),
        ],
        &[
            call("c1", "echo", json!({"text": "hello there"})),
            call(
                "c2",
                "write-file",
                json!({"path": "notes.txt", "text": "written by a tool"}),
            ),
            call("c3", "read-file", json!({"path": "notes.txt"})),
        ],
    );
    let out = w.run_task("box", "Use the tools.");
    let trace = ran(&w, &out);
    assert_eq!(final_state(&trace), "completed");
    let r = results(&trace);
    assert_eq!(r["c1"], (false, "hello there".to_string()));
    assert!(!r["c2"].0, "{:?}", r["c2"]);
    assert_eq!(r["c3"], (false, "written by a tool".to_string()));
    assert_eq!(
        std::fs::read_to_string(w.proj.join("notes.txt")).unwrap(),
        "written by a tool"
    );
    // tool_call before tool_result, each result with its duration.
    let kinds: Vec<&str> = trace
        .iter()
        .filter_map(|r| r["type"].as_str())
        .filter(|t| t.starts_with("tool_"))
        .collect();
    assert_eq!(kinds, ["tool_call", "tool_result"].repeat(3));
    assert!(
        trace
            .iter()
            .filter(|r| r["type"] == "tool_result")
            .all(|r| r["duration_ms"].is_u64())
    );
    // The harness was offered every tool: the manifest's description, the
    // component's schema.
    let task: Value =
        serde_json::from_str(&std::fs::read_to_string(records(&w).join("home/task.json")).unwrap())
            .unwrap();
    let offered = task["tools"].as_array().unwrap();
    let echo = offered.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["description"], "The echo tool.");
    assert_eq!(echo["input_schema"]["required"], json!(["text"]));
    let write = offered.iter().find(|t| t["name"] == "write-file").unwrap();
    assert_eq!(write["input_schema"]["required"], json!(["path", "text"]));
}

#[test]
fn a_trap_a_spin_and_a_memory_hog_are_tool_errors_and_the_task_goes_on() {
    let w = World::new();
    install(
        &w,
        "bad",
        &tools_yaml(&[("misbehave", "tools/misbehave.wasm")]),
        &[("tools/misbehave.wasm", "test-misbehave")],
        &[
            call("trap", "misbehave", json!({"do": "trap"})),
            call("spin", "misbehave", json!({"do": "loop"})),
            call("grow", "misbehave", json!({"do": "grow"})),
            call("bad-args", "misbehave", json!("not an object")),
            call("calm", "misbehave", json!({"do": "nothing"})),
        ],
    );
    let out = w.run_task("bad", "Misbehave.");
    let trace = ran(&w, &out);
    assert_eq!(final_state(&trace), "completed");
    let r = results(&trace);
    let (err, text) = &r["trap"];
    assert!(*err && text.contains("tool `misbehave` trapped"), "{text}");
    let (err, text) = &r["spin"];
    assert!(
        *err && text.contains("tool `misbehave` ran past its time limit"),
        "{text}"
    );
    let (err, text) = &r["grow"];
    assert!(
        *err && text.contains("tool `misbehave` exceeded its memory limit of 64 MiB"),
        "{text}"
    );
    assert!(r["bad-args"].0, "{:?}", r["bad-args"]);
    assert_eq!(r["calm"], (false, "nothing to do for nothing".to_string()));
}

#[test]
fn a_second_session_loads_the_compiled_component_and_a_damaged_entry_is_rebuilt() {
    let w = World::new();
    // This test's own cache (no share_cache): it must start empty.
    let src = w.dir.path().join("src/cached");
    std::fs::create_dir_all(src.join("tools")).unwrap();
    std::fs::copy(guest("tool-echo"), src.join("tools/echo.wasm")).unwrap();
    std::fs::write(
        src.join("calls.jsonl"),
        format!("{}\n", call("c1", "echo", json!({"text": "cached"}))),
    )
    .unwrap();
    w.install(
        "cached",
        &tools_yaml(&[("echo", "tools/echo.wasm")]),
        Some(HARNESS),
    );
    let cache = w.home.join(".murmur/cache/components");
    let entry = |ext: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&cache)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.retain(|p| p.to_string_lossy().ends_with(ext));
        v
    };
    assert!(entry(".cwasm").is_empty());
    let first = ran(&w, &w.run_task("cached", "x"));
    assert_eq!(results(&first)["c1"], (false, "cached".to_string()));
    let cwasm = entry(".cwasm");
    assert_eq!(
        cwasm.len(),
        1,
        "one compiled component in {}",
        cache.display()
    );
    let name = cwasm[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.contains(&format!("-wasmtime-{}-", mur::component::WASMTIME_VERSION)),
        "{name}"
    );
    let size = std::fs::metadata(&cwasm[0]).unwrap().len();
    // Truncated, and the schema gone: the next session compiles again, never trusting it.
    std::fs::write(&cwasm[0], &std::fs::read(&cwasm[0]).unwrap()[..100]).unwrap();
    for s in entry(".schema.json") {
        std::fs::remove_file(s).unwrap();
    }
    let second = ran(&w, &w.run_task("cached", "x"));
    assert_eq!(results(&second)["c1"], (false, "cached".to_string()));
    assert_eq!(
        std::fs::metadata(&cwasm[0]).unwrap().len(),
        size,
        "the entry was rebuilt"
    );
}

#[test]
fn the_builtin_model_calls_the_tool_a_task_names() {
    let w = World::new();
    share_cache(&w);
    let src = w.dir.path().join("src/offline");
    std::fs::create_dir_all(src.join("tools")).unwrap();
    std::fs::copy(guest("tool-echo"), src.join("tools/echo.wasm")).unwrap();
    w.install("offline", &tools_yaml(&[("echo", "tools/echo.wasm")]), None);
    let out = w.run_task("offline", r#"tool: echo {"text": "said offline"}"#);
    let trace = ran(&w, &out);
    assert_eq!(
        results(&trace)["call_1"],
        (false, "said offline".to_string())
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("echo answered:\n> said offline"),
        "{stdout}"
    );
}

#[test]
fn a_component_importing_what_mur_does_not_provide_is_a_tool_error_naming_the_import() {
    let w = World::new();
    install(
        &w,
        "odd",
        &tools_yaml(&[("odd", "tools/odd.wasm")]),
        &[("tools/odd.wasm", "test-unlinked")],
        &[call("c1", "odd", json!({}))],
    );
    let out = w.run_task("odd", "Try it.");
    let trace = ran(&w, &out);
    assert_eq!(final_state(&trace), "completed");
    let (err, text) = &results(&trace)["c1"];
    assert!(*err && text.contains("E-CMP-003"), "{text}");
    assert!(
        text.contains("tools/odd.wasm") && text.contains("test:odd/missing"),
        "{text}"
    );
    // Its schema could not be had either: W-CMP-002, and the tool still offered.
    assert!(String::from_utf8_lossy(&out.stderr).contains("W-CMP-002"));
}
