//! The chat completions wire format: the request body, a whole answer, and a
//! streamed one (server-sent events whose deltas are put back together).

use serde_json::{Value, json};

use super::super::{Conversation, Message, Reply, ToolCall};
use crate::agent::HttpConfig;
use crate::trace::Usage;

/// The request body for a conversation: the model, the messages, the tools, and the
/// sampling settings as the manifest wrote them.
pub fn body(config: &HttpConfig, c: &Conversation) -> Value {
    let mut messages = Vec::new();
    if !c.system.is_empty() {
        messages.push(json!({"role": "system", "content": c.system}));
    }
    for m in &c.messages {
        messages.push(match m {
            Message::User { text } => json!({"role": "user", "content": text}),
            Message::Assistant { text, tool_calls } if tool_calls.is_empty() => {
                json!({"role": "assistant", "content": text.clone().unwrap_or_default()})
            }
            Message::Assistant { text, tool_calls } => json!({
                "role": "assistant",
                "content": text,
                "tool_calls": tool_calls.iter().map(|t| json!({
                    "id": t.id,
                    "type": "function",
                    "function": {"name": t.name, "arguments": t.arguments.to_string()},
                })).collect::<Vec<_>>(),
            }),
            Message::Tool {
                call_id,
                output,
                is_error,
                ..
            } => json!({
                "role": "tool",
                "tool_call_id": call_id,
                "content": if *is_error { format!("error: {output}") } else { output.clone() },
            }),
        });
    }
    let mut body = json!({"model": config.model, "messages": messages});
    if !c.tools.is_empty() {
        body["tools"] = c
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema,
                }})
            })
            .collect();
    }
    let s = &config.sampling;
    if let Some(t) = &s.temperature {
        body["temperature"] = Value::Number(t.clone());
    }
    if let Some(p) = &s.top_p {
        body["top_p"] = Value::Number(p.clone());
    }
    if let Some(n) = s.max_tokens {
        body["max_tokens"] = n.into();
    }
    if let Some(seed) = s.seed {
        body["seed"] = seed.into();
    }
    if !s.stop.is_empty() {
        body["stop"] = s.stop.clone().into();
    }
    if config.stream {
        body["stream"] = true.into();
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// A whole answer: its first choice's message, and its `usage`.
pub fn parse_completion(v: &Value) -> Result<(Reply, Option<Usage>), String> {
    let message = v
        .pointer("/choices/0/message")
        .ok_or("the answer has no choices[0].message")?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .map(str::to_string);
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| calls.iter().map(tool_call).collect())
        .unwrap_or_default();
    Ok((reply(text, calls), usage(v)))
}

fn tool_call(c: &Value) -> ToolCall {
    let field = |pointer: &str| {
        c.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    ToolCall {
        id: field("/id"),
        name: field("/function/name"),
        arguments: arguments(c.pointer("/function/arguments")),
    }
}

/// Arguments come as a JSON string; some servers send the object. A string that is
/// not JSON reaches the tool as a string.
fn arguments(raw: Option<&Value>) -> Value {
    match raw {
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
        None => json!({}),
    }
}

fn reply(text: Option<String>, calls: Vec<ToolCall>) -> Reply {
    let text = text.filter(|t| !t.is_empty());
    if calls.is_empty() {
        Reply::Answer {
            text,
            artifacts: Vec::new(),
        }
    } else {
        Reply::ToolCalls { text, calls }
    }
}

/// The answer's `usage`, when it has one.
fn usage(v: &Value) -> Option<Usage> {
    v.get("usage")
        .filter(|u| u.is_object())
        .and_then(|u| serde_json::from_value(u.clone()).ok())
}

/// A streamed answer, put together one `data:` event at a time.
#[derive(Debug, Default)]
pub struct Stream {
    text: String,
    /// By the deltas' `index`: id, name and the arguments' text so far.
    calls: Vec<(String, String, String)>,
    usage: Option<Usage>,
    done: bool,
}

impl Stream {
    /// Takes one event's data; `Err` when it is not a chunk. `[DONE]` ends the stream.
    /// Returns the text this event added, for the partial output.
    pub fn push(&mut self, data: &str) -> Result<String, String> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(String::new());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            let shown: String = data.chars().take(200).collect();
            format!("streamed an event that is not JSON ({e}): {shown}")
        })?;
        if let Some(u) = usage(&v) {
            self.usage = Some(u);
        }
        let Some(delta) = v.pointer("/choices/0/delta") else {
            return Ok(String::new());
        };
        let added = delta
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        self.text.push_str(&added);
        for (n, d) in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = d
                .get("index")
                .and_then(Value::as_u64)
                .map_or(n, |i| i as usize);
            if index >= 1024 {
                return Err(format!("streamed a tool call with index {index}"));
            }
            if self.calls.len() <= index {
                self.calls.resize_with(index + 1, Default::default);
            }
            let call = &mut self.calls[index];
            if let Some(id) = d.get("id").and_then(Value::as_str) {
                call.0 = id.to_string();
            }
            if let Some(name) = d.pointer("/function/name").and_then(Value::as_str) {
                call.1.push_str(name);
            }
            if let Some(args) = d.pointer("/function/arguments").and_then(Value::as_str) {
                call.2.push_str(args);
            }
        }
        Ok(added)
    }

    /// Whether `[DONE]` came.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The reply the deltas make, and the usage the last chunk carried.
    pub fn finish(self) -> (Reply, Option<Usage>) {
        let calls = self
            .calls
            .into_iter()
            .filter(|(_, name, _)| !name.is_empty())
            .map(|(id, name, args)| ToolCall {
                id,
                name,
                arguments: arguments(Some(&Value::String(args))),
            })
            .collect();
        (reply(Some(self.text), calls), self.usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_deltas_are_put_back_together() {
        let mut s = Stream::default();
        let events = [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me "}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"look."}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"echo","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"say\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"echo","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"hi\"}"}}]}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}"#,
            "[DONE]",
        ];
        let added: Vec<String> = events.iter().map(|e| s.push(e).unwrap()).collect();
        assert_eq!(added[..2], ["Let me ".to_string(), "look.".to_string()]);
        assert!(s.is_done());
        let (reply, usage) = s.finish();
        assert_eq!(
            reply,
            Reply::ToolCalls {
                text: Some("Let me look.".into()),
                calls: vec![
                    ToolCall {
                        id: "call_a".into(),
                        name: "echo".into(),
                        arguments: json!({"say": "hi"}),
                    },
                    ToolCall {
                        id: "call_b".into(),
                        name: "echo".into(),
                        arguments: json!({}),
                    },
                ],
            }
        );
        assert_eq!(usage.map(|u| u.total_tokens), Some(13));
        assert!(Stream::default().push("{not json").is_err());
    }

    #[test]
    fn a_whole_answer_and_its_usage() {
        let v = json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}});
        let (reply, usage) = parse_completion(&v).unwrap();
        assert_eq!(
            reply,
            Reply::Answer {
                text: Some("hi".into()),
                artifacts: vec![]
            }
        );
        assert_eq!(usage.unwrap().prompt_tokens, 3);
        assert!(parse_completion(&json!({"error": "x"})).is_err());
    }
}
