//! Whole `mur` sessions and formations on `transport: http`.

use super::*;

// ---- the session -----------------------------------------------------------------

/// A HOME and a project folder for real `mur` processes.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let w = World {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(w.home()).unwrap();
        std::fs::create_dir_all(w.proj()).unwrap();
        w
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn proj(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn mur(&self, dir: &Path, args: &[&str]) -> tokio::process::Command {
        // The one clean-environment mur (no MURMUR_*/MUR_TEST_* of the caller), one time scale.
        let mut cmd = tokio::process::Command::from(crate::support::mur());
        cmd.args(args)
            .current_dir(dir)
            .env("HOME", self.home())
            .kill_on_drop(true);
        cmd
    }

    async fn ok(&self, dir: &Path, args: &[&str]) {
        let out = self.mur(dir, args).output().await.unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `mur new --roster team`, each member's `agent` replaced as given, installed.
    async fn team(&self, lead: &str, helper: &str) -> PathBuf {
        self.ok(&self.proj(), &["new", "--roster", "team"]).await;
        let team = self.proj().join("team");
        for (member, agent) in [("lead", lead), ("helper", helper)] {
            let path = team.join(member).join("murmur.yaml");
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.replace(
                "agent:\n  # The built-in offline model: runs with no API key and no network.\n  transport: builtin\n",
                agent,
            );
            assert!(text.contains(agent), "the scaffold's agent section moved");
            std::fs::write(&path, text).unwrap();
        }
        self.ok(&team, &["install", "lead", "helper"]).await;
        team
    }

    /// Writes and installs the capsule `local/<name>` 1.0.0 with this `agent` section.
    async fn capsule(&self, name: &str, agent: &str) {
        let src = self.dir.path().join("src").join(name);
        std::fs::create_dir_all(&src).unwrap();
        let text = format!("name: {name}\nversion: 1.0.0\ndescription: A test capsule.\n{agent}");
        std::fs::write(src.join("murmur.yaml"), text).unwrap();
        self.ok(&self.proj(), &["install", src.to_str().unwrap()])
            .await;
    }

    /// `mur run --task` of `local/<name>`, its exit code, stdout and stderr.
    async fn run_task(&self, name: &str, env: &[(&str, &Path)]) -> (Option<i32>, String, String) {
        let capsule = format!("local/{name}");
        let mut cmd = self.mur(
            &self.proj(),
            &[
                "run",
                "--capsule",
                &capsule,
                "--capsule-version",
                "1.0.0",
                "--task",
                "hi",
            ],
        );
        cmd.env_remove(mur::agent::http::SSL_CERT_FILE);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().await.unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    }

    /// Every trace.jsonl under the records, as JSON records.
    fn traces(&self) -> Vec<Vec<Value>> {
        let mut found = Vec::new();
        let mut stack = vec![self.home().join(".murmur/records")];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.file_name().is_some_and(|n| n == "trace.jsonl") {
                    let t = mur::trace::read(&p).unwrap();
                    found.push(
                        t.records
                            .iter()
                            .map(|r| serde_json::to_value(r).unwrap())
                            .collect(),
                    );
                }
            }
        }
        found
    }
}

fn http_agent(base: &str, extra: &str) -> String {
    format!("agent:\n  transport: http\n  base_url: \"{base}\"\n  model: m\n{extra}")
}

/// A capsule whose key variable is unset or empty, or whose CA file is missing, refuses to start:
/// an E-AGT code, no readiness line, no task taken.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_refuses_at_start_what_would_fail_every_task() {
    let base = "http://127.0.0.1:9/v1";
    let cases = [
        (
            "  api_key_env: MUR_TEST_MODELS_UNSET\n",
            "E-AGT-001",
            "not set",
        ),
        (
            "  api_key_env: MUR_TEST_MODELS_EMPTY\n",
            "E-AGT-001",
            "empty",
        ),
        ("  ca_file: missing.pem\n", "E-AGT-003", "missing.pem"),
    ];
    for (extra, code, says) in cases {
        let w = World::new();
        let team = w
            .team(&http_agent(base, extra), &http_agent(base, ""))
            .await;
        let mut run = w.mur(&team.join("lead"), &["run", "--json", "--task", "x"]);
        run.env("MUR_TEST_MODELS_EMPTY", "");
        let out = run.output().await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{code}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{code}: a readiness line was printed"
        );
        assert!(
            stderr.contains(code) && stderr.contains(says),
            "{code}: {stderr}"
        );
        let traces = w.traces();
        assert_eq!(traces.len(), 1);
        let end = traces[0].last().unwrap();
        assert_eq!(
            (&end["type"], &end["error_code"]),
            (&json!("session_end"), &json!(code))
        );
        assert!(!traces[0].iter().any(|r| r["type"] == "a2a_task_received"));
    }
}

/// A task that fails (its model server is down) says why on stderr, as E-RUN-010, and
/// leaves stdout empty, so `answer=$(mur run --task …)` never stores a reason.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_task_says_why_on_stderr_and_prints_nothing_on_stdout() {
    let w = World::new();
    // Port 9 (discard) on loopback: nothing listens, every request is refused.
    w.capsule(
        "down",
        &http_agent("http://127.0.0.1:9/v1", "  max_retries: 0\n"),
    )
    .await;
    let (code, stdout, stderr) = w.run_task("down", &[]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.is_empty(), "stdout carries answers only: {stdout:?}");
    assert!(stderr.contains("E-RUN-010"), "{stderr}");
    assert!(stderr.contains("failed: "), "{stderr}");
    assert!(
        stderr.contains("mur trace show ses_"),
        "the hint names the session: {stderr}"
    );

    // The same task given to a serving session with `mur send`.
    let mut serving = w.mur(
        &w.proj(),
        &[
            "run",
            "--capsule",
            "local/down",
            "--capsule-version",
            "1.0.0",
            "--json",
        ],
    );
    serving
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut serving = serving.spawn().unwrap();
    let mut first = String::new();
    tokio::io::AsyncBufReadExt::read_line(
        &mut tokio::io::BufReader::new(serving.stdout.take().unwrap()),
        &mut first,
    )
    .await
    .unwrap();
    let ready: Value = serde_json::from_str(&first).unwrap();
    let session = ready["session_id"].as_str().unwrap();
    let sent = w
        .mur(&w.proj(), &["send", session, "hi"])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&sent.stderr);
    assert_eq!(sent.status.code(), Some(1), "{stderr}");
    assert!(
        sent.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&sent.stdout)
    );
    assert!(
        stderr.contains("E-RUN-010") && stderr.contains("failed: "),
        "{stderr}"
    );
    serving.kill().await.unwrap();
}

/// A formation whose member would refuse at start (an unset `api_key_env`) does not
/// launch: the launcher's own check refuses before any member starts, with the
/// member's reason (E-AGT-001), not E-RUN-045 after it started.
#[tokio::test(flavor = "multi_thread")]
async fn a_formation_refuses_its_launch_when_a_member_would_refuse_at_start() {
    let w = World::new();
    let helper = http_agent(
        "http://127.0.0.1:9/v1",
        "  api_key_env: MUR_TEST_MODELS_UNSET\n",
    );
    let team = w.team("agent:\n  transport: builtin\n", &helper).await;
    let out = w
        .mur(&team, &["run", "--roster", "--task", "Say hello."])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.contains("E-RUN-045") && stderr.contains("member `helper`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("E-AGT-001") && stderr.contains("MUR_TEST_MODELS_UNSET"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).starts_with("completed"));
}

/// A formation on the http transport, end to end: lead's model calls helper through
/// call-member, both members' models are the local server, no request body holds a
/// formation token, and each session_end sums its usage.
#[tokio::test(flavor = "multi_thread")]
async fn a_formation_on_http_runs_and_sends_no_token_to_the_model() {
    let call = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "call-member",
            "arguments": json!({"member": "helper", "task": "Say hello."}).to_string()}}]}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}});
    // Lead's first turn calls helper; every later request (helper's turn, lead's
    // turns after) gets an answer.
    let s = Server::start(vec![ok(call), ok(message("hello from the model"))], None).await;
    let w = World::new();
    let agent = http_agent(&s.base, "  temperature: 0\n");
    let team = w.team(&agent, &agent).await;
    let out = w
        .mur(&team, &["run", "--roster", "--task", "Say hello."])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello from the model"));
    let bodies = s.bodies();
    assert!(bodies.len() >= 3, "{bodies:?}");
    assert!(bodies.iter().all(|b| b["temperature"] == 0));
    let traces = w.traces();
    let lead = traces
        .iter()
        .find(|t| t[0]["formation_member"] == "lead")
        .expect("lead's trace");
    assert!(lead.iter().any(|r| r["type"] == "member_answer"));
    let end = lead.last().unwrap();
    assert_eq!(end["type"], "session_end");
    let sum: u64 = lead
        .iter()
        .filter(|r| r["type"] == "model_request")
        .filter_map(|r| r["usage"]["total_tokens"].as_u64())
        .sum();
    assert!(sum >= 25 + 14, "{sum}");
    assert_eq!(end["usage"]["total_tokens"], sum);
}

/// An SSE response's events (`data:` lines as JSON), read until `done` says so.
async fn read_sse(
    resp: &mut reqwest::Response,
    events: &mut Vec<Value>,
    buf: &mut String,
    done: impl Fn(&[Value]) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(events) {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, resp.chunk())
            .await
            .unwrap_or_else(|_| panic!("the awaited events within 30 s: {events:?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the stream ended: {events:?}"));
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            for line in event.lines() {
                if let Some(data) = line.strip_prefix("data:") {
                    events.push(serde_json::from_str(data.trim()).unwrap());
                }
            }
        }
    }
}

fn partial_text(events: &[Value], at: &str) -> String {
    events
        .iter()
        .filter_map(|e| e.pointer(at))
        .filter(|u| u["artifact"]["name"] == "partial output")
        .map(|u| u["artifact"]["parts"][0]["text"].as_str().unwrap_or(""))
        .collect()
}

/// With `stream: true`, the model's text shows through SubscribeToTask and
/// murmur.WatchSession as TaskArtifactUpdateEvents while the model still streams.
#[tokio::test(flavor = "multi_thread")]
async fn streamed_text_is_seen_through_subscribe_to_task_and_watch_session_as_it_comes() {
    let d = |text: &str| json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let gate = Arc::new(tokio::sync::Notify::new());
    let s = Server::start(
        vec![Act::Gated(
            vec![d("Hel"), d("lo ")],
            gate.clone(),
            vec![d("world")],
        )],
        None,
    )
    .await;
    let w = World::new();
    w.capsule("streamer", &http_agent(&s.base, "  stream: true\n"))
        .await;
    let mut child = w
        .mur(
            &w.proj(),
            &[
                "run",
                "--capsule",
                "local/streamer",
                "--capsule-version",
                "1.0.0",
                "--json",
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(30),
        tokio::io::AsyncBufReadExt::read_line(&mut stdout, &mut line),
    )
    .await
    .expect("a readiness line within 30 s")
    .unwrap();
    let ready: Value = serde_json::from_str(&line).unwrap();
    let (id, door) = (
        ready["session_id"].as_str().unwrap(),
        ready["door"].as_str().unwrap(),
    );
    let token =
        std::fs::read_to_string(w.home().join(format!(".murmur/running/{id}.token"))).unwrap();
    let token = token.trim();
    let client = mur::door::client().build().unwrap();
    let call = |method: &str, params: Value| {
        client
            .post(format!("{door}/"))
            .bearer_auth(token)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
    };
    let mut watch = call("murmur.WatchSession", json!({})).await.unwrap();
    let sent: Value = call(
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "greet"}]},
               "configuration": {"returnImmediately": true}}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let task_id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let mut sub = call("SubscribeToTask", json!({"id": task_id}))
        .await
        .unwrap();
    let (mut events, mut buf) = (Vec::new(), String::new());
    // "Hel" shows while the model is held mid-answer.
    read_sse(&mut sub, &mut events, &mut buf, |e| {
        partial_text(e, "/result/artifactUpdate") == "Hel"
    })
    .await;
    assert_eq!(events[0]["result"]["task"]["id"], task_id.as_str());
    gate.notify_one();
    read_sse(&mut sub, &mut events, &mut buf, |e| {
        e.iter().any(|e| {
            e.pointer("/result/statusUpdate/status/state") == Some(&json!("TASK_STATE_COMPLETED"))
        })
    })
    .await;
    assert_eq!(
        partial_text(&events, "/result/artifactUpdate"),
        "Hello world"
    );
    let updates: Vec<&Value> = events
        .iter()
        .filter_map(|e| e.pointer("/result/artifactUpdate"))
        .collect();
    assert_eq!(updates[0]["artifact"]["artifactId"], "partial-1");
    assert!(updates[0].get("append").is_none() && updates[1]["append"] == true);
    assert_eq!(updates.last().unwrap()["lastChunk"], true);
    let (mut watched, mut wbuf) = (Vec::new(), String::new());
    // The partial text, then the turn's model_request record, in that order.
    read_sse(&mut watch, &mut watched, &mut wbuf, |e| {
        e.iter().any(|e| e["result"]["type"] == "model_request")
    })
    .await;
    assert_eq!(
        partial_text(&watched, "/result/artifactUpdate"),
        "Hello world"
    );
    call("murmur.StopSession", json!({})).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the session ends within 30 s")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    s.bodies();
}

/// `SSL_CERT_FILE` adds its CA to the public roots, in a real session; without it the
/// same server's certificate is refused, and a file that does not load is E-AGT-003.
#[tokio::test(flavor = "multi_thread")]
async fn ssl_cert_file_trusts_a_private_ca_in_a_real_session() {
    let ours = ca("our CA");
    let s = Server::start(
        vec![ok(message("trusted"))],
        Some(server_tls(&ours, &["127.0.0.1"])),
    )
    .await;
    let w = World::new();
    let pem = write_pem(w.dir.path(), &ours.pem);
    w.capsule("tls", &http_agent(&s.base, "  max_retries: 0\n"))
        .await;

    let (code, stdout, stderr) = w.run_task("tls", &[("SSL_CERT_FILE", &pem)]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("trusted"), "{stdout}");

    let (code, stdout, stderr) = w.run_task("tls", &[]).await;
    assert_ne!(code, Some(0), "{stdout}");
    assert!(
        format!("{stdout}{stderr}").contains("certificate error"),
        "{stdout}{stderr}"
    );

    let missing = w.dir.path().join("nope.pem");
    let (code, stdout, stderr) = w.run_task("tls", &[("SSL_CERT_FILE", &missing)]).await;
    assert_eq!(code, Some(1));
    assert!(
        stdout.is_empty() && stderr.contains("E-AGT-003"),
        "{stderr}"
    );
    assert_eq!(s.bodies().len(), 1);
}

/// The key goes to the server as a bearer token and into no trace record, even when
/// the model repeats it.
#[tokio::test(flavor = "multi_thread")]
async fn the_key_is_sent_as_a_bearer_token_and_never_traced() {
    let key = "sk-test-0123456789abcdef";
    let s = Server::start(vec![ok(message(&format!("your key is {key}")))], None).await;
    let w = World::new();
    w.capsule(
        "keyed",
        &http_agent(&s.base, "  api_key_env: MUR_TEST_MODELS_KEY\n"),
    )
    .await;
    let capsule_args = [
        "run",
        "--capsule",
        "local/keyed",
        "--capsule-version",
        "1.0.0",
        "--task",
        "hi",
    ];
    let out = w
        .mur(&w.proj(), &capsule_args)
        .env("MUR_TEST_MODELS_KEY", key)
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(*s.auth.lock().unwrap(), [Some(format!("Bearer {key}"))]);
    let traces = w.traces();
    assert_eq!(traces.len(), 1);
    let text = serde_json::to_string(&traces[0]).unwrap();
    assert!(!text.contains(key), "the key is in the trace");
    assert!(traces[0].iter().any(|r| r["type"] == "model_request"));
}
