//! A tool for the tests that tries what a component may not do:
//! - `{"op": "env"}`: every environment variable it sees, `NAME=value` a line;
//! - `{"op": "socket", "addr"}`: a raw TCP connection;
//! - `{"op": "request", "scheme", "authority"?, "path", "host"?, "headers"?, "body"?}`:
//!   an HTTP GET (a POST of `body` when given) with the given authority (none when
//!   absent), a Host header of its own, and more headers (`[[name, value], ...]`);
//!   `"echo": true` answers with all it observed, as JSON: `{"url", "status",
//!   "headers", "body"}`;
//! - `{"op": "send", "url", "text"}`: murmur:message/send, the task as JSON
//!   (`{"id", "state", "text"}`);
//! - `{"op": "each", "ops": [...]}`: each op in turn, as a JSON array of
//!   `{"error", "output"}`.
use toolkit::{Guest, Output, Value, error, ok};

struct Probe;

impl Guest for Probe {
    fn schema() -> String {
        r#"{"type":"object","properties":{"op":{"type":"string"}},"required":["op"]}"#.to_string()
    }

    fn call(arguments: String) -> Output {
        let args: Value = serde_json::from_str(&arguments).unwrap_or_default();
        let s = |k: &str| args.get(k).and_then(Value::as_str);
        match s("op").unwrap_or("") {
            "env" => ok(std::env::vars()
                .map(|(k, v)| format!("{k}={v}\n"))
                .collect::<String>()),
            "socket" => match std::net::TcpStream::connect(s("addr").unwrap_or("127.0.0.1:1")) {
                Ok(_) => ok("connected"),
                Err(e) => error(format!("socket refused: {e}")),
            },
            "request" => {
                let host = s("host");
                let mut headers: Vec<(&str, &str)> =
                    host.map(|h| ("host", h)).into_iter().collect();
                for pair in args["headers"].as_array().into_iter().flatten() {
                    if let (Some(k), Some(v)) = (pair[0].as_str(), pair[1].as_str()) {
                        headers.push((k, v));
                    }
                }
                let req = toolkit::http::Request {
                    scheme: s("scheme").unwrap_or("http"),
                    authority: s("authority"),
                    path: s("path").unwrap_or("/"),
                    headers: &headers,
                    method: if s("body").is_some() { "POST" } else { "GET" },
                    body: s("body").map(str::as_bytes),
                };
                match toolkit::http::fetch(&req) {
                    Ok(r) if args["echo"] == true => ok(toolkit::json!({
                        "url": format!("{}://{}{}", req.scheme,
                            req.authority.unwrap_or(""), req.path),
                        "status": r.status, "headers": r.headers, "body": r.body,
                    })
                    .to_string()),
                    Ok(r) => ok(format!("{} {}", r.status, r.body)),
                    Err(e) => error(e.to_string()),
                }
            }
            "send" => match toolkit::send(s("url").unwrap_or(""), s("text").unwrap_or("")) {
                Ok(t) => {
                    ok(toolkit::json!({"id": t.id, "state": t.state, "text": t.text}).to_string())
                }
                Err(e) => error(e),
            },
            "each" => {
                let all: Vec<Value> = args["ops"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|op| {
                        let out = Probe::call(op.to_string());
                        toolkit::json!({"error": out.is_error, "output": out.content})
                    })
                    .collect();
                ok(Value::Array(all).to_string())
            }
            other => error(format!("unknown op {other:?}")),
        }
    }
}

toolkit::export!(Probe);
