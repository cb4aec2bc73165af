//! The transport alone against the servers above: answers, retries, stalls, TLS.

use super::*;

// ---- answers -------------------------------------------------------------------

#[tokio::test]
async fn a_plain_answer_with_the_sampling_settings_sent_as_written() {
    let s = Server::start(vec![ok(message("hello"))], None).await;
    let mut c = config(&s);
    c.sampling.temperature = Some(serde_json::from_str("0.25").unwrap());
    c.sampling.top_p = Some(serde_json::from_str("0.9").unwrap());
    c.sampling.max_tokens = Some(64);
    c.sampling.seed = Some(-3);
    c.sampling.stop = vec!["END".into()];
    let mut run = Run::new(c);
    assert_eq!(completed(&run.send("say hello").await), "hello");
    let body = &s.bodies()[0];
    assert_eq!(body["temperature"].to_string(), "0.25");
    assert_eq!(body["top_p"].to_string(), "0.9");
    assert_eq!(
        (&body["max_tokens"], &body["seed"], &body["stop"]),
        (&json!(64), &json!(-3), &json!(["END"]))
    );
    assert!(body.get("stream").is_none());
    let tries = run.tries();
    assert_eq!(results(&tries), ["answered"]);
    assert_eq!(tries[0]["status"], 200);
    assert_eq!(tries[0]["usage"]["total_tokens"], 14);
}

#[tokio::test]
async fn tool_calls_then_an_answer() {
    let s = Server::start(vec![ok(echo_call("c1", "hi")), ok(message("done"))], None).await;
    let mut run = Run::new(config(&s));
    assert_eq!(completed(&run.send("echo hi").await), "done");
    let bodies = s.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["model"], "m");
    assert_eq!(
        bodies[0]["messages"][0],
        json!({"role": "system", "content": "[Capsule]\nname: x"})
    );
    assert_eq!(bodies[0]["tools"][0]["function"]["name"], "echo");
    // The model's call goes back as it came, then the tool's answer.
    let call = &bodies[1]["messages"][2]["tool_calls"][0];
    assert_eq!(call["id"], "c1");
    assert_eq!(call["function"]["arguments"], "{\"say\":\"hi\"}");
    assert_eq!(
        bodies[1]["messages"][3],
        json!({"role": "tool", "tool_call_id": "c1", "content": "echo \"hi\""})
    );
}

#[tokio::test]
async fn a_stream_with_tool_call_deltas_is_put_back_together() {
    let d = |delta: Value| json!({"choices": [{"index": 0, "delta": delta}]});
    let calls = vec![
        d(json!({"role": "assistant", "content": ""})),
        d(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                 "function": {"name": "echo", "arguments": ""}}]}),
        ),
        d(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"sa"}}]})),
        d(json!({"tool_calls": [{"index": 0, "function": {"arguments": "y\":\"hi\"}"}}]})),
    ];
    let answer = vec![
        d(json!({"content": "all "})),
        d(json!({"content": "done"})),
        json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}),
    ];
    let s = Server::start(vec![Act::Stream(calls), Act::Stream(answer)], None).await;
    let mut c = config(&s);
    c.stream = true;
    let mut run = Run::new(c);
    assert_eq!(completed(&run.send("echo hi").await), "all done");
    let bodies = s.bodies();
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(
        bodies[1]["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"say\":\"hi\"}"
    );
    assert_eq!(bodies[1]["messages"][3]["content"], "echo \"hi\"");
    assert_eq!(run.tries()[1]["usage"]["total_tokens"], 7);
}

#[tokio::test]
async fn malformed_json_fails_the_task_on_the_first_try() {
    let s = Server::start(
        vec![Act::Answer(200, vec![], "{\"choices\": [".into())],
        None,
    )
    .await;
    let mut run = Run::new(config(&s));
    let reason = failed(&run.send("x").await).to_string();
    assert!(
        reason.contains("answered with something not JSON"),
        "{reason}"
    );
    assert_eq!(results(&run.tries()), ["failed"]);
    assert_eq!(s.bodies().len(), 1);
}

// ---- retries ---------------------------------------------------------------------

#[tokio::test]
async fn a_429_waits_as_retry_after_says_in_seconds_and_as_a_date() {
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(1));
    let s = Server::start(
        vec![
            Act::Answer(429, vec![("Retry-After", "1".into())], "{}".into()),
            Act::Answer(429, vec![("Retry-After", date)], "{}".into()),
            ok(message("at last")),
        ],
        None,
    )
    .await;
    let mut run = Run::new(config(&s));
    let started = Instant::now();
    assert_eq!(completed(&run.send("x").await), "at last");
    // The first wait is the server's whole second, unscaled.
    assert!(started.elapsed() >= Duration::from_secs(1));
    let tries = run.tries();
    assert_eq!(results(&tries), ["retrying", "retrying", "answered"]);
    assert_eq!(tries[0]["status"], 429);
    assert_eq!(tries[0]["retry_in_ms"], 1000);
    assert!(
        tries[1]["retry_in_ms"].as_u64().unwrap() <= 1000,
        "{}",
        tries[1]
    );
    assert_eq!(tries[2]["attempt"], 3);
}

#[tokio::test]
async fn a_500_then_success() {
    let s = Server::start(
        vec![
            Act::Answer(500, vec![], "{\"error\":\"boom\"}".into()),
            ok(message("fine")),
        ],
        None,
    )
    .await;
    let mut run = Run::new(config(&s));
    assert_eq!(completed(&run.send("x").await), "fine");
    let tries = run.tries();
    assert_eq!(results(&tries), ["retrying", "answered"]);
    assert!(
        tries[0]["error"].as_str().unwrap().contains("500"),
        "{}",
        tries[0]
    );
    // The first backoff: 0.5 s with jitter, no less than half of it.
    let wait = tries[0]["retry_in_ms"].as_u64().unwrap();
    assert!((250..=500).contains(&wait), "{wait}");
}

#[tokio::test]
async fn retries_stop_at_max_retries_and_a_404_is_not_retried() {
    // Retry-After: 0 keeps the test quick; the backoff is the 500's test's.
    let s = Server::start(
        vec![Act::Answer(
            503,
            vec![("Retry-After", "0".into())],
            "{}".into(),
        )],
        None,
    )
    .await;
    let mut c = config(&s);
    c.max_retries = 2;
    let mut run = Run::new(c);
    let reason = failed(&run.send("x").await).to_string();
    assert!(
        reason.contains("503") && reason.contains("after 3 tries"),
        "{reason}"
    );
    assert_eq!(results(&run.tries()), ["retrying", "retrying", "failed"]);

    let s = Server::start(vec![Act::Answer(404, vec![], "no such model".into())], None).await;
    let mut run = Run::new(config(&s));
    let reason = failed(&run.send("x").await).to_string();
    assert!(
        reason.contains("404") && reason.contains("no such model"),
        "{reason}"
    );
    assert_eq!(results(&run.tries()), ["failed"]);
}

#[tokio::test]
async fn a_dropped_connection_is_tried_again() {
    let s = Server::start(vec![Act::Drop, ok(message("back"))], None).await;
    let mut run = Run::new(config(&s));
    assert_eq!(completed(&run.send("x").await), "back");
    let tries = run.tries();
    assert_eq!(results(&tries), ["retrying", "answered"]);
    let error = tries[0]["error"].as_str().unwrap();
    assert!(error.contains("the connection dropped"), "{error}");
}

#[tokio::test]
async fn a_stall_past_the_timeout_fails_the_turn_naming_the_timeout() {
    let s = Server::start(vec![Act::Stall], None).await;
    let mut c = config(&s);
    c.timeout = Duration::from_millis(300);
    let mut run = Run::new(c);
    let reason = failed(&run.send("x").await).to_string();
    assert!(
        reason.contains("agent.timeout") && reason.contains("300ms"),
        "{reason}"
    );
    let tries = run.tries();
    assert_eq!(results(&tries), ["failed"]);
    assert!(tries[0]["elapsed_ms"].as_u64().unwrap() >= 300);
}

#[tokio::test]
async fn a_stream_that_stalls_midway_fails_naming_the_timeout() {
    let d = json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]});
    let never = Arc::new(tokio::sync::Notify::new());
    let s = Server::start(vec![Act::Gated(vec![d], never, vec![])], None).await;
    let mut c = config(&s);
    c.stream = true;
    c.timeout = Duration::from_millis(300);
    let mut run = Run::new(c);
    let reason = failed(&run.send("x").await).to_string();
    assert!(
        reason.contains("stopped streaming") && reason.contains("agent.timeout"),
        "{reason}"
    );
    assert_eq!(results(&run.tries()), ["failed"]);
}

#[tokio::test]
async fn cancellation_takes_effect_in_a_wait_and_in_a_request() {
    for (act, in_wait) in [
        (
            Act::Answer(429, vec![("Retry-After", "100".into())], "{}".into()),
            true,
        ),
        (Act::Stall, false),
    ] {
        let s = Server::start(vec![act], None).await;
        let mut run = Run::new(config(&s));
        let path = run.dir.path().join("trace.jsonl");
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        let bodies = s.bodies.clone();
        let watcher = tokio::spawn(async move {
            // Cancel once the retry's wait began, or the request is in.
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let ready = if in_wait {
                    results(&tries(&path)) == ["retrying"]
                } else {
                    !bodies.lock().unwrap().is_empty()
                };
                if ready {
                    break;
                }
                assert!(Instant::now() < deadline, "the request never got that far");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            canceller.cancel();
            Instant::now()
        });
        let outcome = run.agent.send("x", &cancel).await;
        let cancelled_at = watcher.await.unwrap();
        assert_eq!(outcome, Outcome::Canceled);
        // Far less than the 100 s the server asked for, or the 20 s timeout.
        assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    }
}

#[tokio::test]
async fn a_conversation_holding_a_formation_token_is_never_sent() {
    let s = Server::start(vec![ok(message("x"))], None).await;
    let mut run = Run::new(config(&s));
    let reason = failed(&run.send("use mft1.abcdefgh").await).to_string();
    assert!(reason.contains("formation token"), "{reason}");
    assert!(s.bodies().is_empty());
}

// ---- TLS -----------------------------------------------------------------------

#[tokio::test]
async fn tls_with_a_private_ca_in_ca_file() {
    let ours = ca("our CA");
    let s = Server::start(
        vec![ok(message("secure"))],
        Some(server_tls(&ours, &["127.0.0.1"])),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&s);
    c.ca_file = Some(write_pem(dir.path(), &ours.pem));
    let mut run = Run::new(c);
    assert_eq!(completed(&run.send("x").await), "secure");
    assert_eq!(s.bodies().len(), 1);
}

#[tokio::test]
async fn a_wrong_certificate_is_named_a_certificate_error() {
    let ours = ca("our CA");
    let theirs = ca("another CA");
    let dir = tempfile::tempdir().unwrap();
    let pem = write_pem(dir.path(), &ours.pem);
    for (tls, what) in [
        (server_tls(&theirs, &["127.0.0.1"]), "another CA"),
        (server_tls(&ours, &["example.com"]), "the wrong name"),
    ] {
        let s = Server::start(vec![ok(message("x"))], Some(tls)).await;
        let mut c = config(&s);
        c.ca_file = Some(pem.clone());
        let mut run = Run::new(c);
        let reason = failed(&run.send("x").await).to_string();
        assert!(reason.contains("certificate error"), "{what}: {reason}");
        assert!(!reason.contains("cannot connect"), "{what}: {reason}");
        assert_eq!(results(&run.tries()), ["failed"], "{what}");
        assert!(s.bodies().is_empty());
    }
    // Without the CA, even the right certificate is refused; a refused connection reads
    // otherwise.
    let s = Server::start(
        vec![ok(message("x"))],
        Some(server_tls(&ours, &["127.0.0.1"])),
    )
    .await;
    let reason = failed(&Run::new(config(&s)).send("x").await).to_string();
    assert!(reason.contains("certificate error"), "{reason}");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = HttpConfig::new(&format!("https://127.0.0.1:{port}/v1"), "m");
    c.max_retries = 0;
    let reason = failed(&Run::new(c).send("x").await).to_string();
    assert!(
        reason.contains("cannot connect") && !reason.contains("certificate"),
        "{reason}"
    );
}

/// The usual `openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost` line makes
/// a CA certificate with no subjectAltName. Each way it is refused is said in words,
/// never as a Rust debug string, and the command the words give makes one that works.
#[tokio::test]
async fn a_self_signed_certificate_is_refused_in_words_with_a_command_that_works() {
    let dir = tempfile::tempdir().unwrap();
    let (usual, tls) = self_signed(true, &[]);
    let reason = |tls: Arc<rustls::ServerConfig>, ca: Option<&str>| {
        let pem = ca.map(|pem| write_pem(dir.path(), pem));
        async move {
            let s = Server::start(vec![ok(message("secure"))], Some(tls)).await;
            let mut c = config(&s);
            c.ca_file = pem;
            let o = Run::new(c).send("x").await;
            assert!(s.bodies().is_empty());
            failed(&o).to_string()
        }
    };
    let in_words = |reason: &str| {
        assert!(
            reason.contains(": certificate error: the server's TLS certificate was refused: it "),
            "{reason}"
        );
        for debug in ["Other(", "OtherError", "CaUsedAsEndEntity", "Context {"] {
            assert!(!reason.contains(debug), "{reason}");
        }
    };
    // In agent.ca_file or not: a CA certificate may not serve as the server's own.
    let ca = reason(tls.clone(), Some(&usual)).await;
    in_words(&ca);
    assert!(
        ca.contains("it is a CA certificate (basicConstraints CA:TRUE")
            && ca.contains("once cert.pem is named in agent.ca_file"),
        "{ca}"
    );
    let untrusted = reason(tls, None).await;
    assert_eq!(
        untrusted.split_once(": certificate").unwrap().1,
        ca.split_once(": certificate").unwrap().1
    );
    // A server certificate no CA mur trusts issued: name it in agent.ca_file.
    let (_, tls) = self_signed(false, &["127.0.0.1"]);
    let unknown = reason(tls, None).await;
    in_words(&unknown);
    assert!(
        unknown.contains("it was not issued by a CA mur trusts")
            && unknown.contains("the self-signed certificate itself, in agent.ca_file"),
        "{unknown}"
    );
    // Not a CA, but naming no host.
    let (pem, tls) = self_signed(false, &[]);
    let nameless = reason(tls, Some(&pem)).await;
    in_words(&nameless);
    assert!(
        nameless.contains("it names no host: it has no subjectAltName"),
        "{nameless}"
    );
    // For another host.
    let (pem, tls) = self_signed(false, &["example.com", "10.0.0.1"]);
    let other = reason(tls, Some(&pem)).await;
    in_words(&other);
    assert!(
        other.contains("it is for example.com, 10.0.0.1, not for 127.0.0.1"),
        "{other}"
    );
    // The command each names makes, option for option, a certificate that works.
    let command = ca
        .split('`')
        .find(|c| c.starts_with("openssl req -x509 -newkey"))
        .unwrap();
    for said in [&nameless, &other] {
        assert!(said.contains(command), "{said}");
    }
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/agent.md"));
    assert!(
        page.unwrap().contains(&format!("```sh\n{command}\n```")),
        "docs/agent.md shows it"
    );
    let args: Vec<&str> = command.split_whitespace().collect();
    let addext: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "-addext")
        .map(|w| w[1])
        .collect();
    assert_eq!(addext.len(), 2, "{command}");
    let names: Vec<&str> = addext[0]
        .strip_prefix("subjectAltName=")
        .unwrap()
        .split(',')
        .map(|n| n.split_once(':').unwrap().1)
        .collect();
    assert_eq!(names, ["localhost", "127.0.0.1"]);
    assert_eq!(addext[1], "basicConstraints=critical,CA:FALSE");
    assert!(args.windows(2).any(|w| w == ["-subj", "/CN=localhost"]));
    let (pem, tls) = self_signed(false, &names);
    let s = Server::start(vec![ok(message("secure"))], Some(tls)).await;
    let mut c = config(&s);
    c.ca_file = Some(write_pem(dir.path(), &pem));
    assert_eq!(completed(&Run::new(c).send("x").await), "secure");
}
