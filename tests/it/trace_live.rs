//! Live export (docs/trace.md, Live export): the three-member formation of
//! trace_export.rs launched with a collector set, against a real OTLP/HTTP receiver
//! (tests/otel/receiver.py, which parses every request with the official schema). The
//! spans that arrive are the ones `mur trace export` writes, ids and nesting included,
//! the launcher's root among them; a collector that refuses or never answers costs the task nothing, gives one
//! W-TRC-001, and `session_end` counts every span dropped.

use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{World, files_under, otel};
use crate::trace_export::{chain_project, export, formation_id};

const TASK: [&str; 4] = ["run", "--roster", "--task", "Plan a picnic."];

/// tests/otel/receiver.py on 127.0.0.1, writing what it received to `out`.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    fn start(w: &World) -> Receiver {
        let out = w.path("received.jsonl");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otel/receiver.py");
        let mut child = Command::new(otel::python())
            .arg(script)
            .arg(&out)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the receiver did not start: {line:?}"));
        Receiver { child, port, out }
    }

    /// Every request the receiver took; a body the schema refused fails the test.
    fn requests(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                assert!(
                    v.get("refused").is_none(),
                    "the schema refused a request: {v}"
                );
                v
            })
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a span is in a trace viewer: its ids, its parent, its name, kind and member.
fn key(s: &Value) -> String {
    format!(
        "{} {} parent={} {} kind={} service={}",
        s["trace_id"], s["span_id"], s["parent_span_id"], s["name"], s["kind"], s["service"]
    )
}

/// The spans `mur trace export` writes for the formation: the members' (each in one
/// member's `session_end` count), and the launcher's root.
fn exported(w: &World) -> (BTreeSet<String>, Value) {
    let frm = formation_id(&w.home);
    let seen = otel::parse(&export(w, &frm));
    let spans = seen["spans"].as_array().unwrap();
    let (roots, members): (Vec<&Value>, Vec<&Value>) =
        spans.iter().partition(|s| s["service"] == "mur launcher");
    let keys: BTreeSet<String> = members.iter().map(|s| key(s)).collect();
    assert_eq!(keys.len(), members.len(), "every span once");
    assert!(keys.len() >= 12, "{keys:#?}");
    assert_eq!(roots.len(), 1, "one root: {roots:#?}");
    (keys, roots[0].clone())
}

/// Each member's `session_end`.
fn session_ends(home: &Path) -> Vec<Value> {
    let mut ends = Vec::new();
    for file in files_under(&home.join(".murmur/records")) {
        if file.file_name().is_some_and(|n| n == "trace.jsonl") {
            let text = std::fs::read_to_string(&file).unwrap();
            let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
            assert_eq!(last["type"], "session_end", "{}", file.display());
            ends.push(last);
        }
    }
    assert_eq!(ends.len(), 3, "three members");
    ends
}

fn dropped(ends: &[Value]) -> u64 {
    ends.iter()
        .map(|e| {
            e["otlp_dropped_spans"]
                .as_u64()
                .unwrap_or_else(|| panic!("no otlp_dropped_spans: {e}"))
        })
        .sum()
}

fn warnings(stderr: &[u8]) -> usize {
    String::from_utf8_lossy(stderr).matches("W-TRC-001").count()
}

#[test]
fn a_formation_s_spans_arrive_live_as_mur_trace_export_writes_them() {
    let w = World::new();
    let project = chain_project(&w);
    let rx = Receiver::start(&w);
    // The standard variables, as a user exports them: the launcher passes them on.
    let out = crate::support::ok(
        w.mur_in(&project)
            .env(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{}/", rx.port),
            )
            .env("OTEL_EXPORTER_OTLP_HEADERS", "x-mur-test=a%20b")
            .args(TASK),
    );
    assert_eq!(
        warnings(&out.stderr),
        0,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (members, root) = exported(&w);
    let mut want = members.clone();
    want.insert(key(&root));
    // Every member has ended: its last spans were taken before its session_end.
    let ends = session_ends(&w.home);
    assert_eq!(dropped(&ends), 0, "{ends:#?}");
    let requests = rx.requests();
    let mut got: Vec<String> = Vec::new();
    for r in &requests {
        assert_eq!(
            r["headers"]["x-mur-test"], "a b",
            "OTEL_EXPORTER_OTLP_HEADERS"
        );
        got.extend(r["spans"].as_array().unwrap().iter().map(key));
    }
    let unique: BTreeSet<String> = got.iter().cloned().collect();
    assert_eq!(unique.len(), got.len(), "a span sent twice: {got:#?}");
    assert_eq!(unique, want, "live spans differ from mur trace export's");
    // The launcher's root went too: the trace's one span without a parent, named for
    // the formation, from before the entry task began to after it ended.
    let spans: Vec<&Value> = requests
        .iter()
        .flat_map(|r| r["spans"].as_array().unwrap())
        .collect();
    let frm = formation_id(&w.home);
    let live_root = spans
        .iter()
        .find(|s| s["service"] == "mur launcher")
        .expect("the launcher's root span arrived");
    assert_eq!(live_root["name"], format!("invoke_workflow {frm}"));
    assert_eq!(live_root["parent_span_id"], "", "the root has no parent");
    assert_eq!(live_root["resource"]["mur.formation.id"], frm.as_str());
    assert_eq!(
        live_root["attributes"]["gen_ai.operation.name"],
        "invoke_workflow"
    );
    assert_eq!(
        (&live_root["trace_id"], &live_root["span_id"]),
        (&root["trace_id"], &root["span_id"]),
        "the ids the entry member was given"
    );
    let entry = spans
        .iter()
        .find(|s| s["service"] == "lead" && s["kind"] == 2)
        .unwrap();
    assert_eq!(entry["parent_span_id"], live_root["span_id"], "{entry}");
    let ns = |s: &Value, f: &str| s[f].as_u64().unwrap_or_else(|| panic!("{f}: {s}"));
    assert!(
        ns(live_root, "start") <= ns(entry, "start"),
        "{live_root} {entry}"
    );
    assert!(
        ns(live_root, "end") >= ns(entry, "end"),
        "{live_root} {entry}"
    );
    // One trace, and every member's span descends from the root by its parents.
    for s in &spans {
        assert_eq!(s["trace_id"], live_root["trace_id"], "{s}");
        let mut at: &Value = s;
        for _ in 0..spans.len() {
            if at["parent_span_id"] == "" {
                break;
            }
            at = spans
                .iter()
                .find(|p| p["span_id"] == at["parent_span_id"])
                .unwrap_or_else(|| panic!("the parent of {at} did not arrive"));
        }
        assert_eq!(
            at["span_id"], live_root["span_id"],
            "{s} is not under the root"
        );
    }
    // The nesting, across members: helper's and third's tasks are children of the
    // client span of the member that called them.
    for (caller, callee) in [("lead", "helper"), ("helper", "third")] {
        let task = spans
            .iter()
            .find(|s| s["service"] == callee && s["kind"] == 2)
            .unwrap();
        let call = spans
            .iter()
            .find(|s| s["span_id"] == task["parent_span_id"])
            .unwrap_or_else(|| panic!("{callee}'s parent did not arrive"));
        assert_eq!(call["service"], caller);
        assert_eq!(call["kind"], 3, "a client span");
    }
}

#[test]
fn a_collector_that_refuses_costs_the_task_nothing_and_the_spans_are_counted() {
    let w = World::new();
    let project = chain_project(&w);
    // A port nothing listens on: every connection is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = crate::support::ok(w.mur_in(&project).args(TASK).args([
        "--otlp-endpoint".to_string(),
        format!("http://127.0.0.1:{port}"),
    ]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        warnings(&out.stderr),
        1,
        "one warning for the formation: {stderr}"
    );
    assert!(
        stderr.contains(&format!("127.0.0.1:{port}/v1/traces")),
        "{stderr}"
    );
    let ends = session_ends(&w.home);
    assert_eq!(dropped(&ends), exported(&w).0.len() as u64, "{ends:#?}");
}

#[test]
fn a_collector_that_never_answers_does_not_hold_the_formation() {
    let w = World::new();
    let project = chain_project(&w);
    // Listening, never accepting: connections complete in the backlog, requests go
    // unanswered.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut child = w
        .mur_in(&project)
        .args(TASK)
        .args([
            "--otlp-endpoint".to_string(),
            format!("http://127.0.0.1:{port}/v1/traces"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The bound: the formation's own teardown bound, far above what the task takes.
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the formation did not end within 120 s of a silent collector");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(warnings(&out.stderr), 1, "{stderr}");
    let ends = session_ends(&w.home);
    assert_eq!(dropped(&ends), exported(&w).0.len() as u64, "{ends:#?}");
    drop(silent);
}
