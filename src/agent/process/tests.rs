//! Real harness scripts run by `sh`, one per outcome the protocol can report.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::agent::{Agent, AgentSpec, FileContent, Outcome, Part, Tool, ToolOutput};
use crate::trace::TraceWriter;

/// A tool that answers `echo: <arguments>`.
struct Echo;

impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Answers with its arguments."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { ToolOutput::ok(format!("echo: {}", call.arguments)) })
    }
}

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(script: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("harness.sh"), script).unwrap();
        Setup { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn agent(&self, max_turns: u32, trace: Option<Arc<TraceWriter>>) -> Agent {
        let config = ProcessConfig {
            command: vec!["sh".into(), "harness.sh".into()],
            cwd: self.dir.path().to_path_buf(),
            env: vec![
                ("PATH".into(), crate::grant::DEFAULT_PATH.into()),
                ("HARNESS_SAYS".into(), "hello".into()),
            ],
            stderr: Some(self.path("stderr.log")),
            confine: None,
        };
        Agent::new(AgentSpec {
            task_id: "task-1".into(),
            system: "You are a test.".into(),
            max_turns,
            tools: vec![Arc::new(Echo)],
            transport: Box::new(ProcessTransport::new(config).unwrap()),
            trace,
        })
    }

    /// The lines the harness logged to `in.log` (what mur wrote to it).
    fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(self.path("in.log"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// Logs every line mur writes to in.log, then answers with each argument in turn.
fn replying(answers: &[&str]) -> String {
    let mut s = String::from("set -e\n");
    for a in answers {
        s.push_str("IFS= read -r line\nprintf '%s\\n' \"$line\" >> in.log\n");
        s.push_str(&format!("printf '%s\\n' '{a}'\n"));
    }
    s
}

async fn run(setup: &Setup, task: &str) -> Outcome {
    setup
        .agent(8, None)
        .send(task, &CancellationToken::new())
        .await
}

#[tokio::test]
async fn completed_with_a_message_and_the_task_line_as_documented() {
    let s = Setup::new(&replying(&[r#"{"type":"message","text":"all done"}"#]));
    let outcome = run(&s, "say hi").await;
    assert_eq!(
        outcome,
        Outcome::Completed {
            message: Some("all done".into()),
            artifacts: vec![]
        }
    );
    let task = &s.received()[0];
    assert_eq!(task["type"], "task");
    assert_eq!(task["task_id"], "task-1");
    assert_eq!(task["text"], "say hi");
    assert_eq!(task["system"], "You are a test.");
    assert_eq!(task["tools"][0]["name"], "echo");
    assert_eq!(task["tools"][0]["input_schema"], json!({"type": "object"}));
}

#[tokio::test]
async fn completed_with_text_data_and_file_artifacts() {
    let result = r#"{"type":"result","text":"see artifacts","artifacts":[{"artifactId":"a1","name":"notes","parts":[{"text":"plain"}]},{"name":"numbers","parts":[{"data":{"n":[1,2]}}]},{"name":"file","parts":[{"raw":"aGVsbG8=","filename":"hello.txt","mediaType":"text/plain"},{"url":"file:///x.png"}]}]}"#;
    let s = Setup::new(&replying(&[result]));
    let Outcome::Completed { message, artifacts } = run(&s, "make things").await else {
        panic!("not completed")
    };
    assert_eq!(message.as_deref(), Some("see artifacts"));
    assert_eq!(artifacts.len(), 3);
    assert_eq!(artifacts[0].artifact_id, "a1");
    assert_eq!(artifacts[0].parts, [Part::Text("plain".into())]);
    assert_eq!(artifacts[1].parts, [Part::Data(json!({"n": [1, 2]}))]);
    assert_eq!(
        artifacts[2].parts[0],
        Part::File {
            filename: Some("hello.txt".into()),
            media_type: Some("text/plain".into()),
            content: FileContent::Bytes(b"hello".to_vec())
        }
    );
    assert!(
        matches!(&artifacts[2].parts[1], Part::File { content: FileContent::Url(u), .. } if u == "file:///x.png")
    );
}

#[tokio::test]
async fn input_required_then_the_reply_reaches_the_same_harness() {
    let s = Setup::new(&replying(&[
        r#"{"type":"input_required","question":"which file?"}"#,
        r#"{"type":"message","text":"edited it"}"#,
    ]));
    let mut agent = s.agent(8, None);
    let cancel = CancellationToken::new();
    let first = agent.send("edit the file", &cancel).await;
    assert_eq!(
        first,
        Outcome::InputRequired {
            question: "which file?".into()
        }
    );
    let second = agent.send("main.rs", &cancel).await;
    assert_eq!(
        second,
        Outcome::Completed {
            message: Some("edited it".into()),
            artifacts: vec![]
        }
    );
    let got = s.received();
    assert_eq!(got[1], json!({"type": "reply", "text": "main.rs"}));
    // The task is over: a further message is refused without a harness.
    assert!(matches!(
        agent.send("more", &cancel).await,
        Outcome::Failed { .. }
    ));
}

#[tokio::test]
async fn rejected_and_failed_carry_the_harness_reason() {
    let s = Setup::new(&replying(&[r#"{"type":"rejected","reason":"not my job"}"#]));
    assert_eq!(
        run(&s, "x").await,
        Outcome::Rejected {
            reason: "not my job".into()
        }
    );
    let s = Setup::new(&replying(&[r#"{"type":"failed","reason":"disk full"}"#]));
    assert_eq!(
        run(&s, "x").await,
        Outcome::Failed {
            reason: "disk full".into()
        }
    );
}

#[tokio::test]
async fn tool_calls_run_and_their_results_go_back_to_the_harness() {
    // Two calls, so two tool_result lines come back before the harness answers.
    let log = "IFS= read -r line\nprintf '%s\\n' \"$line\" >> in.log\n";
    let script = format!(
        "{log}echo '{}'\n{log}{log}echo '{}'\n",
        r#"{"type":"tool_call","calls":[{"id":"c1","name":"echo","arguments":{"a":1}},{"id":"c2","name":"nope","arguments":{}}]}"#,
        r#"{"type":"message","text":"used tools"}"#
    );
    let s = Setup::new(&script);
    let dir = tempfile::tempdir().unwrap();
    let trace = Arc::new(TraceWriter::create(&dir.path().join("trace.jsonl")).unwrap());
    let outcome = s
        .agent(8, Some(trace.clone()))
        .send("use tools", &CancellationToken::new())
        .await;
    assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
    let got = s.received();
    assert_eq!(
        got[1],
        json!({"type": "tool_result", "id": "c1", "name": "echo", "output": "echo: {\"a\":1}", "is_error": false})
    );
    assert_eq!(got[2]["id"], "c2");
    assert_eq!(got[2]["is_error"], true);
    assert!(
        got[2]["output"]
            .as_str()
            .unwrap()
            .contains("no tool named `nope`")
    );

    let kinds: Vec<&str> = crate::trace::read(trace.path())
        .unwrap()
        .records
        .iter()
        .map(|r| r.event.kind())
        .collect();
    assert_eq!(
        kinds,
        [
            "inference_turn",
            "tool_call",
            "tool_call",
            "tool_result",
            "tool_result",
            "inference_turn"
        ]
    );
}

#[tokio::test]
async fn max_turns_exhausted_fails_with_a_clear_reason() {
    let s = Setup::new(
        "while IFS= read -r line; do printf '%s\\n' '{\"type\":\"tool_call\",\"name\":\"echo\",\"arguments\":{}}'; done\n",
    );
    let outcome = s
        .agent(3, None)
        .send("loop", &CancellationToken::new())
        .await;
    let Outcome::Failed { reason } = outcome else {
        panic!("{outcome:?}")
    };
    assert!(
        reason.contains("inference.max_turns (3) reached"),
        "{reason}"
    );
    assert!(reason.contains("echo"), "{reason}");
}

/// Whether /proc shows `pid` as a live process (absent or a zombie counts as gone).
fn alive(pid: u32) -> bool {
    crate::descendants::stat(pid).is_some_and(|p| !p.is_zombie())
}

async fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && s.ends_with('\n')
        {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn cancel_mid_turn_kills_the_harness_and_what_it_started() {
    let s = Setup::new(
        "IFS= read -r line\nsleep 60 &\nprintf '%s %s\\n' $$ $! > pids.tmp\nmv pids.tmp pids\nwait\n",
    );
    let mut agent = s.agent(8, None);
    let cancel = CancellationToken::new();
    let run = {
        let cancel = cancel.clone();
        tokio::spawn(async move { agent.send("wait forever", &cancel).await })
    };
    let pids = wait_for_file(&s.path("pids")).await;
    let pids: Vec<u32> = pids
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(pids.iter().all(|p| alive(*p)), "harness should be running");
    cancel.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("cancel took too long")
        .unwrap();
    assert_eq!(outcome, Outcome::Canceled);
    // The harness was reaped before send returned: its /proc entry is gone.
    assert!(!Path::new(&format!("/proc/{}", pids[0])).exists());
    // Its child went with its process group (it may linger as a zombie of init).
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pids[1]) {
        assert!(Instant::now() < deadline, "child {} survived", pids[1]);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_harness_that_dies_or_babbles_fails_the_task() {
    let s = Setup::new("IFS= read -r line\nexit 3\n");
    let Outcome::Failed { reason } = run(&s, "x").await else {
        panic!()
    };
    assert!(reason.contains("exited with status 3"), "{reason}");

    let s = Setup::new("IFS= read -r line\necho hello there\n");
    let Outcome::Failed { reason } = run(&s, "x").await else {
        panic!()
    };
    assert!(reason.contains("not one of its messages"), "{reason}");
    assert!(reason.contains("hello there"), "{reason}");

    let s = Setup::new("IFS= read -r line\necho '{\"type\":\"tool_call\"}'\n");
    let Outcome::Failed { reason } = run(&s, "x").await else {
        panic!()
    };
    assert!(reason.contains("no `name`"), "{reason}");
}

#[tokio::test]
async fn a_missing_program_fails_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let config = ProcessConfig {
        command: vec!["./no-such-harness".into()],
        cwd: dir.path().to_path_buf(),
        env: vec![],
        stderr: None,
        confine: None,
    };
    let mut agent = Agent::new(AgentSpec {
        task_id: "t".into(),
        system: String::new(),
        max_turns: 2,
        tools: vec![],
        transport: Box::new(ProcessTransport::new(config).unwrap()),
        trace: None,
    });
    let Outcome::Failed { reason } = agent.send("x", &CancellationToken::new()).await else {
        panic!()
    };
    assert!(
        reason.contains("cannot start `./no-such-harness`"),
        "{reason}"
    );
    assert!(
        ProcessTransport::new(ProcessConfig {
            command: vec![],
            cwd: dir.path().to_path_buf(),
            env: vec![],
            stderr: None,
            confine: None,
        })
        .is_err()
    );
}

#[tokio::test]
async fn the_harness_sees_only_the_given_environment() {
    let s = Setup::new(
        "IFS= read -r line\nenv > env.out\nprintf '%s\\n' '{\"type\":\"message\",\"text\":\"ok\"}'\n",
    );
    run(&s, "x").await;
    let env = std::fs::read_to_string(s.path("env.out")).unwrap();
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(
        names.contains(&"HARNESS_SAYS") && names.contains(&"PATH"),
        "{env}"
    );
    // sh adds its own (PWD, and SHLVL and _ in some shells); nothing of mur's.
    let own = ["HARNESS_SAYS", "PATH", "PWD", "OLDPWD", "SHLVL", "_"];
    assert!(names.iter().all(|n| own.contains(n)), "{env}");
}

#[tokio::test]
async fn closing_a_task_that_waits_for_input_stops_its_harness() {
    let s = Setup::new(
        "IFS= read -r line\necho $$ > pid.tmp\nmv pid.tmp pid\necho '{\"type\":\"input_required\",\"question\":\"?\"}'\nIFS= read -r reply\n",
    );
    let mut agent = s.agent(8, None);
    let outcome = agent.send("x", &CancellationToken::new()).await;
    assert!(matches!(outcome, Outcome::InputRequired { .. }));
    let pid: u32 = wait_for_file(&s.path("pid")).await.trim().parse().unwrap();
    assert!(alive(pid));
    assert!(!agent.is_ended());
    agent.close().await;
    assert!(agent.is_ended());
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    assert!(matches!(
        agent.send("late", &CancellationToken::new()).await,
        Outcome::Failed { .. }
    ));
}

#[tokio::test]
async fn a_harness_that_closes_its_output_but_lives_on_fails_the_task_promptly() {
    let s = Setup::new("IFS= read -r line\nexec sleep 60 >&-\n");
    let started = Instant::now();
    let Outcome::Failed { reason } = run(&s, "x").await else {
        panic!()
    };
    assert!(reason.contains("ended its output"), "{reason}");
    // Bounded by the grace periods (2 s + 2 s), not by the harness's 60 s.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// A call-member stand-in for the documented harness.
struct Member;

impl Tool for Member {
    fn name(&self) -> &str {
        crate::agent::CALL_MEMBER
    }
    fn description(&self) -> &str {
        "Calls a member."
    }
    fn input_schema(&self) -> Value {
        crate::agent::call_member_schema()
    }
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { ToolOutput::ok(format!("{} wrote it", call.arguments["member"])) })
    }
}

#[tokio::test]
async fn the_minimal_harness_in_docs_agent_md_works_as_documented() {
    let doc = include_str!("../../../docs/agent.md");
    let after = &doc[doc
        .find("A minimal harness:")
        .expect("the doc shows a harness")..];
    let start = after.find("```sh\n").unwrap() + "```sh\n".len();
    let script = &after[start..start + after[start..].find("```").unwrap()];
    let s = Setup::new(script);
    let config = ProcessConfig {
        command: vec!["sh".into(), "harness.sh".into()],
        cwd: s.dir.path().to_path_buf(),
        env: vec![],
        stderr: None,
        confine: None,
    };
    let mut agent = Agent::new(AgentSpec {
        task_id: "t".into(),
        system: String::new(),
        max_turns: 4,
        tools: vec![Arc::new(Member)],
        transport: Box::new(ProcessTransport::new(config).unwrap()),
        trace: None,
    });
    let outcome = agent.send("build it", &CancellationToken::new()).await;
    let Outcome::Completed { message, artifacts } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(message.as_deref(), Some("done"));
    assert_eq!(artifacts[0].parts, [Part::Text("ok".into())]);
    let Some(crate::agent::Message::Tool { output, .. }) = agent.conversation().messages.get(2)
    else {
        panic!("no tool result")
    };
    assert_eq!(output, "\"coder\" wrote it");
}

/// Run only as the child of the test below: starts a harness that never answers.
#[tokio::test]
#[ignore = "a helper process for harness_dies_with_a_killed_mur"]
async fn helper_run_a_harness_forever() {
    let Some(dir) = std::env::var_os("MUR_TEST_HARNESS_DIR") else {
        return;
    };
    let config = ProcessConfig {
        command: vec![
            "sh".into(),
            "-c".into(),
            "echo $$ > pid.tmp; mv pid.tmp pid; exec sleep 120".into(),
        ],
        cwd: dir.into(),
        env: vec![],
        stderr: None,
        confine: None,
    };
    let mut agent = Agent::new(AgentSpec {
        task_id: "t".into(),
        system: String::new(),
        max_turns: 1,
        tools: vec![],
        transport: Box::new(ProcessTransport::new(config).unwrap()),
        trace: None,
    });
    agent.send("x", &CancellationToken::new()).await;
}

#[tokio::test]
async fn harness_dies_with_a_killed_mur() {
    let dir = tempfile::tempdir().unwrap();
    let mut mur = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "agent::process::tests::helper_run_a_harness_forever",
            "--ignored",
            "--test-threads=1",
        ])
        .env("MUR_TEST_HARNESS_DIR", dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid: u32 = wait_for_file(&dir.path().join("pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pid));
    mur.kill().unwrap(); // SIGKILL: no shutdown, no Drop
    mur.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(Instant::now() < deadline, "harness {pid} outlived mur");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
