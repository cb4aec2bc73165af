//! A `tools[]` entry as a [`Tool`] the agent offers the model: its description from
//! murmur.yaml, its schema from the component (`schema()`), and each call one
//! instance of it from the pre-instantiated component.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::message::Sender;
use super::{Artifact, Host, Loaded, engine};
use crate::agent::{BoxFuture, Tool, ToolCall, ToolOutput};
use crate::call_member::{Calls, Trust};

mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "tool-component",
        exports: { default: async },
        with: { "murmur:message/send": crate::component::message::send },
    });
}

pub(super) use bindings::ToolComponentPre as Pre;

/// One tool of the capsule.
pub struct WasmTool {
    name: String,
    description: String,
    schema: Value,
    artifact: Arc<Artifact>,
    host: Arc<Host>,
    trust: Trust,
    /// The task's calls: where its murmur:message/send calls go (`None` outside a
    /// formation).
    calls: Option<Arc<Calls>>,
}

impl Host {
    /// The capsule's tools, as the model is to see them. Each schema comes from the
    /// cache beside the compiled component when there is one, else from one call of
    /// the component's `schema()` (and is cached). A tool whose schema cannot be had
    /// is still offered, with an open object schema; its calls report why. `trust` is
    /// the task's: the stamp on the tools' requests to members; `calls` the task's
    /// calls, which the tools' murmur:message/send calls join.
    pub async fn tools(
        self: &Arc<Self>,
        trust: Trust,
        calls: Option<Arc<Calls>>,
    ) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for (t, artifact) in &self.catalog.tools {
            let schema = match self.schema(artifact, &t.name).await {
                Ok(s) => s,
                Err(e) => {
                    crate::output::stderr_line(crate::diag::Diagnostic::new(
                        crate::catalogue::W_CMP_002,
                        format!("tool `{}`: {e}", t.name),
                    ));
                    serde_json::json!({"type": "object"})
                }
            };
            tools.push(Arc::new(WasmTool {
                name: t.name.clone(),
                description: t.description.clone(),
                schema,
                artifact: artifact.clone(),
                host: self.clone(),
                trust,
                calls: calls.clone(),
            }));
        }
        tools
    }

    fn schema_path(&self, artifact: &Artifact) -> PathBuf {
        engine::cache_path(&self.cache, artifact.sha256()).with_extension("schema.json")
    }

    async fn schema(&self, artifact: &Artifact, name: &str) -> Result<Value, String> {
        let cached = self.schema_path(artifact);
        if let Some(v) = std::fs::read(&cached)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .filter(Value::is_object)
        {
            return Ok(v);
        }
        let Loaded::Tool(pre) = artifact.loaded(&self.cache).await? else {
            return Err(format!("{} is not a tool", artifact.rel));
        };
        let mut store = self.store(Trust::Untrusted, None)?;
        let what = format!("tool `{name}` (schema)");
        let text = self
            .bounded::<String>(&what, &mut store, async |store| {
                let tool = pre.instantiate_async(&mut *store).await?;
                tool.murmur_capsule_tool().call_schema(&mut *store).await
            })
            .await?;
        let value: Value = serde_json::from_str(&text)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| format!("schema() returned no JSON object: {}", clip(&text)))?;
        // Owner-only like the rest of the cache (docs/records.md); a lost write is
        // only a schema asked again.
        let _ = crate::fsutil::write_atomic(
            &cached,
            value.to_string().as_bytes(),
            0o600,
            crate::fsutil::Durability::Unsynced,
        );
        Ok(value)
    }

    /// Runs call `call_id` of tool `name`; its murmur:message/send calls join `calls`.
    pub async fn call_tool(
        &self,
        artifact: &Artifact,
        name: &str,
        arguments: &Value,
        trust: Trust,
        call_id: &str,
        calls: Option<Arc<Calls>>,
    ) -> ToolOutput {
        let pre = match artifact.loaded(&self.cache).await {
            Ok(Loaded::Tool(pre)) => pre,
            Ok(_) => {
                return ToolOutput::error(format!("{} is not a tool", artifact.rel));
            }
            Err(e) => return ToolOutput::error(e),
        };
        let sender = calls.map(|calls| Sender {
            calls,
            call_id: call_id.to_string(),
            sent: 0,
        });
        let mut store = match self.store(trust, sender) {
            Ok(s) => s,
            Err(e) => return ToolOutput::error(e),
        };
        let args = if arguments.is_null() {
            "{}".to_string()
        } else {
            arguments.to_string()
        };
        let what = format!("tool `{name}`");
        let ran = self
            .bounded(&what, &mut store, async |store| {
                let tool = pre.instantiate_async(&mut *store).await?;
                tool.murmur_capsule_tool()
                    .call_call(&mut *store, &args)
                    .await
            })
            .await;
        match ran {
            Ok(out) => ToolOutput {
                output: out.content,
                is_error: out.is_error,
            },
            Err(e) => ToolOutput::error(e),
        }
    }
}

fn clip(text: &str) -> &str {
    &text[..text.floor_char_boundary(200)]
}

impl Tool for WasmTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        self.schema.clone()
    }
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.host.call_tool(
            &self.artifact,
            &self.name,
            &call.arguments,
            self.trust,
            &call.id,
            self.calls.clone(),
        ))
    }
}
