use crate::a2a::time::now;
use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use super::*;

/// One event of every type, every optional field filled.
fn every_event() -> Vec<Event> {
    vec![
        Event::SessionStart {
            session_id: "ses_0199c4e2f1b7712a9d3e4f5061728394".into(),
            capsule: CapsuleRef {
                name: "local/coder".into(),
                version: "1.2.0".into(),
                sha256: Some("ab".repeat(32)),
            },
            mur_version: "0.1.0".into(),
            pid: 4242,
            workdir: "/home/u/proj".into(),
            records_dir: "/home/u/.murmur/records/home/u/proj/ses_1".into(),
            formation_id: Some("frm_0199c4e2f1b7712a9d3e4f5061728394".into()),
            formation_member: Some("coder".into()),
            formation_callees: Some(vec!["reviewer".into()]),
            unconfined: Some("--unconfined".into()),
        },
        Event::A2aTaskReceived {
            task_id: "t1".into(),
            context_id: Some("c1".into()),
            credential: "member:planner".into(),
            text: Some("write the parser".into()),
            trust: Some("trusted".into()),
            trace_id: context::TraceId::parse("0af7651916cd43dd8448eb211c80319c"),
            span_id: context::SpanId::parse("b7ad6b7169203331"),
            parent_span_id: context::SpanId::parse("00f067aa0ba902b7"),
            link: None,
        },
        Event::A2aTaskRefused {
            credential: "member:planner".into(),
            reason: "busy".into(),
            holds: 1,
        },
        Event::TaskState {
            task_id: "t1".into(),
            from: Some(RecordedState::Working),
            to: RecordedState::InputRequired,
            reason: Some("which file?".into()),
        },
        Event::InferenceTurn {
            task_id: "t1".into(),
            turn: 1,
            transport: "builtin".into(),
            reply: ReplyKind::ToolCalls,
            tool_calls: vec!["call-member".into()],
            text: Some("asking".into()),
        },
        Event::ToolCall {
            task_id: "t1".into(),
            turn: 1,
            call_id: "call_1".into(),
            tool: "call-member".into(),
            arguments: json!({"member": "reviewer", "task": "review"}),
        },
        Event::ToolResult {
            task_id: "t1".into(),
            call_id: "call_1".into(),
            tool: "call-member".into(),
            is_error: false,
            output: "looks good".into(),
            duration_ms: 12,
        },
        Event::MemberCall {
            task_id: "t1".into(),
            call_id: "call_1".into(),
            member: "reviewer".into(),
            member_task_id: Some("t9".into()),
            text: "review".into(),
            peer_url: Some("http://reviewer.formation.invalid".into()),
            span_id: context::SpanId::parse("53995c3f42cd8ad8"),
        },
        Event::MemberOffer {
            task_id: "t1".into(),
            call_id: "call_1".into(),
            member: "reviewer".into(),
            offer: 1,
            retry_in_ms: Some(250),
        },
        Event::MemberAnswer {
            task_id: "t1".into(),
            call_id: "call_1".into(),
            member: "reviewer".into(),
            member_task_id: Some("t9".into()),
            state: RecordedState::Completed,
            text: "looks good".into(),
        },
        Event::FormationEnded {
            formation_id: "frm_0199c4e2f1b7712a9d3e4f5061728394".into(),
        },
        Event::ModelRequest {
            task_id: "t1".into(),
            attempt: 2,
            result: AttemptResult::Answered,
            status: Some(200),
            error: Some("429 Too Many Requests before".into()),
            elapsed_ms: 12,
            retry_in_ms: Some(500),
            usage: Some(Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
                total_tokens: 15,
            }),
        },
        Event::SessionEnd {
            exit_status: ExitStatus::Canceled,
            exit_code: 1,
            error_code: Some("E-RUN-040".into()),
            usage: Some(Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
                total_tokens: 15,
            }),
            otlp_dropped_spans: None,
        },
        Event::ProxyDecision {
            method: "CONNECT".into(),
            host: "evil.example".into(),
            port: 443,
            allowed: false,
            reason: "evil.example:443 is not in capabilities.network.allow (empty)".into(),
        },
    ]
}

#[test]
fn session_end_sums_the_usage_of_every_model_request() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TraceWriter::create(&dir.path().join(FILE_NAME)).unwrap();
    let end = || Event::SessionEnd {
        exit_status: ExitStatus::Ok,
        exit_code: 0,
        error_code: None,
        usage: None,
        otlp_dropped_spans: None,
    };
    let Event::SessionEnd { usage, .. } = writer.write(end()).unwrap().event else {
        unreachable!()
    };
    assert_eq!(usage, None, "no model request, no usage");
    for (p, c) in [(10, 2), (7, 1)] {
        let usage = Some(Usage {
            prompt_tokens: p,
            completion_tokens: c,
            total_tokens: p + c,
        });
        writer
            .write(Event::ModelRequest {
                task_id: "t1".into(),
                attempt: 1,
                result: AttemptResult::Answered,
                status: Some(200),
                error: None,
                elapsed_ms: 1,
                retry_in_ms: None,
                usage,
            })
            .unwrap();
    }
    let Event::SessionEnd { usage, .. } = writer.write(end()).unwrap().event else {
        unreachable!()
    };
    assert_eq!(
        usage,
        Some(Usage {
            prompt_tokens: 17,
            completion_tokens: 3,
            total_tokens: 20
        })
    );
}

#[test]
fn every_record_type_round_trips_through_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let writer = TraceWriter::create(&path).unwrap();
    let events = every_event();
    for e in &events {
        writer.write(e.clone()).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), events.len());
    for (line, e) in text.lines().zip(&events) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["type"], e.kind(), "{line}");
        assert!(v["ts"].is_string() && v["seq"].is_u64(), "{line}");
        assert!(line.starts_with(r#"{"ts":""#), "ts comes first: {line}");
    }
    let trace = read(&path).unwrap();
    assert!(!trace.partial_tail);
    let back: Vec<Event> = trace.records.iter().map(|r| r.event.clone()).collect();
    assert_eq!(back, events);
    let seqs: Vec<u64> = trace.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
}

#[test]
fn field_names_are_the_documented_ones() {
    let v = serde_json::to_value(Event::SessionEnd {
        exit_status: ExitStatus::FormationEnded,
        exit_code: 0,
        error_code: None,
        usage: None,
        otlp_dropped_spans: None,
    })
    .unwrap();
    assert_eq!(
        v,
        json!({"type": "session_end", "exit_status": "formation_ended", "exit_code": 0})
    );
    let v = serde_json::to_value(Event::SessionStart {
        session_id: "ses_x".into(),
        capsule: CapsuleRef {
            name: "hello".into(),
            version: "0.1.0".into(),
            sha256: None,
        },
        mur_version: "0.1.0".into(),
        pid: 1,
        workdir: "/w".into(),
        records_dir: "/r".into(),
        formation_id: None,
        formation_member: None,
        formation_callees: None,
        unconfined: None,
    })
    .unwrap();
    // Outside a formation no formation key appears at all.
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "capsule",
            "mur_version",
            "pid",
            "records_dir",
            "session_id",
            "type",
            "workdir"
        ]
    );
    let v = serde_json::to_value(Event::TaskState {
        task_id: "t".into(),
        from: None,
        to: RecordedState::InputRequired,
        reason: None,
    })
    .unwrap();
    assert_eq!(v["to"], "input_required");
    assert!(v.get("from").is_none());
}

#[test]
fn timestamps_are_rfc3339_utc_with_milliseconds() {
    let ts = now();
    // 2026-12-02T14:40:54.123Z
    assert_eq!(ts.len(), 24, "{ts}");
    assert!(ts.ends_with('Z') && ts.as_bytes()[19] == b'.', "{ts}");
    assert!(humantime::parse_rfc3339(&ts).is_ok(), "{ts}");
}

#[test]
fn trace_file_is_owner_only_and_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    TraceWriter::create(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let err = TraceWriter::create(&path).unwrap_err();
    assert_eq!(err.code, catalogue::E_REC_001);
}

#[test]
fn a_formation_token_anywhere_in_a_record_is_refused_and_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let writer = TraceWriter::create(&path).unwrap();
    let token = "mft1.eyJmb3JtYXRpb24iOiJmcm1fMSJ9.c2lnbmF0dXJl";
    let leaks = [
        Event::ToolResult {
            task_id: "t".into(),
            call_id: "c".into(),
            tool: "shell".into(),
            is_error: false,
            output: token.into(),
            duration_ms: 0,
        },
        Event::ToolCall {
            task_id: "t".into(),
            turn: 1,
            call_id: "c".into(),
            tool: "http".into(),
            arguments: json!({"headers": [{"Authorization": format!("Bearer {token}")}]}),
        },
        Event::ToolCall {
            task_id: "t".into(),
            turn: 1,
            call_id: "c".into(),
            tool: "http".into(),
            arguments: json!({ token: 1 }),
        },
    ];
    for e in leaks {
        let err = writer.write(e).unwrap_err();
        assert_eq!(err.code, catalogue::E_REC_002);
        assert!(!err.message.contains(token), "{}", err.message);
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    // Refused records take no sequence number.
    let r = writer
        .write(Event::FormationEnded {
            formation_id: "frm_1".into(),
        })
        .unwrap();
    assert_eq!(r.seq, 1);
}

#[test]
fn the_prefix_alone_in_prose_is_not_a_token() {
    assert!(!holds_token(
        "formation tokens start with mft1. and a payload"
    ));
    assert!(holds_token("mft1."));
    assert!(holds_token("mft1. anything"));
    assert!(holds_token("mft1.abc"));
    assert!(holds_token("x mft1.-a"));
}

#[test]
fn forbidden_session_secrets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TraceWriter::create(&dir.path().join(FILE_NAME)).unwrap();
    let operator = "0123456789abcdef0123456789abcdef";
    writer.forbid(operator);
    writer.forbid("short"); // ignored: would refuse ordinary words
    let err = writer
        .write(Event::A2aTaskReceived {
            task_id: "t".into(),
            context_id: None,
            credential: "operator".into(),
            text: Some(format!("my token is {operator}, keep it short")),
            trust: None,
            trace_id: None,
            span_id: None,
            parent_span_id: None,
            link: None,
        })
        .unwrap_err();
    assert_eq!(err.code, catalogue::E_REC_002);
    writer
        .write(Event::A2aTaskReceived {
            task_id: "t".into(),
            context_id: None,
            credential: "operator".into(),
            text: Some("keep it short".into()),
            trust: None,
            trace_id: None,
            span_id: None,
            parent_span_id: None,
            link: None,
        })
        .unwrap();
}

/// The leak check scans the serialized line first: a secret JSON escapes (a quote, a
/// backslash, a control character) must be found in its escaped form too.
#[test]
fn a_secret_that_json_escapes_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TraceWriter::create(&dir.path().join(FILE_NAME)).unwrap();
    let secret = "pa\"ss\\word\t0123";
    writer.forbid(secret);
    let err = writer
        .write(Event::A2aTaskReceived {
            task_id: "t".into(),
            context_id: None,
            credential: "operator".into(),
            text: Some(format!("here: {secret}.")),
            trust: None,
            trace_id: None,
            span_id: None,
            parent_span_id: None,
            link: None,
        })
        .unwrap_err();
    assert_eq!(err.code, catalogue::E_REC_002);
    let written = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap_or_default();
    assert!(!written.contains("word"), "{written}");
}

#[test]
fn a_cut_last_line_is_dropped_and_a_broken_middle_line_is_an_error() {
    let good = r#"{"ts":"2026-12-02T14:40:54.123Z","seq":1,"type":"formation_ended","formation_id":"frm_1"}"#;
    let cut = r#"{"ts":"2026-12-02T14:40:54.124Z","seq":2,"type":"session_e"#;
    let trace = parse(&format!("{good}\n{cut}"), Path::new("t.jsonl")).unwrap();
    assert_eq!(trace.records.len(), 1);
    assert!(trace.partial_tail);

    let trace = parse(&format!("{good}\n{good}\n"), Path::new("t.jsonl")).unwrap();
    assert_eq!(trace.records.len(), 2);
    assert!(!trace.partial_tail);

    let err = parse(&format!("{good}\n{cut}\n{good}\n"), Path::new("t.jsonl")).unwrap_err();
    assert_eq!(err.code, catalogue::E_REC_003);
    assert_eq!(err.location.as_ref().unwrap().line, 2);
}

#[test]
fn append_goes_on_numbering_after_the_last_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let w = TraceWriter::create(&path).unwrap();
    for _ in 0..3 {
        w.write(Event::FormationEnded {
            formation_id: "f".into(),
        })
        .unwrap();
    }
    drop(w);
    let w = TraceWriter::append(&path).unwrap();
    let r = w
        .write(Event::SessionEnd {
            exit_status: ExitStatus::Ok,
            exit_code: 0,
            error_code: None,
            usage: None,
            otlp_dropped_spans: None,
        })
        .unwrap();
    assert_eq!(r.seq, 4);
    assert_eq!(read(&path).unwrap().records.len(), 4);
}

#[test]
fn concurrent_writers_never_interleave_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let w = std::sync::Arc::new(TraceWriter::create(&path).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let w = w.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    w.write(Event::ToolResult {
                        task_id: format!("t{t}").into(),
                        call_id: format!("c{i}"),
                        tool: "x".into(),
                        is_error: false,
                        output: "y".repeat(1000),
                        duration_ms: 1,
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let trace = read(&path).unwrap();
    assert_eq!(trace.records.len(), 200);
    let seqs: Vec<u64> = trace.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=200).collect::<Vec<_>>());
}

/// Every string leaf of `v`, by its JSON pointer.
fn string_pointers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(_) => out.push(at),
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                string_pointers(item, format!("{at}/{i}"), out);
            }
        }
        serde_json::Value::Object(map) => {
            for (k, item) in map {
                string_pointers(item, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn a_token_in_any_string_field_of_any_record_type_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let writer = TraceWriter::create(&path).unwrap();
    let token = "mft1.eyJmIjoxfQ.c2ln";
    let mut tried = 0;
    for event in every_event() {
        let value = serde_json::to_value(&event).unwrap();
        let mut pointers = Vec::new();
        string_pointers(&value, String::new(), &mut pointers);
        for pointer in pointers.iter().filter(|p| *p != "/type") {
            let mut leaked = value.clone();
            let field = leaked.pointer_mut(pointer).unwrap();
            // Enum fields (states) only take their words; a token cannot reach them.
            *field = serde_json::Value::String(format!("x {token}"));
            let Ok(leaked) = serde_json::from_value::<Event>(leaked) else {
                continue;
            };
            let err = writer.write(leaked).unwrap_err();
            assert_eq!(err.code, catalogue::E_REC_002, "{pointer}");
            tried += 1;
        }
    }
    assert!(tried >= 40, "only {tried} fields tried");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
}

#[test]
fn every_record_renders_on_one_line() {
    let lines: Vec<String> = every_event()
        .into_iter()
        .enumerate()
        .map(|(i, event)| {
            Record {
                ts: "2026-12-02T14:40:54.123Z".into(),
                seq: i as u64 + 1,
                event,
            }
            .to_string()
        })
        .collect();
    for l in &lines {
        assert!(!l.contains('\n') && l.starts_with("14:40:54.123 #"), "{l}");
    }
    assert_eq!(
        lines[0],
        "14:40:54.123 #1    session_start     ses_0199c4e2f1b7712a9d3e4f5061728394 local/coder 1.2.0 pid 4242 in frm_0199c4e2f1b7712a9d3e4f5061728394 as coder"
    );
    assert_eq!(
        lines[1],
        "14:40:54.123 #2    a2a_task_received t1 from member:planner (trusted): write the parser"
    );
    assert_eq!(
        lines[2],
        "14:40:54.123 #3    a2a_task_refused  member:planner refused: busy (holds 1)"
    );
    assert_eq!(
        lines[3],
        "14:40:54.123 #4    task_state        t1 working -> input_required: which file?"
    );
    assert_eq!(
        lines[11],
        "14:40:54.123 #12   model_request     t1 try 2 answered 200 in 12 ms, again in 500 ms, 15 tokens: 429 Too Many Requests before"
    );
    assert_eq!(
        lines[12],
        "14:40:54.123 #13   session_end       canceled exit 1 E-RUN-040, 15 tokens"
    );
    assert_eq!(
        lines[8],
        "14:40:54.123 #9    member_offer      t1 -> reviewer busy (offer 1), again in 250 ms"
    );
}

/// docs/trace.md has a section for every record type, and each section names every
/// field that type can write, so no record or field goes undocumented.
#[test]
fn docs_trace_md_documents_every_record_and_field() {
    let doc = include_str!("../../docs/trace.md");
    for e in every_event() {
        let kind = e.kind();
        let heading = format!("### `{kind}`");
        let start = doc
            .find(&heading)
            .unwrap_or_else(|| panic!("docs/trace.md has no section {heading}"));
        let rest = &doc[start + heading.len()..];
        let section = &rest[..rest
            .find("\n## ")
            .or(rest.find("\n### "))
            .unwrap_or(rest.len())];
        let v = serde_json::to_value(&e).unwrap();
        for key in v.as_object().unwrap().keys().filter(|k| *k != "type") {
            assert!(
                section.contains(&format!("| `{key}` |")),
                "docs/trace.md, {heading}: no row for the field `{key}`"
            );
        }
    }
}
