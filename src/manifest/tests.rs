use std::path::Path;
use std::time::Duration;

use super::*;
use crate::catalogue::{E_MAN_001, E_MAN_003, E_MAN_005, E_MAN_006, E_MAN_007};

const MINIMAL: &str =
    "name: coder\nversion: 0.1.0\ndescription: Writes code.\nagent:\n  transport: builtin\n";

const FULL: &str = r#"name: coder
version: 1.10
description: Writes code.
instructions: INSTRUCTIONS.md
agent:
  transport: http
  base_url: "http://127.0.0.1:11434/v1"
  model: llama3
  api_key_env: OPENAI_API_KEY
  ca_file: certs/ca.pem
  timeout: 90s
  max_retries: 5
  stream: true
  temperature: 0.20
  top_p: 1
  max_tokens: 512
  seed: -7
  stop: ["\n\n", END]
inference:
  max_turns: 12
lifecycle:
  task_acceptance: queue
  after_task: exit
  queue_depth: 2
  idle_timeout: 90m
exports:
  peer_tasks:
    accept: true
network:
  authentication:
    bearer_env: [MY_TOKEN]
capabilities:
  network:
    allow: [localhost, api.example.com]
  env:
    allow: [LANG]
  shell:
    baseline_env: [PATH, HOME]
tools:
  - name: search
    path: tools/search.wasm
    description: Searches the code.
hooks:
  - event: task_end
    path: hooks/notify.wasm
    async: true
trace:
  retain:
    max_sessions: 20
    max_age: 30d
artifacts:
  - name: local/helper
    version: 2.0
"#;

fn p(text: &str) -> Result<Manifest> {
    parse(text, Path::new("murmur.yaml"))
}

fn at(err: &Diagnostic) -> (usize, usize) {
    let l = err.location.as_ref().expect("a location");
    (l.line, l.column)
}

#[test]
fn minimal_takes_every_default() {
    let m = p(MINIMAL).unwrap();
    assert_eq!(m.name, "coder");
    assert_eq!(m.version, "0.1.0");
    assert_eq!(m.agent.transport, Transport::Builtin);
    assert_eq!(m.inference.max_turns, 8);
    assert_eq!(m.lifecycle, Lifecycle::default());
    assert_eq!(m.lifecycle.holds(), 1);
    assert!(!m.exports.peer_tasks.accept);
    assert_eq!(m.network.authentication, None);
    assert_eq!(m.capabilities, Capabilities::default());
    assert!(m.tools.is_empty() && m.hooks.is_empty() && m.artifacts.is_empty());
    assert_eq!(m.trace.retain, super::Retain::default());
    assert_eq!(m.instructions, None);
}

#[test]
fn full_reads_every_field() {
    let m = p(FULL).unwrap();
    assert_eq!(m.version, "1.10");
    assert_eq!(m.instructions.as_deref(), Some("INSTRUCTIONS.md"));
    assert_eq!(
        m.agent.transport,
        Transport::Http(HttpTransport {
            base_url: "http://127.0.0.1:11434/v1".into(),
            model: "llama3".into(),
            api_key_env: Some("OPENAI_API_KEY".into()),
            driver: None,
            ca_file: Some("certs/ca.pem".into()),
            timeout: Duration::from_secs(90),
            max_retries: 5,
            stream: true,
            sampling: Sampling {
                temperature: Some(serde_json::from_str("0.20").unwrap()),
                top_p: Some(1.into()),
                max_tokens: Some(512),
                seed: Some(-7),
                stop: vec!["\n\n".into(), "END".into()],
            },
        })
    );
    assert_eq!(m.inference.max_turns, 12);
    assert_eq!(m.lifecycle.task_acceptance, TaskAcceptance::Queue);
    assert_eq!(m.lifecycle.after_task, AfterTask::Exit);
    assert_eq!(m.lifecycle.queue_depth, 2);
    assert_eq!(m.lifecycle.holds(), 3);
    assert_eq!(m.lifecycle.idle_timeout, Some(5400));
    assert!(m.exports.peer_tasks.accept);
    assert_eq!(
        m.network.authentication,
        Some(Authentication {
            bearer_env: vec!["MY_TOKEN".into()]
        })
    );
    assert_eq!(
        m.capabilities.network.allow,
        ["localhost", "api.example.com"]
    );
    assert_eq!(m.capabilities.env.allow, ["LANG"]);
    assert_eq!(
        m.capabilities.shell,
        Some(Shell {
            baseline_env: vec!["PATH".into(), "HOME".into()]
        })
    );
    assert!(m.capabilities.spawn.allow.is_empty());
    assert_eq!(
        m.tools,
        [Tool {
            name: "search".into(),
            path: "tools/search.wasm".into(),
            description: "Searches the code.".into()
        }]
    );
    assert_eq!(
        m.hooks,
        [Hook {
            event: HookEvent::TaskEnd,
            path: "hooks/notify.wasm".into(),
            is_async: true
        }]
    );
    assert_eq!(m.trace.retain.max_sessions, Some(20));
    assert_eq!(
        m.trace.retain.max_age,
        Some(Duration::from_secs(30 * 86_400))
    );
    assert_eq!(
        m.artifacts,
        [ArtifactRef {
            name: "local/helper".into(),
            version: "2.0".into()
        }]
    );
}

#[test]
fn process_transport_and_empty_authentication() {
    let m = p(&format!(
        "{}network:\n  authentication: {{}}\ncapabilities:\n  shell: {{}}\n",
        MINIMAL.replace(
            "transport: builtin",
            "transport: process\n  command: [\"sh\", \"harness.sh\"]"
        )
    ))
    .unwrap();
    assert_eq!(
        m.agent.transport,
        Transport::Process(ProcessTransport {
            command: vec!["sh".into(), "harness.sh".into()]
        })
    );
    assert_eq!(m.network.authentication, Some(Authentication::default()));
    assert_eq!(m.capabilities.shell, Some(Shell::default()));
}

#[test]
fn key_with_no_value_is_absent() {
    let m = p(&format!(
        "{MINIMAL}network:\n  authentication:\ninstructions:\nlifecycle:\n  queue_depth:\n"
    ))
    .unwrap();
    assert_eq!(m.network.authentication, None);
    assert_eq!(m.instructions, None);
    assert_eq!(m.lifecycle.queue_depth, 0);
    // ... and so a required key with no value is missing, at the key.
    let err =
        p("name: coder\nversion:\ndescription: x\nagent: {transport: builtin}\n").unwrap_err();
    assert_eq!(err.code, E_MAN_001);
    assert_eq!(at(&err), (2, 1));
    assert!(
        err.message.contains("`version` is required"),
        "{}",
        err.message
    );
}

#[test]
fn authentication_beside_spawn_is_e_man_003() {
    let text = format!(
        "{MINIMAL}network:\n  authentication: {{}}\ncapabilities:\n  spawn:\n    allow: [local/child]\n"
    );
    let err = p(&text).unwrap_err();
    assert_eq!(err.code, E_MAN_003);
    assert_eq!(at(&err), (7, 3));
    assert!(err.message.contains("line 10"), "{}", err.message);
    // An empty spawn.allow is no delegation.
    let ok = format!(
        "{MINIMAL}network:\n  authentication: {{}}\ncapabilities:\n  spawn:\n    allow: []\n"
    );
    assert!(p(&ok).is_ok());
}

#[test]
fn moving_version_is_refused_at_its_node() {
    let err = p(&MINIMAL.replace("0.1.0", "latest")).unwrap_err();
    assert_eq!(err.code, E_MAN_005);
    assert_eq!(at(&err), (2, 10));
    assert!(!err.hint_text().is_empty());
}

#[test]
fn empty_and_non_mapping_documents() {
    for text in ["", "# nothing\n", "- a\n", "just text\n"] {
        let err = p(text).unwrap_err();
        assert_eq!(err.code, E_MAN_001, "{text:?}");
        assert_eq!(at(&err), (1, 1), "{text:?}");
    }
}

#[test]
fn load_reads_a_file_or_a_folder_and_names_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(FILE_NAME);
    std::fs::write(&file, MINIMAL).unwrap();
    assert_eq!(load(&file).unwrap().name, "coder");
    assert_eq!(load(dir.path()).unwrap().name, "coder");

    let missing = dir.path().join("nope").join(FILE_NAME);
    let err = load(&missing).unwrap_err();
    assert_eq!(err.code, E_MAN_001);
    assert_eq!(err.file.as_deref(), Some(missing.as_path()));

    std::fs::write(&file, b"name: co\xffder\n").unwrap();
    let err = load(&file).unwrap_err();
    assert_eq!(err.code, E_MAN_001);
    assert_eq!(at(&err), (1, 9));
}

#[test]
fn errors_render_with_file_line_column_and_hint() {
    let err = p(&format!("{MINIMAL}colour: blue\n")).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.starts_with("error[E-MAN-001]: unknown key `colour`"),
        "{shown}"
    );
    assert!(shown.contains("--> murmur.yaml:6:1"), "{shown}");
    assert!(
        shown.contains("hint: The keys allowed at the top level are"),
        "{shown}"
    );
}

#[test]
fn http_settings_have_defaults_and_are_checked_at_their_node() {
    let http = "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: http\n  base_url: http://127.0.0.1:1/v1\n  model: m\n";
    let Transport::Http(h) = p(http).unwrap().agent.transport else {
        panic!()
    };
    assert_eq!(
        (h.timeout, h.max_retries, h.stream),
        (DEFAULT_TIMEOUT, DEFAULT_MAX_RETRIES, false)
    );
    assert_eq!(h.sampling, Sampling::default());
    for (line, code) in [
        ("  temperature: 2.5", E_MAN_001),
        ("  temperature: hot", E_MAN_001),
        ("  temperature: \"0.2\"", E_MAN_001),
        ("  top_p: -0.1", E_MAN_001),
        ("  max_tokens: 0", E_MAN_001),
        ("  seed: 1.5", E_MAN_001),
        ("  stop: [a, b, c, d, e]", E_MAN_001),
        ("  stop: \"\"", E_MAN_001),
        ("  max_retries: 21", E_MAN_001),
        ("  stream: yes", E_MAN_001),
        ("  timeout: 30", E_MAN_006),
        ("  ca_file: /etc/ca.pem", E_MAN_007),
    ] {
        let err = p(&format!("{http}{line}\n")).unwrap_err();
        assert_eq!(err.code, code, "{line}: {err}");
        let col = line.find(": ").unwrap() + 3;
        assert_eq!(at(&err), (8, col), "{line}: {err}");
    }
    // A setting of http beside another transport is refused.
    let err = p(&MINIMAL.replace("transport: builtin", "transport: builtin\n  stream: true"))
        .unwrap_err();
    assert!(err.message.contains("agent.stream"), "{err}");
}

#[test]
fn spawn_limits_read_and_out_of_range_ones_are_refused_at_their_node() {
    let m = p(&format!(
        "{MINIMAL}capabilities:\n  spawn:\n    allow: [local/kid]\n    max_depth: 2\n    max_live: 5\n"
    ))
    .unwrap();
    assert_eq!(m.capabilities.spawn.max_depth, Some(2));
    assert_eq!(m.capabilities.spawn.max_live, Some(5));
    for (key, value) in [
        ("max_depth", "0"),
        ("max_live", "1025"),
        ("max_depth", "deep"),
    ] {
        let err = p(&format!(
            "{MINIMAL}capabilities:\n  spawn:\n    allow: [local/kid]\n    {key}: {value}\n"
        ))
        .unwrap_err();
        assert!(
            err.message.contains(&format!("capabilities.spawn.{key}")),
            "{}",
            err.message
        );
        assert!(!err.hint_text().is_empty());
        assert_eq!(at(&err).1, 5 + key.len() + 2);
    }
}

#[test]
fn parallel_tools_defaults_to_four_and_is_bounded_at_its_node() {
    let base = "name: coder\nversion: 0.1.0\ndescription: d\nagent:\n  transport: builtin\n";
    assert_eq!(p(base).unwrap().inference.parallel_tools, PARALLEL_TOOLS);
    let with = |v: &str| p(&format!("{base}inference:\n  parallel_tools: {v}\n"));
    assert_eq!(with("1").unwrap().inference.parallel_tools, 1);
    assert_eq!(with("32").unwrap().inference.parallel_tools, 32);
    for bad in ["0", "33", "many"] {
        let err = with(bad).unwrap_err();
        assert_eq!(err.code, E_MAN_001, "{bad}");
        assert_eq!(at(&err), (7, 19), "{bad}");
        assert!(err.message.contains("inference.parallel_tools"), "{err:?}");
    }
}
