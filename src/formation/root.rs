//! The formation task's trace root (docs/trace.md, Trace context): the launcher opens
//! it when it starts the entry member with `--task` (the entry task's parent) and,
//! with live export on, sends it as the `invoke_workflow` span once the entry member
//! has ended, timed by the launcher's own clock. The launcher keeps no records: this
//! span is the one thing it sends.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::trace::context::SpanContext;
use crate::trace::export::{launcher_resource, workflow_span};
use crate::trace::live::{Live, Target};

/// An open root span.
#[derive(Debug)]
pub struct Root {
    ctx: SpanContext,
    started: SystemTime,
}

impl Root {
    /// A new trace, its root span starting now.
    pub fn open() -> Root {
        Root {
            ctx: SpanContext::root(),
            started: SystemTime::now(),
        }
    }

    /// The `--trace-parent` the entry member is given.
    pub fn traceparent(&self) -> String {
        self.ctx.traceparent()
    }

    /// Ends the span now and sends it to `target`, waiting as a session's end waits
    /// for its last spans (at most `live::FINAL_FLUSH`); a collector that is down
    /// gives W-TRC-001 (once for the formation) and costs nothing else.
    pub fn close(self, formation: &str, target: Option<&Target>) {
        let Some(target) = target else { return };
        let live = match Live::start(target.clone(), Some(formation.to_string()), &[]) {
            Ok(live) => live,
            Err(e) => {
                tracing::info!("the formation's root span is not sent: {e}");
                return;
            }
        };
        let epoch = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let span = workflow_span(
            self.ctx.trace_id.hex(),
            self.ctx.span_id.hex(),
            formation,
            epoch(self.started),
            epoch(SystemTime::now()),
        );
        live.send(launcher_resource(formation), vec![span]);
        let dropped = live.finish();
        if dropped > 0 {
            tracing::info!("the formation's root span was not delivered");
        }
    }
}
