//! `agent.driver`: the model driver of `transport: http`, a component of world
//! `driver-component`. Each try of a model turn is one fresh instance (like a tool
//! call), with the capsule's grants, bounded by `agent.timeout` instead of the
//! per-call bound: a model may take minutes to answer.

use std::sync::Arc;
use std::time::Duration;

use super::{Artifact, Host, Loaded};
use crate::agent::BoxFuture;
use crate::agent::http::{Driver, Failure};
use crate::call_member::Trust;

mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "driver-component",
        exports: { default: async },
    });
}

pub(super) use bindings::DriverComponentPre as Pre;

/// The capsule's driver for one task.
pub struct WasmDriver {
    artifact: Arc<Artifact>,
    host: Arc<Host>,
    trust: Trust,
}

impl Host {
    /// The capsule's `agent.driver`, when it has one, for a task of `trust` (the stamp
    /// on the driver's requests to members).
    pub fn driver(self: &Arc<Self>, trust: Trust) -> Option<Arc<dyn Driver>> {
        let artifact = self.catalog.driver.clone()?;
        Some(Arc::new(WasmDriver {
            artifact,
            host: self.clone(),
            trust,
        }))
    }

    async fn call_driver(
        &self,
        artifact: &Artifact,
        request: &str,
        api_key: Option<&str>,
        limit: Duration,
        trust: Trust,
    ) -> Result<String, Failure> {
        // A driver that cannot be loaded fails every try alike: not worth another.
        let pre = match artifact.loaded(&self.cache).await.map_err(Failure::new)? {
            Loaded::Driver(pre) => pre,
            _ => return Err(Failure::new(format!("{} is not a driver", artifact.rel))),
        };
        let mut store = self
            .store_limited(trust, limit, None)
            .map_err(Failure::new)?;
        let what = format!("agent.driver {}", artifact.rel);
        let key = api_key.map(str::to_string);
        let ran = self
            .bounded_by(limit, &what, &mut store, async |store| {
                let driver = pre.instantiate_async(&mut *store).await?;
                driver
                    .murmur_capsule_driver()
                    .call_turn(&mut *store, request, key.as_deref())
                    .await
            })
            .await
            .map_err(Failure::new)?;
        ran.map_err(|f| Failure {
            status: f.status,
            message: format!("{what}: {}", f.message),
            retryable: f.retryable,
            retry_after: f.retry_after_ms.map(Duration::from_millis),
        })
    }
}

/// `secret`'s occurrences in `text` replaced, so a driver that echoes its key (in an
/// error, in the model's text) never hands it to the trace or the model.
fn redact(text: String, secret: Option<&str>) -> String {
    match secret {
        Some(k) if !k.is_empty() && text.contains(k) => text.replace(k, "[redacted]"),
        _ => text,
    }
}

impl Driver for WasmDriver {
    fn turn<'a>(
        &'a self,
        request: &'a str,
        api_key: Option<&'a str>,
        limit: Duration,
    ) -> BoxFuture<'a, Result<String, Failure>> {
        Box::pin(async move {
            self.host
                .call_driver(&self.artifact, request, api_key, limit, self.trust)
                .await
                .map(|answer| redact(answer, api_key))
                .map_err(|mut f| {
                    f.message = redact(f.message, api_key);
                    f
                })
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_key_is_redacted() {
        assert_eq!(
            super::redact("bad key sk-123 here".into(), Some("sk-123")),
            "bad key [redacted] here"
        );
        assert_eq!(super::redact("x".into(), None), "x");
    }
}
