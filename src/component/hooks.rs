//! `hooks[]`: components run on session events. A synchronous hook runs before the
//! session goes on; an asynchronous one runs alongside and is drained at the end. A
//! synchronous before_tool hook that returns an error refuses the call: its text goes
//! to the model as the tool's error.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::{Artifact, Host, Loaded};
use crate::agent::{BoxFuture, Tool, ToolCall, ToolOutput};
use crate::catalogue::W_CMP_001;
use crate::diag::Diagnostic;
use crate::manifest::HookEvent;

mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "hook-component",
        exports: { default: async },
        with: { "murmur:message/send": crate::component::message::send },
    });
}

pub(super) use bindings::HookComponentPre as Pre;

/// Asynchronous hooks still running.
#[derive(Default)]
pub struct Pending(Mutex<JoinSet<()>>);

impl Host {
    /// Runs `event`'s hooks with `record`. Synchronous ones run now, in manifest order;
    /// the first error of a before_tool hook is returned (the call is refused), other
    /// errors are W-CMP-001 on stderr. Asynchronous ones are started and left running.
    pub async fn fire(self: &Arc<Self>, event: HookEvent, record: Value) -> Result<(), String> {
        let record = record.to_string();
        for (hook, artifact) in &self.catalog.hooks {
            if hook.event != event {
                continue;
            }
            if hook.is_async {
                let (host, artifact, record) = (self.clone(), artifact.clone(), record.clone());
                let mut set = self.pending.0.lock().unwrap_or_else(|e| e.into_inner());
                set.spawn(async move {
                    if let Err(e) = host.run_hook(&artifact, event, &record).await {
                        warn(&artifact, event, &e);
                    }
                });
                continue;
            }
            if let Err(e) = self.run_hook(artifact, event, &record).await {
                if event == HookEvent::BeforeTool {
                    return Err(e);
                }
                warn(artifact, event, &e);
            }
        }
        Ok(())
    }

    /// The session's end: its session_end hooks, then every asynchronous hook still
    /// running, all within [`crate::timing::HOOK_DRAIN`] (so the wind-down's 20 s exit
    /// holds however many hooks there are); what still runs then is stopped.
    pub async fn end(self: &Arc<Self>, record: Value) {
        let bound = crate::timing::scaled(crate::timing::HOOK_DRAIN);
        let all = async {
            let _ = self.fire(HookEvent::SessionEnd, record).await;
            let mut set =
                std::mem::take(&mut *self.pending.0.lock().unwrap_or_else(|e| e.into_inner()));
            while set.join_next().await.is_some() {}
        };
        if tokio::time::timeout(bound, all).await.is_err() {
            crate::output::stderr_line(Diagnostic::new(
                W_CMP_001,
                format!(
                    "hooks still ran {} after the session ended; they were stopped",
                    humantime::format_duration(bound)
                ),
            ));
        }
    }

    async fn run_hook(
        &self,
        artifact: &Artifact,
        event: HookEvent,
        record: &str,
    ) -> Result<(), String> {
        let Loaded::Hook(pre) = artifact.loaded(&self.cache).await? else {
            return Err(format!("{} is not a hook", artifact.rel));
        };
        // A hook runs for no task of its own: its requests to members are untrusted,
        // and its murmur:message/send calls are its own, recorded under the task the
        // event names (none for the session's events).
        let trust = crate::call_member::Trust::Untrusted;
        let calls = self.grants.peers.clone().map(|peers| {
            let task_id = serde_json::from_str::<Value>(record)
                .ok()
                .and_then(|r| r["task_id"].as_str().map(str::to_string))
                .unwrap_or_default();
            crate::call_member::Calls::new(crate::call_member::CallsSpec {
                task_id: task_id.into(),
                peers,
                trace: self.trace.clone(),
                trust,
                config: crate::call_member::CallConfig::default(),
                span: None,
                session_deadline: None,
                chain: None,
            })
        });
        let sender = calls.clone().map(|calls| super::message::Sender {
            calls,
            call_id: event.as_str().to_string(),
            sent: 0,
        });
        let mut store = self.store(trust, sender)?;
        let what = format!("{} hook `{}`", event.as_str(), artifact.rel);
        let event = event.as_str();
        let said = self
            .bounded(&what, &mut store, async |store| {
                let hook = pre.instantiate_async(&mut *store).await?;
                hook.murmur_capsule_hook()
                    .call_handle(&mut *store, event, record)
                    .await
            })
            .await;
        // What the hook's calls still follow stops with it.
        if let Some(calls) = calls {
            calls.end();
        }
        said?.map_err(|reason| format!("{what} refused: {reason}"))
    }

    /// `tools`, each wrapped so that its calls run the before_tool and after_tool hooks
    /// (as they are: none wraps nothing).
    pub fn hooked(
        self: &Arc<Self>,
        task_id: &str,
        tools: Vec<Arc<dyn Tool>>,
    ) -> Vec<Arc<dyn Tool>> {
        if !self.hooks_on(HookEvent::BeforeTool) && !self.hooks_on(HookEvent::AfterTool) {
            return tools;
        }
        tools
            .into_iter()
            .map(|inner| {
                Arc::new(Hooked {
                    inner,
                    host: self.clone(),
                    task_id: task_id.to_string(),
                }) as Arc<dyn Tool>
            })
            .collect()
    }
}

fn warn(artifact: &Artifact, event: HookEvent, e: &str) {
    crate::output::stderr_line(Diagnostic::new(
        W_CMP_001,
        format!("{} hook {} failed: {e}", event.as_str(), artifact.rel),
    ));
}

/// A tool whose calls pass the before_tool and after_tool hooks.
struct Hooked {
    inner: Arc<dyn Tool>,
    host: Arc<Host>,
    task_id: String,
}

impl Tool for Hooked {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn input_schema(&self) -> Value {
        self.inner.input_schema()
    }
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let started = Instant::now();
            let before = json!({
                "task_id": self.task_id, "call_id": call.id, "tool": call.name,
                "arguments": call.arguments,
            });
            if let Err(reason) = self.host.fire(HookEvent::BeforeTool, before).await {
                return ToolOutput::error(reason);
            }
            let out = self.inner.call(call).await;
            let after = json!({
                "task_id": self.task_id, "call_id": call.id, "tool": call.name,
                "is_error": out.is_error, "output": out.output,
                "duration_ms": started.elapsed().as_millis() as u64,
            });
            let _ = self.host.fire(HookEvent::AfterTool, after).await;
            out
        })
    }
}
