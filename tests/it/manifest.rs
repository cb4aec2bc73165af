//! One case per murmur.yaml rule (docs/manifest.md): each refusal's code, line and
//! column, and the readings that must be accepted.

use std::path::Path;

use mur::manifest::{self, Manifest};
use mur::{Diagnostic, Result};
use proptest::prelude::*;
use rstest::rstest;

use crate::support::World;

/// Five lines: every case below it starts at line 6.
const BASE: &str = "\
name: coder
version: 0.1.0
description: Writes code.
agent:
  transport: builtin
";

fn parse(text: &str) -> Result<Manifest> {
    manifest::parse(text, Path::new("caps/murmur.yaml"))
}

fn assert_refused(text: &str, code: &str, line: usize, column: usize) -> Diagnostic {
    let err = match parse(text) {
        Ok(m) => panic!("accepted:\n{text}\nas {m:?}"),
        Err(e) => e,
    };
    let loc = err.location.clone().expect("a location");
    assert_eq!(
        (err.code.as_str(), loc.line, loc.column),
        (code, line, column),
        "{err}\n--- for:\n{text}"
    );
    assert_eq!(loc.file, Path::new("caps/murmur.yaml"));
    assert!(!err.hint_text().is_empty(), "no hint: {err}");
    err
}

/// Cases written after BASE.
#[rstest]
// ---- an unknown key, at every level
#[case::unknown_top("colour: blue\n", "E-MAN-001", 6, 1)]
#[case::unknown_inference("inference:\n  max_tokens: 5\n", "E-MAN-001", 7, 3)]
#[case::unknown_lifecycle("lifecycle:\n  retries: 1\n", "E-MAN-001", 7, 3)]
#[case::unknown_exports("exports:\n  tools: true\n", "E-MAN-001", 7, 3)]
#[case::unknown_peer_tasks("exports:\n  peer_tasks:\n    allow: true\n", "E-MAN-001", 8, 5)]
#[case::unknown_network("network:\n  tls: true\n", "E-MAN-001", 7, 3)]
#[case::unknown_authentication("network:\n  authentication:\n    tokens: [A]\n", "E-MAN-001", 8, 5)]
#[case::unknown_capabilities("capabilities:\n  mounts: {}\n", "E-MAN-001", 7, 3)]
#[case::bad_files_grant("capabilities:\n  files:\n    read: [../up]\n", "E-MAN-011", 8, 12)]
#[case::unknown_cap_files("capabilities:\n  files:\n    exec: [x]\n", "E-MAN-001", 8, 5)]
#[case::unknown_cap_network("capabilities:\n  network:\n    deny: [x]\n", "E-MAN-001", 8, 5)]
#[case::unknown_cap_env("capabilities:\n  env:\n    set: [X]\n", "E-MAN-001", 8, 5)]
#[case::unknown_cap_shell("capabilities:\n  shell:\n    path: /bin/sh\n", "E-MAN-001", 8, 5)]
#[case::unknown_cap_spawn("capabilities:\n  spawn:\n    deny: [local/x]\n", "E-MAN-001", 8, 5)]
#[case::unknown_tool_key(
    "tools:\n  - name: t\n    path: t.wasm\n    description: d\n    timeout: 5\n",
    "E-MAN-001",
    10,
    5
)]
#[case::unknown_hook_key(
    "hooks:\n  - event: task_end\n    path: h.wasm\n    when: always\n",
    "E-MAN-001",
    9,
    5
)]
#[case::unknown_trace("trace:\n  level: debug\n", "E-MAN-001", 7, 3)]
#[case::unknown_retain("trace:\n  retain:\n    max_bytes: 5\n", "E-MAN-001", 8, 5)]
#[case::unknown_artifact_key(
    "artifacts:\n  - name: local/a\n    version: 1.0\n    sha256: ab\n",
    "E-MAN-001",
    9,
    5
)]
// ---- a wrong type
#[case::max_turns_word("inference:\n  max_turns: eight\n", "E-MAN-001", 7, 14)]
#[case::max_turns_quoted("inference:\n  max_turns: \"8\"\n", "E-MAN-001", 7, 14)]
#[case::inference_scalar("inference: 8\n", "E-MAN-001", 6, 12)]
#[case::accept_yes("exports:\n  peer_tasks:\n    accept: yes\n", "E-MAN-001", 8, 13)]
#[case::accept_quoted("exports:\n  peer_tasks:\n    accept: \"true\"\n", "E-MAN-001", 8, 13)]
#[case::authentication_list("network:\n  authentication: [A]\n", "E-MAN-001", 7, 19)]
#[case::bearer_env_scalar("network:\n  authentication:\n    bearer_env: A\n", "E-MAN-001", 8, 17)]
#[case::allow_scalar(
    "capabilities:\n  network:\n    allow: localhost\n",
    "E-MAN-001",
    8,
    12
)]
#[case::allow_item_map(
    "capabilities:\n  env:\n    allow:\n      - {a: b}\n",
    "E-MAN-001",
    9,
    9
)]
#[case::shell_list("capabilities:\n  shell: [PATH]\n", "E-MAN-001", 7, 10)]
#[case::tools_map("tools: {}\n", "E-MAN-001", 6, 8)]
#[case::tool_scalar("tools:\n  - search\n", "E-MAN-001", 7, 5)]
#[case::hook_async_word(
    "hooks:\n  - event: task_end\n    path: h.wasm\n    async: maybe\n",
    "E-MAN-001",
    9,
    12
)]
#[case::max_sessions_word("trace:\n  retain:\n    max_sessions: all\n", "E-MAN-001", 8, 19)]
#[case::artifact_version_list(
    "artifacts:\n  - name: local/a\n    version: [1]\n",
    "E-MAN-001",
    8,
    14
)]
#[case::idle_timeout_list("lifecycle:\n  idle_timeout: [1]\n", "E-MAN-001", 7, 17)]
#[case::lifecycle_list("lifecycle: [single]\n", "E-MAN-001", 6, 12)]
#[case::exports_scalar("exports: peers\n", "E-MAN-001", 6, 10)]
#[case::peer_tasks_scalar("exports:\n  peer_tasks: true\n", "E-MAN-001", 7, 15)]
#[case::network_list("network: []\n", "E-MAN-001", 6, 10)]
#[case::capabilities_scalar("capabilities: all\n", "E-MAN-001", 6, 15)]
#[case::spawn_allow_scalar("capabilities:\n  spawn:\n    allow: local/x\n", "E-MAN-001", 8, 12)]
#[case::hooks_scalar("hooks: notify.wasm\n", "E-MAN-001", 6, 8)]
#[case::hook_item_list("hooks:\n  - [task_end]\n", "E-MAN-001", 7, 5)]
#[case::trace_list("trace: []\n", "E-MAN-001", 6, 8)]
#[case::retain_scalar("trace:\n  retain: 5\n", "E-MAN-001", 7, 11)]
#[case::artifacts_map("artifacts: {name: local/a}\n", "E-MAN-001", 6, 12)]
#[case::instructions_list("instructions: [a.md]\n", "E-MAN-001", 6, 15)]
#[case::tool_path_map(
    "tools:\n  - name: t\n    path: {a: b}\n    description: d\n",
    "E-MAN-001",
    8,
    11
)]
// ---- a missing required field
#[case::tool_no_name("tools:\n  - path: t.wasm\n    description: d\n", "E-MAN-001", 7, 5)]
#[case::tool_no_path("tools:\n  - name: t\n    description: d\n", "E-MAN-001", 7, 5)]
#[case::tool_no_description("tools:\n  - name: t\n    path: t.wasm\n", "E-MAN-001", 7, 5)]
#[case::tool_empty_description(
    "tools:\n  - name: t\n    path: t.wasm\n    description:\n",
    "E-MAN-001",
    9,
    5
)]
#[case::hook_no_event("hooks:\n  - path: h.wasm\n", "E-MAN-001", 7, 5)]
#[case::hook_no_path("hooks:\n  - event: task_end\n", "E-MAN-001", 7, 5)]
#[case::artifact_no_name("artifacts:\n  - version: 1.0\n", "E-MAN-001", 7, 5)]
#[case::artifact_no_version("artifacts:\n  - name: local/a\n    version:\n", "E-MAN-001", 8, 5)]
// ---- a value its rule refuses
#[case::max_turns_zero("inference:\n  max_turns: 0\n", "E-MAN-001", 7, 14)]
#[case::max_turns_huge("inference:\n  max_turns: 99999999999\n", "E-MAN-001", 7, 14)]
#[case::task_acceptance_other("lifecycle:\n  task_acceptance: parallel\n", "E-MAN-001", 7, 20)]
#[case::after_task_other("lifecycle:\n  after_task: stop\n", "E-MAN-001", 7, 15)]
#[case::queue_depth_negative(
    "lifecycle:\n  task_acceptance: queue\n  queue_depth: -1\n",
    "E-MAN-001",
    8,
    16
)]
#[case::queue_depth_with_single("lifecycle:\n  queue_depth: 2\n", "E-MAN-001", 7, 16)]
#[case::idle_timeout_no_unit("lifecycle:\n  idle_timeout: 600\n", "E-MAN-006", 7, 17)]
#[case::idle_timeout_zero("lifecycle:\n  idle_timeout: 0s\n", "E-MAN-006", 7, 17)]
#[case::idle_timeout_bad_unit("lifecycle:\n  idle_timeout: 2w\n", "E-MAN-006", 7, 17)]
#[case::max_age_bad("trace:\n  retain:\n    max_age: 1 month\n", "E-MAN-006", 8, 14)]
#[case::max_sessions_zero("trace:\n  retain:\n    max_sessions: 0\n", "E-MAN-001", 8, 19)]
#[case::instructions_absolute("instructions: /etc/passwd\n", "E-MAN-007", 6, 15)]
#[case::instructions_dotdot("instructions: ../notes.md\n", "E-MAN-007", 6, 15)]
#[case::tool_not_wasm(
    "tools:\n  - name: t\n    path: t.so\n    description: d\n",
    "E-MAN-007",
    8,
    11
)]
#[case::tool_bad_name(
    "tools:\n  - name: Search\n    path: t.wasm\n    description: d\n",
    "E-MAN-004",
    7,
    11
)]
#[case::tool_twice(
    "tools:\n  - {name: t, path: a.wasm, description: d}\n  - {name: t, path: b.wasm, description: d}\n",
    "E-MAN-010",
    8,
    12
)]
#[case::hook_event_other("hooks:\n  - event: on_boot\n    path: h.wasm\n", "E-MAN-001", 7, 12)]
#[case::hook_outside(
    "hooks:\n  - event: task_end\n    path: ../h.wasm\n",
    "E-MAN-007",
    8,
    11
)]
#[case::allow_url(
    "capabilities:\n  network:\n    allow: [\"https://api.example.com\"]\n",
    "E-MAN-008",
    8,
    13
)]
#[case::env_allow_bad("capabilities:\n  env:\n    allow: [MY-VAR]\n", "E-MAN-009", 8, 13)]
#[case::baseline_env_bad(
    "capabilities:\n  shell:\n    baseline_env: [\"1PATH\"]\n",
    "E-MAN-009",
    8,
    20
)]
#[case::bearer_env_bad(
    "network:\n  authentication:\n    bearer_env: [\"A B\"]\n",
    "E-MAN-009",
    8,
    18
)]
#[case::spawn_bare("capabilities:\n  spawn:\n    allow: [coder]\n", "E-MAN-004", 8, 13)]
#[case::artifact_bare("artifacts:\n  - name: helper\n    version: 1.0\n", "E-MAN-004", 7, 11)]
#[case::artifact_latest(
    "artifacts:\n  - name: local/a\n    version: latest\n",
    "E-MAN-005",
    8,
    14
)]
#[case::artifact_twice(
    "artifacts:\n  - {name: local/a, version: 1}\n  - {name: local/a, version: 2}\n",
    "E-MAN-010",
    8,
    12
)]
#[case::auth_beside_spawn(
    "network:\n  authentication: {}\ncapabilities:\n  spawn:\n    allow: [local/child]\n",
    "E-MAN-003",
    7,
    3
)]
#[case::auth_with_env_beside_spawn(
    "capabilities:\n  spawn:\n    allow: [\"local/*\"]\nnetwork:\n  authentication:\n    bearer_env: [T]\n",
    "E-MAN-003",
    10,
    3
)]
fn refused_after_base(
    #[case] extra: &str,
    #[case] code: &str,
    #[case] line: usize,
    #[case] column: usize,
) {
    assert_refused(&format!("{BASE}{extra}"), code, line, column);
}

/// Cases that replace part of BASE, written whole.
#[rstest]
#[case::not_yaml("name: [coder\n", "E-MAN-001", 2, 1)]
#[case::empty("", "E-MAN-001", 1, 1)]
#[case::a_list("- name: coder\n", "E-MAN-001", 1, 1)]
#[case::no_name(
    "version: 0.1.0\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-001",
    1,
    1
)]
#[case::name_no_value(
    "name:\nversion: 0.1.0\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-001",
    1,
    1
)]
#[case::no_version(
    "name: coder\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-001",
    1,
    1
)]
#[case::no_description(
    "name: coder\nversion: 0.1.0\nagent: {transport: builtin}\n",
    "E-MAN-001",
    1,
    1
)]
#[case::no_agent("name: coder\nversion: 0.1.0\ndescription: d\n", "E-MAN-001", 1, 1)]
#[case::no_transport(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent: {}\n",
    "E-MAN-001",
    4,
    8
)]
#[case::name_list(
    "name: [coder]\nversion: 0.1.0\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-001",
    1,
    7
)]
#[case::description_map(
    "name: coder\nversion: 0.1.0\ndescription: {a: b}\nagent: {transport: builtin}\n",
    "E-MAN-001",
    3,
    14
)]
#[case::description_blank(
    "name: coder\nversion: 0.1.0\ndescription: \"  \"\nagent: {transport: builtin}\n",
    "E-MAN-001",
    3,
    14
)]
#[case::agent_scalar(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent: builtin\n",
    "E-MAN-001",
    4,
    8
)]
#[case::version_map(
    "name: coder\nversion: {major: 1}\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-001",
    2,
    10
)]
#[case::name_upper(
    "name: Coder\nversion: 0.1.0\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-004",
    1,
    7
)]
#[case::name_scoped(
    "name: local/coder\nversion: 0.1.0\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-004",
    1,
    7
)]
#[case::version_latest(
    "name: coder\nversion: latest\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-005",
    2,
    10
)]
#[case::version_stable(
    "name: coder\nversion: stable\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-005",
    2,
    10
)]
#[case::version_edge(
    "name: coder\nversion: edge\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-005",
    2,
    10
)]
#[case::version_blank(
    "name: coder\nversion: \"\"\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-005",
    2,
    10
)]
#[case::version_slash(
    "name: coder\nversion: 1/2\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-005",
    2,
    10
)]
#[case::transport_other(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: grpc\n",
    "E-MAN-001",
    5,
    14
)]
#[case::unknown_agent_key(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: builtin\n  temperature: 1\n",
    "E-MAN-001",
    6,
    3
)]
#[case::builtin_with_model(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: builtin\n  model: llama3\n",
    "E-MAN-001",
    6,
    3
)]
#[case::http_with_command(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: http\n  base_url: http://h/v1\n  model: m\n  command: [x]\n",
    "E-MAN-001",
    8,
    3
)]
#[case::http_no_base_url(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: http\n  model: m\n",
    "E-MAN-001",
    5,
    3
)]
#[case::http_no_model(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: http\n  base_url: http://h/v1\n",
    "E-MAN-001",
    5,
    3
)]
#[case::http_bad_url(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: http\n  base_url: ftp://h/v1\n  model: m\n",
    "E-MAN-008",
    6,
    13
)]
#[case::http_url_no_host(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: http\n  base_url: 127.0.0.1:11434\n  model: m\n",
    "E-MAN-008",
    6,
    13
)]
#[case::http_bad_key_env(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: http\n  base_url: http://h/v1\n  model: m\n  api_key_env: $KEY\n",
    "E-MAN-009",
    8,
    16
)]
#[case::http_driver_not_wasm(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: http\n  base_url: http://h/v1\n  model: m\n  driver: d.js\n",
    "E-MAN-007",
    8,
    11
)]
#[case::process_no_command(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: process\n",
    "E-MAN-001",
    5,
    3
)]
#[case::process_empty_command(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: process\n  command: []\n",
    "E-MAN-001",
    6,
    12
)]
#[case::process_command_scalar(
    "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: process\n  command: sh harness.sh\n",
    "E-MAN-001",
    6,
    12
)]
#[case::duplicate_key(
    "name: coder\nname: coder\nversion: 0.1.0\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-001",
    2,
    1
)]
#[case::alias(
    "name: &n coder\nversion: 0.1.0\ndescription: d\nagent: {transport: builtin}\n",
    "E-MAN-001",
    1,
    7
)]
fn refused_whole(
    #[case] text: &str,
    #[case] code: &str,
    #[case] line: usize,
    #[case] column: usize,
) {
    assert_refused(text, code, line, column);
}

#[test]
fn an_unquoted_number_version_stays_text() {
    let m = parse(&format!(
        "{}artifacts:\n  - name: local/a\n    version: 2.10\n",
        BASE.replace("0.1.0", "1.10")
    ))
    .unwrap();
    assert_eq!(m.version, "1.10");
    assert_eq!(m.artifacts[0].version, "2.10");
    let m = parse(&BASE.replace("0.1.0", "1.0")).unwrap();
    assert_eq!(m.version, "1.0");
}

/// `key:` with no value reads as if the key were absent, at every optional key.
#[rstest]
#[case::instructions("instructions:\n")]
#[case::inference("inference:\n")]
#[case::max_turns("inference:\n  max_turns:\n")]
#[case::lifecycle(
    "lifecycle:\n  task_acceptance:\n  after_task:\n  queue_depth:\n  idle_timeout:\n"
)]
#[case::exports("exports:\n  peer_tasks:\n    accept:\n")]
#[case::network("network:\n  authentication:\n")]
#[case::capabilities(
    "capabilities:\n  network:\n    allow:\n  env:\n  shell:\n  spawn:\n    allow:\n"
)]
#[case::lists("tools:\nhooks:\nartifacts:\n")]
#[case::trace("trace:\n  retain:\n    max_sessions:\n    max_age:\n")]
fn a_key_with_no_value_is_absent(#[case] extra: &str) {
    let with = parse(&format!("{BASE}{extra}")).unwrap();
    assert_eq!(with, parse(BASE).unwrap());
}

#[test]
fn no_value_on_authentication_lets_spawn_through() {
    // `authentication:` is absent, so E-MAN-003 does not apply.
    let m = parse(&format!(
        "{BASE}network:\n  authentication:\ncapabilities:\n  spawn:\n    allow: [local/child]\n"
    ))
    .unwrap();
    assert_eq!(m.network.authentication, None);
    assert_eq!(m.capabilities.spawn.allow, ["local/child"]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any text at all gets a manifest or a diagnostic, never a panic.
    #[test]
    fn parse_never_panics_on_any_text(text in any::<String>()) {
        let _ = parse(&text);
    }

    /// Text built from YAML's own pieces reaches deeper than random characters do.
    #[test]
    fn parse_never_panics_on_yaml_like_text(
        parts in prop::collection::vec(
            prop_oneof![
                Just("name: coder\n"), Just("version: 1.10\n"), Just("description: d\n"),
                Just("agent:\n"), Just("  transport: builtin\n"), Just("  transport: http\n"),
                Just("  base_url: http://h\n"), Just("  command: [sh]\n"), Just("tools:\n"),
                Just("  - name: t\n"), Just("    path: t.wasm\n"), Just("lifecycle:\n"),
                Just("  queue_depth: 99999999999999999999\n"), Just("  idle_timeout: 9999999999999999999d\n"),
                Just("network: {authentication: {}}\n"), Just("capabilities:\n  spawn:\n    allow: [\"local/*\"]\n"),
                Just("- "), Just(": "), Just("{"), Just("}"), Just("["), Just("]"), Just("&a "), Just("*a"),
                Just("\""), Just("'"), Just("|\n"), Just("  "), Just("\t"), Just("#"), Just("---\n"),
                Just("~"), Just("\n"), Just("é"), Just("\u{feff}"),
            ],
            0..40,
        )
    ) {
        let text: String = parts.concat();
        let _ = parse(&text);
    }
}

/// Every ```yaml block in docs/manifest.md parses, so the documented examples stay true.
#[test]
fn the_documented_examples_parse() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/manifest.md"))
            .unwrap();
    let blocks: Vec<&str> = doc
        .split("```yaml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert_eq!(blocks.len(), 2);
    let full = parse(blocks[0]).unwrap();
    assert_eq!(full.artifacts[0].version, "1.10");
    assert_eq!(full.tools.len(), 1);
    assert_eq!(full.hooks.len(), 1);
    assert!(full.network.authentication.is_some());
    assert_eq!(full.lifecycle.holds(), 3);
    parse(blocks[1]).unwrap();
}

#[test]
fn type_errors_are_worded_alike_in_the_roster_and_the_manifest() {
    let w = World::new();
    let refused = |cmd: &mut std::process::Command| {
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .find(|l| l.starts_with("error["))
            .unwrap()
            .to_string()
    };
    std::fs::write(
        w.proj.join("roster.yaml"),
        "roster_version: abc\nmembers:\n  - {name: a, capsule: local/c, version: 1.0.0, entry: true}\n",
    )
    .unwrap();
    let roster = refused(w.mur().arg("doctor"));
    let capsule = w.proj.join("c");
    std::fs::create_dir_all(&capsule).unwrap();
    std::fs::write(
        capsule.join("murmur.yaml"),
        "name: c\nversion: 1.0.0\ndescription: a\nagent:\n  transport: builtin\ninference:\n  max_turns: abc\n",
    )
    .unwrap();
    let manifest = refused(w.mur().args(["pack", "c"]));
    // One shape: "`<field>` must be <what>, not <what it is>".
    assert!(
        roster.contains("`roster_version` must be the integer 1, not `abc`"),
        "{roster}"
    );
    assert!(
        manifest.contains("`inference.max_turns` must be a whole number, not `abc`"),
        "{manifest}"
    );
    std::fs::write(
        capsule.join("murmur.yaml"),
        "name: c\nversion: 1.0.0\ndescription: [a]\nagent:\n  transport: builtin\n",
    )
    .unwrap();
    let listed = refused(w.mur().args(["pack", "c"]));
    assert!(
        listed.contains("`description` must be a string, not a list"),
        "{listed}"
    );
}
