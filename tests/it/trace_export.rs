//! `mur trace export`: a real three-member formation (`mur new --roster`, a third
//! member behind `helper`), launched with `--task`, exported as OTLP/JSON and parsed
//! with the official schema (support::otel). The spans nest as the calls did: the
//! launcher's root, the entry task, its call-member tool call, the member call, the
//! callee's task, and so on down the chain, all in one trace.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{World, files_under, otel};

/// [`chain_project`], launched with `--task`.
fn chain(w: &World) -> PathBuf {
    let project = chain_project(w);
    let out = crate::support::ok(w.mur_in(&project).args([
        "run",
        "--roster",
        "--task",
        "Plan a picnic.",
    ]));
    assert!(out.status.success());
    project
}

/// `mur new --roster team`, plus `third`, which `helper` may call; installed and
/// approved (tests/it/trace_live.rs launches it too).
pub(crate) fn chain_project(w: &World) -> PathBuf {
    let ok = crate::support::ok;
    ok(w.mur_in(&w.root).args(["new", "--roster", "team"]));
    let project = w.root.join("team");
    let third = project.join("third");
    std::fs::create_dir_all(&third).unwrap();
    for f in ["murmur.yaml", "INSTRUCTIONS.md"] {
        let text = std::fs::read_to_string(project.join("helper").join(f)).unwrap();
        std::fs::write(third.join(f), text.replace("team-helper", "team-third")).unwrap();
    }
    let helper = project.join("helper/murmur.yaml");
    let manifest = std::fs::read_to_string(&helper).unwrap();
    std::fs::write(
        &helper,
        format!("{manifest}\ncapabilities:\n  network:\n    allow:\n      - localhost\n"),
    )
    .unwrap();
    let roster = std::fs::read_to_string(project.join("roster.yaml")).unwrap();
    let roster = roster
        .replace(
            "reachability:",
            "  - name: third\n    capsule: local/team-third\n    version: 0.1.0\nreachability:",
        )
        .replace(
            "    to: [helper]\n",
            "    to: [helper]\n  - from: helper\n    to: [third]\n",
        );
    std::fs::write(project.join("roster.yaml"), roster).unwrap();
    ok(w.mur_in(&project)
        .args(["install", "lead", "helper", "third"]));
    // A roster edited by hand is approved before it launches (docs/approval.md).
    ok(w.mur_in(&project).arg("approve"));
    project
}

/// The formation id every member's trace names.
pub(crate) fn formation_id(home: &Path) -> String {
    for file in files_under(&home.join(".murmur/records")) {
        if file.file_name().is_some_and(|n| n == "trace.jsonl") {
            let text = std::fs::read_to_string(&file).unwrap();
            let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
            if let Some(frm) = first["formation_id"].as_str() {
                return frm.to_string();
            }
        }
    }
    panic!("no member trace");
}

pub(crate) fn export(w: &World, id: &str) -> String {
    let out = w.mur().args(["trace", "export", id]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The one span that `pred` picks.
fn one<'a>(spans: &'a [Value], what: &str, pred: impl Fn(&Value) -> bool) -> &'a Value {
    let found: Vec<&Value> = spans.iter().filter(|s| pred(s)).collect();
    assert_eq!(found.len(), 1, "{what}: {found:#?}");
    found[0]
}

fn is(span: &Value, service: &str, name: &str, kind: i64) -> bool {
    span["service"] == service && span["name"] == name && span["kind"] == kind
}

const SERVER: i64 = 2;
const CLIENT: i64 = 3;
const INTERNAL: i64 = 1;

#[test]
fn a_three_member_formation_exports_as_one_nested_trace() {
    let w = World::new();
    chain(&w);
    let frm = formation_id(&w.home);
    let text = export(&w, &frm);
    // The same records give the same spans, ids included.
    assert_eq!(text, export(&w, &frm), "two exports differ");
    let seen = otel::parse(&text);
    assert_eq!(seen["lines"], 4, "one line per member and the launcher's");
    let spans = seen["spans"].as_array().unwrap();
    let root = one(spans, "the launcher's root", |s| {
        s["name"] == format!("invoke_workflow {frm}").as_str()
    });
    assert_eq!(root["parent_span_id"], "");
    let trace_id = root["trace_id"].clone();
    for s in spans {
        assert_eq!(s["trace_id"], trace_id, "one trace: {s:#?}");
        assert!(
            s["start"].as_u64().unwrap() <= s["end"].as_u64().unwrap(),
            "{s:#?}"
        );
        assert_eq!(
            s["schema_url"],
            "https://opentelemetry.io/schemas/gen-ai/1.42.0"
        );
    }
    // Each member is a resource of its own.
    for member in ["lead", "helper", "third"] {
        let s = spans.iter().find(|s| s["service"] == member).unwrap();
        assert_eq!(s["resource"]["mur.formation.id"], frm.as_str());
        assert_eq!(
            s["resource"]["mur.capsule.name"],
            format!("local/team-{member}").as_str()
        );
        assert_eq!(s["resource"]["mur.capsule.version"], "0.1.0");
    }
    // lead: its task under the root, a call-member tool call, the call to helper.
    let mut parent = root;
    for (caller, callee) in [("lead", "helper"), ("helper", "third")] {
        let task = one(spans, caller, |s| is(s, caller, "SendMessage", SERVER));
        assert_eq!(task["parent_span_id"], parent["span_id"], "{caller}'s task");
        assert_eq!(task["attributes"]["a2a.task.state"], "TASK_STATE_COMPLETED");
        let tool = one(spans, "call-member", |s| {
            is(s, caller, "execute_tool call-member", INTERNAL)
        });
        assert_eq!(tool["parent_span_id"], task["span_id"]);
        assert_eq!(tool["attributes"]["gen_ai.tool.name"], "call-member");
        let call = one(spans, "member call", |s| {
            is(s, caller, "SendMessage", CLIENT)
        });
        assert_eq!(call["parent_span_id"], tool["span_id"]);
        assert_eq!(call["attributes"]["a2a.method.name"], "SendMessage");
        assert_eq!(call["attributes"]["mur.member"], callee);
        assert_eq!(call["attributes"]["a2a.task.state"], "TASK_STATE_COMPLETED");
        let chats: Vec<&Value> = spans
            .iter()
            .filter(|s| s["service"] == caller && s["name"] == "chat")
            .collect();
        assert!(chats.len() >= 2, "{caller}'s model turns: {chats:#?}");
        for c in chats {
            assert_eq!(c["parent_span_id"], task["span_id"]);
            assert_eq!(c["attributes"]["gen_ai.operation.name"], "chat");
        }
        parent = call;
    }
    let last = one(spans, "third's task", |s| {
        is(s, "third", "SendMessage", SERVER)
    });
    assert_eq!(last["parent_span_id"], parent["span_id"]);
    assert!(
        !spans.iter().any(|s| is(s, "third", "SendMessage", CLIENT)),
        "third calls nobody"
    );

    // One member's session exports alone too, and -o writes the same lines.
    let lead_session =
        one(spans, "lead", |s| is(s, "lead", "SendMessage", SERVER))["resource"]["mur.session.id"]
            .as_str()
            .unwrap()
            .to_string();
    let out = w.path("lead.jsonl");
    let done = w
        .mur()
        .args(["trace", "export", &lead_session, "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let alone = std::fs::read_to_string(&out).unwrap();
    assert_eq!(alone, export(&w, &lead_session));
    assert_eq!(otel::parse(&alone)["lines"], 1);
}

#[test]
fn export_of_an_unknown_id_is_e_run_003() {
    let w = World::new();
    let out = w
        .mur()
        .args(["trace", "export", "frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("E-RUN-003"));
    assert!(out.stdout.is_empty());
}

/// Debian's `chromium`; the test fails without it (.ci/run installs it).
fn chromium() -> &'static str {
    let ok = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "chromium is not installed: apt-get install chromium");
    "chromium"
}

fn headless(page: &Path) -> Command {
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,420",
    ]);
    let profile = page.with_extension("profile");
    cmd.arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// The JSON the page wrote into `#summary`, from chromium's `--dump-dom`.
fn summary_of(dom: &str) -> Value {
    let start = dom.find("<pre id=\"summary\">").expect("the summary") + 18;
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Every record of every member trace under `home`, by type.
fn record_counts(home: &Path) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for file in files_under(&home.join(".murmur/records")) {
        if file.file_name().is_some_and(|n| n == "trace.jsonl") {
            for line in std::fs::read_to_string(&file).unwrap().lines() {
                let r: Value = serde_json::from_str(line).unwrap();
                *counts
                    .entry(r["type"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
        }
    }
    counts
}

#[test]
fn the_timeline_renders_in_chromium_as_the_records_say() {
    let w = World::new();
    chain(&w);
    let frm = formation_id(&w.home);
    let page = w.path("timeline.html");
    let out = w
        .mur()
        .args(["trace", "show", &frm, "--html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing to fetch.
    for outside in ["src=", "href=", "url(", "@import", "@font-face"] {
        assert!(
            !html.contains(outside),
            "the page loads something: {outside}"
        );
    }
    let dumped = headless(&page)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&dumped.stderr);
    assert!(dumped.status.success(), "{stderr}");
    assert!(!stderr.contains("Uncaught"), "a console error: {stderr}");
    let dom = String::from_utf8_lossy(&dumped.stdout);
    let summary = summary_of(&dom);
    assert_eq!(summary["errors"], serde_json::json!([]), "{summary}");
    let mut lanes: Vec<&str> = summary["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    lanes.sort();
    assert_eq!(lanes, ["helper", "lead", "mur launcher", "third"]);
    let counts = record_counts(&w.home);
    let n = |k: &str| counts.get(k).copied().unwrap_or(0) as u64;
    let bars = &summary["bars"];
    assert_eq!(bars["task"], n("a2a_task_received"), "{summary} {counts:?}");
    assert_eq!(bars["chat"], n("inference_turn"), "{summary} {counts:?}");
    assert_eq!(bars["tool"], n("tool_call"), "{summary} {counts:?}");
    assert_eq!(bars["call"], n("member_call"), "{summary} {counts:?}");
    assert_eq!(bars["root"], 1);
    // The root to lead, lead to helper, helper to third.
    assert_eq!(summary["arrows"], 3, "{summary}");
    assert_eq!(
        summary["marks"],
        n("formation_ended"),
        "{summary} {counts:?}"
    );

    // The screenshot docs/trace.md shows: rewritten with MUR_UPDATE_DOCS=1.
    let shot = if std::env::var_os("MUR_UPDATE_DOCS").is_some() {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/trace-timeline.png"
        ))
    } else {
        w.path("timeline.png")
    };
    let taken = headless(&page)
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        taken.status.success(),
        "{}",
        String::from_utf8_lossy(&taken.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
}

/// A member name that would end the page's data script if written raw.
const HOSTILE: &str = "m0</script><script>document.title='pwned'</script>";

/// 32 members and about 10,000 records, written as sessions write them: member `m`'s
/// task `k` calls member `m + 1`'s task `k`. Returns the records by type.
fn big_formation(home: &Path, frm: &str) -> std::collections::BTreeMap<String, usize> {
    use serde_json::json;
    let base = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_000_000);
    let ts = |ms: u64| {
        humantime::format_rfc3339_millis(base + std::time::Duration::from_millis(ms)).to_string()
    };
    let mut counts = std::collections::BTreeMap::new();
    let (members, tasks) = (32u64, 35u64);
    for m in 0..members {
        let ses = format!("ses_{:032x}", m + 1);
        let dir = home.join(".murmur/records/proj").join(&ses);
        std::fs::create_dir_all(&dir).unwrap();
        let mut lines: Vec<Value> = vec![json!({"type": "session_start", "session_id": ses,
            "capsule": {"name": format!("local/m{m}"), "version": "1.0.0"}, "mur_version": "0.1.0",
            "pid": 1, "workdir": "/nowhere", "records_dir": dir, "formation_id": frm,
            "formation_member": if m == 0 { HOSTILE.to_string() } else { format!("m{m}") },
            "formation_callees": []})];
        for k in 0..tasks {
            let at = k * 200 + m * 5;
            let task = format!("t{k}");
            let trace_id = format!("{:032x}", k + 1);
            let span = format!("{:016x}", ((m + 1) << 20) | (k + 1));
            let parent = if m == 0 {
                format!("{:016x}", 0xff00 | (k + 1))
            } else {
                format!("{:016x}", (m << 40) | (k + 1))
            };
            let t = |ms: u64| ts(at + ms);
            lines.push(json!({"ts": t(0), "type": "a2a_task_received", "task_id": task,
                "credential": "operator", "trace_id": trace_id, "span_id": span, "parent_span_id": parent}));
            lines.push(json!({"ts": t(1), "type": "task_state", "task_id": task, "from": "submitted", "to": "working"}));
            if m + 1 < members {
                let call = format!("{:016x}", ((m + 1) << 40) | (k + 1));
                lines.push(
                    json!({"ts": t(2), "type": "inference_turn", "task_id": task, "turn": 1,
                    "transport": "builtin", "reply": "tool_calls", "tool_calls": ["call-member"]}),
                );
                lines.push(
                    json!({"ts": t(2), "type": "tool_call", "task_id": task, "turn": 1,
                    "call_id": "c1", "tool": "call-member", "arguments": {}}),
                );
                lines.push(
                    json!({"ts": t(3), "type": "member_call", "task_id": task, "call_id": "c1",
                    "member": format!("m{}", m + 1), "text": "x", "span_id": call}),
                );
                lines.push(
                    json!({"ts": t(3), "type": "tool_result", "task_id": task, "call_id": "c1",
                    "tool": "call-member", "is_error": false, "output": "held", "duration_ms": 1}),
                );
                lines.push(
                    json!({"ts": t(150), "type": "member_answer", "task_id": task, "call_id": "c1",
                    "member": format!("m{}", m + 1), "state": "completed", "text": "<b>done</b>"}),
                );
            }
            lines.push(
                json!({"ts": t(160), "type": "inference_turn", "task_id": task, "turn": 2,
                "transport": "builtin", "reply": "answer", "tool_calls": []}),
            );
            lines.push(json!({"ts": t(170), "type": "task_state", "task_id": task, "from": "working", "to": "completed"}));
        }
        lines.push(
            json!({"ts": ts(tasks * 200 + 100), "type": "formation_ended", "formation_id": frm}),
        );
        lines.push(json!({"ts": ts(tasks * 200 + 101), "type": "session_end", "exit_status": "ok", "exit_code": 0}));
        let mut text = String::new();
        for (i, mut l) in lines.into_iter().enumerate() {
            if l.get("ts").is_none() {
                l["ts"] = json!(ts(0));
            }
            l["seq"] = json!(i + 1);
            *counts
                .entry(l["type"].as_str().unwrap().to_string())
                .or_default() += 1;
            // The record's own key order: ts, seq, then the rest (as the writer writes).
            let mut obj = serde_json::Map::new();
            obj.insert("ts".into(), l["ts"].clone());
            obj.insert("seq".into(), l["seq"].clone());
            for (k, v) in l.as_object().unwrap() {
                if k != "ts" && k != "seq" {
                    obj.insert(k.clone(), v.clone());
                }
            }
            text.push_str(&serde_json::to_string(&Value::Object(obj)).unwrap());
            text.push('\n');
        }
        std::fs::write(dir.join("trace.jsonl"), text).unwrap();
    }
    counts
}

#[test]
fn thirty_two_members_and_ten_thousand_records_export_and_draw() {
    let w = World::new();
    let frm = "frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071";
    let counts = big_formation(&w.home, frm);
    let total: usize = counts.values().sum();
    assert!(total >= 10_000, "{total} records");
    let n = |k: &str| counts.get(k).copied().unwrap_or(0) as u64;
    // The export reads as TracesData.
    let seen = otel::parse(&export(&w, frm));
    assert_eq!(seen["lines"], 33);
    let spans = seen["spans"].as_array().unwrap();
    assert_eq!(
        spans.len() as u64,
        n("a2a_task_received") + n("inference_turn") + n("tool_call") + n("member_call") + 35
    );
    // The page draws every one of them, without a script error.
    let page = w.path("big.html");
    let out = w
        .mur()
        .args(["trace", "show", frm, "--html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("</script><script>"),
        "a name closed the data script"
    );
    let dumped = headless(&page)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&dumped.stderr);
    assert!(
        dumped.status.success() && !stderr.contains("Uncaught"),
        "{stderr}"
    );
    let dom = String::from_utf8_lossy(&dumped.stdout);
    let summary = summary_of(&dom);
    assert_eq!(summary["errors"], serde_json::json!([]));
    assert_eq!(summary["lanes"].as_array().unwrap().len(), 33);
    // The hostile name is drawn as text, and ran nothing.
    assert!(
        summary["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == HOSTILE),
        "{summary}"
    );
    assert!(!dom.contains("<title>pwned"), "the name ran as a script");
    assert_eq!(summary["bars"]["task"], n("a2a_task_received"));
    assert_eq!(summary["bars"]["chat"], n("inference_turn"));
    assert_eq!(summary["bars"]["call"], n("member_call"));
    assert_eq!(summary["bars"]["root"], 35);
    // Each member call to its callee, each root to m0's task.
    assert_eq!(summary["arrows"], n("member_call") + 35);
    assert_eq!(summary["marks"], 32);
}
