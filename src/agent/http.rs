//! `transport: http`: an OpenAI-compatible chat completions server (ollama,
//! llama.cpp, vLLM, OpenAI). One turn is one `POST <base_url>/chat/completions` with
//! the whole conversation; the model's tool calls come back as `tool_calls`.

use std::time::Duration;

use serde_json::{Value, json};

use super::{BoxFuture, Conversation, Message, Reply, ToolCall, Transport};

/// The http transport.
pub struct HttpTransport {
    client: reqwest::Client,
    url: String,
    model: String,
    /// The key itself, read from `api_key_env` at start; never logged or traced.
    api_key: Option<String>,
}

impl HttpTransport {
    /// `base_url` such as `http://127.0.0.1:11434/v1`.
    pub fn new(base_url: &str, model: &str, api_key: Option<String>) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(HttpTransport {
            client,
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            model: model.to_string(),
            api_key,
        })
    }

    /// The request body for a conversation.
    pub fn body(&self, c: &Conversation) -> Value {
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
        let mut body = json!({"model": self.model, "messages": messages});
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
        body
    }

    async fn exchange(&self, c: &Conversation) -> Result<Reply, String> {
        let mut request = self.client.post(&self.url).json(&self.body(c));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.url))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| format!("{} answered {status}, unreadably: {e}", self.url))?;
        if !status.is_success() {
            let shown: String = text.chars().take(300).collect();
            return Err(format!("{} answered {status}: {shown}", self.url));
        }
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} answered with something not JSON: {e}", self.url))?;
        parse_completion(&value).map_err(|why| format!("{}: {why}", self.url))
    }
}

/// The reply in a chat completion: its first choice's message.
pub fn parse_completion(v: &Value) -> Result<Reply, String> {
    let message = v
        .pointer("/choices/0/message")
        .ok_or("the answer has no choices[0].message")?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let calls: Vec<ToolCall> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let raw = c.pointer("/function/arguments");
                    // Arguments come as a JSON string; some servers send the object.
                    let arguments = match raw {
                        Some(Value::String(s)) => {
                            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                        }
                        Some(other) => other.clone(),
                        None => json!({}),
                    };
                    ToolCall {
                        id: c
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        name: c
                            .pointer("/function/name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        arguments,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if calls.is_empty() {
        Ok(Reply::Answer {
            text,
            artifacts: Vec::new(),
        })
    } else {
        Ok(Reply::ToolCalls { text, calls })
    }
}

impl Transport for HttpTransport {
    fn name(&self) -> &'static str {
        "http"
    }

    fn turn<'a>(&'a mut self, c: &'a Conversation) -> BoxFuture<'a, Result<Reply, String>> {
        Box::pin(self.exchange(c))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::extract::State;
    use axum::http::HeaderMap;
    use axum::routing::post;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::agent::{Agent, AgentSpec, Outcome, Tool, ToolOutput};

    struct Echo;
    impl Tool for Echo {
        fn name(&self) -> &str {
            "echo"
        }
        fn description(&self) -> &str {
            "Echoes."
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object", "properties": {"say": {"type": "string"}}})
        }
        fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
            Box::pin(async move { ToolOutput::ok(format!("echo {}", call.arguments["say"])) })
        }
    }

    #[derive(Default)]
    struct Seen {
        bodies: Vec<Value>,
        auth: Vec<Option<String>>,
    }

    /// A chat completions server on 127.0.0.1: first asks for `echo`, then answers.
    async fn server() -> (String, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let app = axum::Router::new()
            .route(
                "/v1/chat/completions",
                post(
                    |State(seen): State<Arc<Mutex<Seen>>>,
                     headers: HeaderMap,
                     axum::Json(body): axum::Json<Value>| async move {
                        let mut s = seen.lock().unwrap();
                        s.auth.push(
                            headers
                                .get("authorization")
                                .map(|v| v.to_str().unwrap().to_string()),
                        );
                        s.bodies.push(body);
                        let message = if s.bodies.len() == 1 {
                            json!({"role": "assistant", "content": null, "tool_calls": [
                                {"id": "call_a", "type": "function",
                                 "function": {"name": "echo", "arguments": "{\"say\":\"hi\"}"}}]})
                        } else {
                            json!({"role": "assistant", "content": "all done"})
                        };
                        axum::Json(json!({"choices": [{"index": 0, "message": message}]}))
                    },
                ),
            )
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{addr}/v1"), seen)
    }

    #[tokio::test]
    async fn a_real_server_drives_a_tool_call_then_answers() {
        let (base, seen) = server().await;
        let transport = HttpTransport::new(&base, "llama3", Some("sk-test".into())).unwrap();
        let mut agent = Agent::new(AgentSpec {
            task_id: "t".into(),
            system: "[Capsule]\nname: x".into(),
            max_turns: 4,
            tools: vec![Arc::new(Echo)],
            transport: Box::new(transport),
            trace: None,
        });
        let outcome = agent.send("say hi", &CancellationToken::new()).await;
        assert_eq!(
            outcome,
            Outcome::Completed {
                message: Some("all done".into()),
                artifacts: vec![]
            }
        );
        let s = seen.lock().unwrap();
        assert_eq!(
            s.auth,
            [Some("Bearer sk-test".into()), Some("Bearer sk-test".into())]
        );
        let first = &s.bodies[0];
        assert_eq!(first["model"], "llama3");
        assert_eq!(
            first["messages"][0],
            json!({"role": "system", "content": "[Capsule]\nname: x"})
        );
        assert_eq!(first["tools"][0]["function"]["name"], "echo");
        let second = &s.bodies[1]["messages"];
        assert_eq!(second[2]["tool_calls"][0]["id"], "call_a");
        assert_eq!(
            second[2]["tool_calls"][0]["function"]["arguments"],
            "{\"say\":\"hi\"}"
        );
        assert_eq!(
            second[3],
            json!({"role": "tool", "tool_call_id": "call_a", "content": "echo \"hi\""})
        );
    }

    #[tokio::test]
    async fn an_unreachable_or_failing_server_fails_the_task() {
        // A port that was just free: nothing listens on it.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut t = HttpTransport::new(&format!("http://127.0.0.1:{port}/v1"), "m", None).unwrap();
        let c = Conversation {
            task_id: "t".into(),
            system: String::new(),
            tools: vec![],
            messages: vec![Message::User { text: "x".into() }],
        };
        let err = t.turn(&c).await.unwrap_err();
        assert!(err.contains("cannot reach"), "{err}");
        assert!(parse_completion(&json!({"error": "x"})).is_err());
    }
}
