//! The `shell` tool through a real session: a process harness asks for it and answers
//! with what it returned (docs/shell.md).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use crate::support::{self, World};

/// A capsule in `dir` whose harness runs one shell call with `args` and answers with
/// the call's output, whole.
fn capsule(dir: &Path, capabilities: &str, args: &str) {
    let manifest = format!(
        "name: sh-user\nversion: 0.1.0\ndescription: x\nagent:\n  transport: process\n  command: [\"sh\", \"harness.sh\"]\n{capabilities}"
    );
    std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
    let harness = format!(
        "IFS= read -r task\necho '{{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"shell\",\"arguments\":{args}}}'\nIFS= read -r result\nprintf '%s\\n' \"$result\" > result.json\necho '{{\"type\":\"message\",\"text\":\"done\"}}'\n"
    );
    std::fs::write(dir.join("harness.sh"), harness).unwrap();
    std::fs::set_permissions(
        dir.join("harness.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
}

/// Runs the capsule's one task; returns the shell call's result line and the session's
/// records directory.
fn run(w: &World, env: &[(&str, &str)]) -> (Value, std::path::PathBuf) {
    let mut cmd = w.mur();
    cmd.args(["run", "--task", "go"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: Value =
        serde_json::from_str(&std::fs::read_to_string(w.proj.join("result.json")).unwrap())
            .unwrap();
    let records = support::files_under(&w.home.join(".murmur/records"))
        .into_iter()
        .find(|f| f.file_name().is_some_and(|n| n == "trace.jsonl"))
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    (line, records)
}

fn output(line: &Value) -> Value {
    assert_eq!(line["type"], "tool_result", "{line}");
    serde_json::from_str(line["output"].as_str().unwrap()).unwrap()
}

#[test]
fn a_command_runs_in_the_work_folder_with_exactly_its_environment() {
    let w = World::new();
    capsule(
        &w.proj,
        "capabilities:\n  shell:\n    baseline_env: [PATH, FOO, UNSET_ONE, MURMUR_WORKDIR]\n",
        "{\"command\":\"env; echo cwd=$(pwd) >&2\"}",
    );
    let (line, records) = run(
        &w,
        &[
            ("FOO", "bar"),
            ("SECRET_TOKEN", "s3cr3t"),
            ("MURMUR_WORKDIR", "/elsewhere"),
        ],
    );
    assert_eq!(line["is_error"], false, "{line}");
    let out = output(&line);
    assert_eq!(out["exit_code"], 0);
    let env: BTreeMap<String, String> = out["stdout"]
        .as_str()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let names: Vec<&str> = env.keys().map(String::as_str).collect();
    // PWD is sh's own; the proxy variables are the session's egress proxy
    // (docs/confinement.md).
    assert_eq!(
        names,
        [
            "ALL_PROXY",
            "FOO",
            "HOME",
            "HTTPS_PROXY",
            "HTTP_PROXY",
            "PATH",
            "PWD",
            "TMPDIR",
            "all_proxy",
            "http_proxy",
            "https_proxy"
        ],
        "{env:?}"
    );
    assert!(
        env["HTTPS_PROXY"].starts_with("http://127.0.0.1:"),
        "{env:?}"
    );
    assert_eq!(env["FOO"], "bar");
    assert_eq!(Path::new(&env["HOME"]), records.join("home"));
    assert_eq!(Path::new(&env["TMPDIR"]), records.join("tmp"));
    assert_eq!(
        out["stderr"].as_str().unwrap().trim(),
        format!("cwd={}", w.proj.display())
    );
}

#[test]
fn the_result_carries_a_failing_status_and_a_timeout_is_an_error() {
    let w = World::new();
    capsule(
        &w.proj,
        "capabilities:\n  shell: {}\n",
        "{\"command\":\"echo partial; exec sleep 30\",\"timeout_s\":0.5}",
    );
    let (line, _) = run(&w, &[]);
    assert_eq!(line["is_error"], true, "{line}");
    let out = output(&line);
    assert_eq!(out["timed_out"], true);
    assert_eq!(out["signal"], 9);
    assert_eq!(out["stdout"], "partial\n");
}

#[test]
fn without_capabilities_shell_there_is_no_shell_tool() {
    let w = World::new();
    capsule(&w.proj, "", "{\"command\":\"true\"}");
    let (line, _) = run(&w, &[]);
    assert_eq!(line["is_error"], true);
    assert!(
        line["output"]
            .as_str()
            .unwrap()
            .contains("no tool named `shell`"),
        "{line}"
    );
}

/// A background process that holds the output open does not cost what the command
/// wrote: past the output grace, the read so far is the result. Run each way a child
/// may be cloned (`MUR_TEST_SPAWN_VIA`).
#[rstest::rstest]
fn what_was_read_comes_back_when_a_background_process_holds_the_output(
    #[values(None, Some("fork-clone3"), Some("clone"))] via: Option<&str>,
) {
    let w = World::new();
    // In the work folder: a confined command writes nowhere else.
    let pidfile = w.proj.join("bg.pid");
    capsule(
        &w.proj,
        "capabilities:\n  shell: {}\n",
        &format!(
            "{{\"command\":\"sleep 100 & echo $! > {}; echo x; echo y >&2\"}}",
            pidfile.display()
        ),
    );
    let env: Vec<(&str, &str)> = via.map(|v| ("MUR_TEST_SPAWN_VIA", v)).into_iter().collect();
    let (line, _) = run(&w, &env);
    assert_eq!(line["is_error"], false, "{line}");
    let out = output(&line);
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["stdout"], "x\n", "{out}");
    assert_eq!(out["stderr"], "y\n", "{out}");
    // The session's end swept the sleeper.
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        mur::descendants::stat(pid).is_none_or(|p| p.is_zombie()),
        "the background sleep {pid} outlived the session"
    );
}

/// The capsule's credentials reach no shell command, whatever `baseline_env` says,
/// and nor do proxy variables of mur's environment.
#[test]
fn credentials_and_proxies_reach_no_shell_command() {
    let w = World::new();
    capsule(
        &w.proj,
        "network:\n  authentication:\n    bearer_env: [DOOR_TOKEN]\ncapabilities:\n  shell:\n    baseline_env: [DOOR_TOKEN, HTTPS_PROXY, FOO]\n",
        "{\"command\":\"env\"}",
    );
    let (line, _) = run(
        &w,
        &[
            ("DOOR_TOKEN", "d00r-s3cr3t"),
            ("HTTPS_PROXY", "http://proxy.invalid"),
            ("FOO", "bar"),
        ],
    );
    let out = output(&line);
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.contains("FOO=bar"), "{stdout}");
    assert!(!stdout.contains("d00r-s3cr3t"), "{stdout}");
    assert!(!stdout.contains("proxy.invalid"), "{stdout}");
}
