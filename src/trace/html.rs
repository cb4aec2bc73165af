//! `mur trace show <id> --html`: one self-contained HTML file (no network, no external
//! script or font) drawing the export's spans (`trace::export`) on a canvas: a lane per
//! member, bars for tasks, model turns and tool calls, arrows from each member call
//! to the task it started (a delegation too), marks for the wind-down and the
//! deadline, details on hover. The page writes a JSON summary of what it drew into
//! `#summary` (what the tests read through `chromium --dump-dom`).

use serde::Serialize;

use super::otlp::{AnyValue, Kind, TracesData};

/// One bar: a span, on its member's lane.
#[derive(Serialize)]
struct Bar {
    lane: usize,
    /// `task`, `chat`, `tool`, `call` or `root`.
    kind: &'static str,
    name: String,
    start: f64,
    end: f64,
    id: String,
    parent: String,
    /// Shown on hover: the span's attributes, `key=value` a line.
    details: String,
    error: bool,
}

#[derive(Serialize)]
struct Mark {
    lane: usize,
    /// `formation_ended` or `deadline_reached`.
    name: String,
    at: f64,
}

#[derive(Serialize)]
struct Page<'a> {
    title: &'a str,
    lanes: Vec<String>,
    bars: Vec<Bar>,
    marks: Vec<Mark>,
}

/// The page for `traces` (the export's lines), titled `title`.
pub fn page(title: &str, traces: &[TracesData]) -> String {
    let mut lanes = Vec::new();
    let mut bars = Vec::new();
    let mut marks = Vec::new();
    let mut t0 = u128::MAX;
    for data in traces {
        for rs in &data.resource_spans {
            for ss in &rs.scope_spans {
                for s in &ss.spans {
                    t0 = t0.min(s.start_time_unix_nano.parse().unwrap_or(u128::MAX));
                }
            }
        }
    }
    let ms = |ns: &str| -> f64 {
        let ns: u128 = ns.parse().unwrap_or(0);
        ns.saturating_sub(t0) as f64 / 1e6
    };
    // Lanes in the order the members began work: the launcher's root first.
    let mut resources: Vec<&super::otlp::ResourceSpans> = traces
        .iter()
        .flat_map(|d| d.resource_spans.iter())
        .collect();
    resources.sort_by_key(|rs| {
        rs.scope_spans
            .iter()
            .flat_map(|ss| ss.spans.iter())
            .map(|s| s.start_time_unix_nano.parse::<u128>().unwrap_or(u128::MAX))
            .min()
            .unwrap_or(u128::MAX)
    });
    for rs in resources {
        let lane = lanes.len();
        let service = rs
            .resource
            .attributes
            .iter()
            .find(|kv| kv.key == "service.name")
            .map(|kv| value(&kv.value))
            .unwrap_or_default();
        lanes.push(service);
        for s in rs.scope_spans.iter().flat_map(|ss| ss.spans.iter()) {
            let kind = match s.kind {
                Kind::Server => "task",
                Kind::Client if s.name == "chat" => "chat",
                Kind::Client => "call",
                Kind::Internal if s.parent_span_id.is_empty() => "root",
                Kind::Internal => "tool",
            };
            let details = s
                .attributes
                .iter()
                .map(|kv| format!("{}={}", kv.key, value(&kv.value)))
                .collect::<Vec<_>>()
                .join("\n");
            for e in &s.events {
                if e.name == "formation_ended" || e.name == "deadline_reached" {
                    marks.push(Mark {
                        lane,
                        name: e.name.clone(),
                        at: ms(&e.time_unix_nano),
                    });
                }
            }
            bars.push(Bar {
                lane,
                kind,
                name: s.name.clone(),
                start: ms(&s.start_time_unix_nano),
                end: ms(&s.end_time_unix_nano),
                id: s.span_id.clone(),
                parent: s.parent_span_id.clone(),
                details,
                error: s.status.code == super::otlp::Code::Error,
            });
        }
    }
    let data = Page {
        title,
        lanes,
        bars,
        marks,
    };
    // `<` as \u003c: no record's text can close the script element.
    let json = serde_json::to_string(&data)
        .unwrap_or_else(|_| "{}".into())
        .replace('<', "\\u003c");
    let title = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    TEMPLATE
        .replace("{{TITLE}}", &title)
        .replace("{{DATA}}", &json)
}

fn value(v: &AnyValue) -> String {
    match v {
        AnyValue::String(s) | AnyValue::Int(s) => s.clone(),
    }
}

const TEMPLATE: &str = include_str!("timeline.html");
