//! `agent.driver`: a WASM component that speaks another provider's wire protocol. The
//! transport hands it mur's own provider-neutral request, one try at a time, and reads
//! back the assistant's turn; retries, `agent.timeout` and the trace stay the
//! transport's. docs/agent.md ("Drivers") gives both JSON shapes.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::super::{BoxFuture, Conversation, Reply, ToolCall};
use super::Failure;
use crate::agent::HttpConfig;
use crate::trace::Usage;

/// Runs one try of a model turn (the component host implements it:
/// [`crate::component::WasmDriver`]).
pub trait Driver: Send + Sync {
    /// `request` is [`request`]'s JSON text; `api_key` the value of `agent.api_key_env`.
    /// `limit` bounds the whole try. The answer is the [`Turn`] as JSON text.
    fn turn<'a>(
        &'a self,
        request: &'a str,
        api_key: Option<&'a str>,
        limit: Duration,
    ) -> BoxFuture<'a, Result<String, Failure>>;
}

/// The provider-neutral request: the endpoint and model as the manifest wrote them, the
/// system prompt apart, the conversation's messages and tools in mur's own form, and
/// the sampling settings the manifest sets (absent ones left out).
pub fn request(config: &HttpConfig, c: &Conversation) -> Value {
    let s = &config.sampling;
    let mut options = serde_json::Map::new();
    if let Some(t) = &s.temperature {
        options.insert("temperature".into(), Value::Number(t.clone()));
    }
    if let Some(p) = &s.top_p {
        options.insert("top_p".into(), Value::Number(p.clone()));
    }
    if let Some(n) = s.max_tokens {
        options.insert("max_tokens".into(), n.into());
    }
    if let Some(seed) = s.seed {
        options.insert("seed".into(), seed.into());
    }
    if !s.stop.is_empty() {
        options.insert("stop".into(), s.stop.clone().into());
    }
    json!({
        "base_url": config.base_url,
        "model": config.model,
        "system": c.system,
        "messages": c.messages,
        "tools": c.tools,
        "options": options,
    })
}

/// What a driver answers: the assistant's turn.
#[derive(Debug, Deserialize)]
pub struct Turn {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// The provider's reason, as it gave it (`end_turn`, `tool_use`, `max_tokens`).
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The provider's HTTP status.
    #[serde(default)]
    pub status: Option<u16>,
}

/// The reply, usage and status a driver's answer makes; `Err` when it is not a turn.
pub fn parse(text: &str) -> Result<(Reply, Option<Usage>, u16), String> {
    let turn: Turn = serde_json::from_str(text).map_err(|e| {
        let shown: String = text.chars().take(200).collect();
        format!("the driver answered something that is not a turn ({e}): {shown}")
    })?;
    let text = turn.text.filter(|t| !t.is_empty());
    let reply = if turn.tool_calls.is_empty() {
        if text.is_none() && turn.stop_reason.as_deref() == Some("max_tokens") {
            Reply::Failed {
                reason: "the model ran out of tokens before it said anything \
                         (agent.max_tokens)"
                    .into(),
            }
        } else {
            Reply::Answer {
                text,
                artifacts: Vec::new(),
            }
        }
    } else {
        Reply::ToolCalls {
            text,
            calls: turn.tool_calls,
        }
    };
    Ok((reply, turn.usage, turn.status.unwrap_or(200)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Message, ToolSpec};

    #[test]
    fn the_request_is_mur_s_own_form_and_a_turn_parses() {
        let mut config = HttpConfig::new("https://api.anthropic.com", "claude");
        config.sampling.max_tokens = Some(100);
        let c = Conversation {
            task_id: "t".into(),
            system: "sys".into(),
            tools: vec![ToolSpec {
                name: "echo".into(),
                description: "Echoes.".into(),
                input_schema: json!({"type": "object"}),
            }],
            messages: vec![Message::User { text: "hi".into() }],
        };
        let r = request(&config, &c);
        assert_eq!(r["base_url"], "https://api.anthropic.com");
        assert_eq!(r["messages"][0], json!({"role": "user", "text": "hi"}));
        assert_eq!(r["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(r["options"], json!({"max_tokens": 100}));

        let (reply, usage, status) = parse(
            r#"{"text":"ok","tool_calls":[{"id":"a","name":"echo","arguments":{"x":1}}],
                "stop_reason":"tool_use","usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#,
        )
        .unwrap();
        assert!(
            matches!(reply, Reply::ToolCalls { ref calls, .. } if calls[0].arguments["x"] == 1)
        );
        assert_eq!((usage.unwrap().total_tokens, status), (5, 200));
        let (reply, _, _) = parse(r#"{"text":null,"stop_reason":"max_tokens"}"#).unwrap();
        assert!(matches!(reply, Reply::Failed { .. }));
        assert!(parse("[1]").is_err());
    }
}
