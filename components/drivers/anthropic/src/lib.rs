//! A model driver for the Anthropic Messages API (examples/anthropic): mur's
//! provider-neutral request in, one `POST <base_url>/v1/messages` through wasi:http,
//! the assistant's turn out. The host lets the request out only when the capsule's
//! `capabilities.network.allow` reaches base_url's host.

wit_bindgen::generate!({ world: "driver-component", path: "../../../wit" });

use exports::murmur::capsule::driver::{Failure, Guest};
use serde_json::{Value, json};
use toolkit::http::{Fault, Request, fetch};

/// The API version this driver speaks (the `anthropic-version` header).
const API_VERSION: &str = "2023-06-01";

/// `max_tokens` is required by the API; this when the manifest sets none.
const DEFAULT_MAX_TOKENS: u64 = 4096;

/// Statuses worth another try: rate limited, the server's faults, overloaded (529).
const RETRYABLE: [u16; 6] = [429, 500, 502, 503, 504, 529];

struct Anthropic;

impl Guest for Anthropic {
    fn turn(request: String, api_key: Option<String>) -> Result<String, Failure> {
        let req: Value = serde_json::from_str(&request).map_err(|e| fail(format!("{e}")))?;
        let base = req["base_url"]
            .as_str()
            .unwrap_or("https://api.anthropic.com");
        let url = format!("{}/v1/messages", base.trim_end_matches('/'));
        let body = body(&req).to_string();
        let mut headers = vec![
            ("content-type", "application/json"),
            ("anthropic-version", API_VERSION),
        ];
        if let Some(key) = api_key.as_deref() {
            headers.push(("x-api-key", key));
        }
        let mut http = toolkit::http::parse(&url).map_err(fail)?;
        http.headers = &headers;
        http.method = "POST";
        http.body = Some(body.as_bytes());
        let response = send(&http, &url)?;
        let answer: Value = serde_json::from_str(&response.body).unwrap_or(Value::Null);
        if !(200..300).contains(&response.status) {
            let kind = answer
                .pointer("/error/type")
                .and_then(Value::as_str)
                .unwrap_or("error");
            let said = match answer.pointer("/error/message").and_then(Value::as_str) {
                Some(m) => m.to_string(),
                None => response.body.chars().take(300).collect(),
            };
            return Err(Failure {
                message: format!("{url} answered {} ({kind}): {said}", response.status),
                retryable: RETRYABLE.contains(&response.status),
                status: Some(response.status),
                retry_after_ms: response
                    .header("retry-after")
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(|s| s.saturating_mul(1000)),
            });
        }
        if answer.is_null() {
            return Err(fail(format!("{url} answered with something not JSON")));
        }
        Ok(turn(&answer, response.status).to_string())
    }
}

/// The request, or a failure: a refusal by the host (network.allow) is final; a
/// connection that failed or stalled is worth another try.
fn send(http: &Request, url: &str) -> Result<toolkit::http::Response, Failure> {
    use toolkit::http::ErrorCode as E;
    fetch(http).map_err(|fault| match fault {
        Fault::Http(E::HttpRequestDenied) => fail(format!(
            "{url}: refused: the capsule's capabilities.network.allow does not reach its host"
        )),
        Fault::Http(
            e @ (E::DnsTimeout
            | E::ConnectionRefused
            | E::ConnectionTerminated
            | E::ConnectionTimeout
            | E::ConnectionReadTimeout
            | E::ConnectionWriteTimeout
            | E::ConnectionLimitReached
            | E::HttpResponseTimeout),
        ) => Failure {
            message: format!("{url}: {e:?}"),
            retryable: true,
            status: None,
            retry_after_ms: None,
        },
        other => fail(format!("{url}: {other}")),
    })
}

fn fail(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        retryable: false,
        status: None,
        retry_after_ms: None,
    }
}

/// The Messages API body of mur's request.
fn body(req: &Value) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    for m in req["messages"].as_array().into_iter().flatten() {
        let (role, blocks) = match m["role"].as_str() {
            Some("user") => ("user", vec![text_block(&m["text"])]),
            Some("assistant") => {
                let mut blocks: Vec<Value> = Vec::new();
                if m["text"].as_str().is_some_and(|t| !t.is_empty()) {
                    blocks.push(text_block(&m["text"]));
                }
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    let input = match &call["arguments"] {
                        Value::Object(_) => call["arguments"].clone(),
                        _ => json!({}),
                    };
                    blocks.push(json!({"type": "tool_use", "id": call["id"],
                        "name": call["name"], "input": input}));
                }
                ("assistant", blocks)
            }
            Some("tool") => (
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": m["call_id"],
                    "content": m["output"], "is_error": m["is_error"].as_bool().unwrap_or(false)})],
            ),
            _ => continue,
        };
        if blocks.is_empty() {
            continue;
        }
        // The API alternates roles: a turn's tool results go in one user message.
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    let options = &req["options"];
    let mut body = json!({
        "model": req["model"],
        "max_tokens": options["max_tokens"].as_u64().unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    if let Some(system) = req["system"].as_str().filter(|s| !s.is_empty()) {
        body["system"] = system.into();
    }
    let tools: Vec<Value> = req["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            json!({"name": t["name"], "description": t["description"],
                "input_schema": t["input_schema"]})
        })
        .collect();
    if !tools.is_empty() {
        body["tools"] = tools.into();
    }
    for key in ["temperature", "top_p"] {
        if !options[key].is_null() {
            body[key] = options[key].clone();
        }
    }
    if !options["stop"].is_null() {
        body["stop_sequences"] = options["stop"].clone();
    }
    // `seed` has no counterpart in the Messages API: it is not sent.
    body
}

fn text_block(text: &Value) -> Value {
    json!({"type": "text", "text": text.as_str().unwrap_or("")})
}

/// mur's turn of a Messages API response.
fn turn(answer: &Value, status: u16) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in answer["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or("")),
            Some("tool_use") => calls.push(json!({"id": block["id"], "name": block["name"],
                "arguments": block["input"]})),
            _ => {}
        }
    }
    let usage = answer.get("usage").map(|u| {
        let input = u["input_tokens"].as_u64().unwrap_or(0);
        let output = u["output_tokens"].as_u64().unwrap_or(0);
        json!({"prompt_tokens": input, "completion_tokens": output,
            "total_tokens": input + output})
    });
    json!({
        "text": (!text.is_empty()).then_some(text),
        "tool_calls": calls,
        "stop_reason": answer["stop_reason"],
        "usage": usage,
        "status": status,
    })
}

export!(Anthropic);
