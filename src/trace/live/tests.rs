use serde_json::json;

use super::*;
use crate::trace::export::session_spans;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

fn url(flag: Option<&str>, pairs: &[(&str, &str)]) -> Option<String> {
    Target::resolve_from(flag, env(pairs))
        .unwrap()
        .map(|t| t.url)
}

#[test]
fn the_flag_wins_then_the_traces_variable_as_is_then_the_base_plus_v1_traces() {
    let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318");
    let traces = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:4318/custom");
    assert_eq!(url(None, &[]), None);
    assert_eq!(url(None, &[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]), None);
    assert_eq!(url(None, &[base]).unwrap(), "http://base:4318/v1/traces");
    assert_eq!(
        url(None, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://h/otlp/")]).unwrap(),
        "https://h/otlp/v1/traces"
    );
    assert_eq!(url(None, &[base, traces]).unwrap(), "http://t:4318/custom");
    assert_eq!(
        url(Some("http://flag:1"), &[base, traces]).unwrap(),
        "http://flag:1/v1/traces"
    );
    // A flag that names the traces URL already is not doubled.
    assert_eq!(
        url(Some("http://flag:1/v1/traces"), &[]).unwrap(),
        "http://flag:1/v1/traces"
    );
}

#[test]
fn headers_are_key_value_pairs_percent_decoded_and_bad_settings_are_e_trc_001() {
    let t = Target::resolve_from(
        None,
        env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1, x-key = s%3Dcr%20t ,"),
        ]),
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        t.headers,
        [("a".into(), "1".into()), ("x-key".into(), "s=cr t".into())]
    );
    assert!(
        !format!("{t:?}").contains("cr"),
        "Debug shows no header value"
    );
    let t = Target::resolve_from(
        None,
        env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2"),
        ]),
    )
    .unwrap()
    .unwrap();
    assert_eq!(t.headers, [("b".into(), "2".into())]);
    for bad in [
        [("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"), ("", "")],
        [("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://h"), ("", "")],
        [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "novalue"),
        ],
        [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=%zz"),
        ],
        [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a b=1"),
        ],
    ] {
        let err = Target::resolve_from(None, env(&bad)).unwrap_err();
        assert_eq!(err.code, E_TRC_001, "{bad:?}");
    }
    // The URL shown in messages drops a user and password.
    let t = Target {
        url: "http://me:pw@h:1/v1/traces".into(),
        headers: vec![],
    };
    assert_eq!(t.shown(), "http://h:1/v1/traces");
}

/// A session's records: a task with a model turn, a tool call, another turn; a second
/// task left open when the session ends.
fn records() -> Vec<Record> {
    let t = "1234567890abcdef1234567890abcdef";
    let lines = [
        json!({"type": "session_start", "session_id": "ses_0199d5a0c1a07d2f8e1b2c3d4e5f6071",
            "capsule": {"name": "local/a", "version": "1.0.0"}, "mur_version": "0.1.0", "pid": 1,
            "workdir": "/w", "records_dir": "/r"}),
        json!({"type": "a2a_task_received", "task_id": "t1", "credential": "operator",
            "trace_id": t, "span_id": "00000000000000a1", "parent_span_id": "00000000000000ff"}),
        json!({"type": "task_state", "task_id": "t1", "from": "submitted", "to": "working"}),
        json!({"type": "inference_turn", "task_id": "t1", "turn": 1, "transport": "builtin",
            "reply": "tool_calls", "tool_calls": ["echo"]}),
        json!({"type": "tool_call", "task_id": "t1", "turn": 1, "call_id": "c1", "tool": "echo",
            "arguments": {}}),
        json!({"type": "a2a_task_received", "task_id": "t2", "credential": "operator",
            "trace_id": t, "span_id": "00000000000000a2"}),
        json!({"type": "tool_result", "task_id": "t1", "call_id": "c1", "tool": "echo",
            "is_error": false, "output": "ok", "duration_ms": 3}),
        json!({"type": "inference_turn", "task_id": "t1", "turn": 2, "transport": "builtin",
            "reply": "answer", "tool_calls": []}),
        json!({"type": "task_state", "task_id": "t1", "from": "working", "to": "completed"}),
        json!({"type": "session_end", "exit_status": "deadline_reached", "exit_code": 1,
            "error_code": "E-RUN-053"}),
    ];
    lines
        .into_iter()
        .enumerate()
        .map(|(i, mut l)| {
            l["ts"] = json!(format!("2026-12-07T10:00:{:02}.000Z", i));
            l["seq"] = json!(i + 1);
            serde_json::from_value(l).unwrap()
        })
        .collect()
}

#[test]
fn record_by_record_each_span_comes_once_when_it_ends_and_as_the_export_has_it() {
    let records = records();
    let mut inc = Incremental::default();
    let mut when: Vec<(u64, String)> = Vec::new();
    let mut live: Vec<serde_json::Value> = Vec::new();
    for r in &records {
        for s in inc.take(r) {
            when.push((r.seq, s.name.clone()));
            live.push(serde_json::to_value(&s).unwrap());
        }
    }
    // The turns, the tool call and the task as they end; the open task at session_end.
    let names: Vec<(u64, &str)> = when.iter().map(|(q, n)| (*q, n.as_str())).collect();
    assert_eq!(
        names,
        [
            (4, "chat"),
            (7, "execute_tool echo"),
            (8, "chat"),
            (9, "SendMessage"),
            (10, "SendMessage")
        ]
    );
    let whole = serde_json::to_value(session_spans(&records)).unwrap();
    let mut want: Vec<serde_json::Value> =
        whole["scopeSpans"][0]["spans"].as_array().unwrap().clone();
    let by_id = |v: &serde_json::Value| v["spanId"].as_str().unwrap().to_string();
    want.sort_by_key(by_id);
    live.sort_by_key(by_id);
    assert_eq!(
        live, want,
        "the live spans are the export's, field for field"
    );
    assert_eq!(
        serde_json::to_value(inc.resource()).unwrap(),
        whole["resource"]
    );
}

#[test]
fn session_end_counts_what_a_refusing_collector_did_not_take() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = Target {
        url: format!("http://127.0.0.1:{port}/v1/traces"),
        headers: vec![],
    };
    let records = records();
    let live = Live::start(target, None, &records[..1]).unwrap();
    for r in &records[1..records.len() - 1] {
        live.take(r);
    }
    assert_eq!(live.end(records.last().unwrap()), 5);
}
