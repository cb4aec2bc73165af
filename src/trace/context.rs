//! W3C trace context (`traceparent`) between the members of a formation: every task
//! is a span, its calls to other members are child spans, and the ids are written in
//! the trace (docs/trace.md, Trace context), so the OTLP export is a pure transform.
//! Ids are random (16 and 8 bytes), written as lowercase hex.

use serde::{Deserialize, Serialize};

/// The request header that carries a span context (W3C trace-context, version 00).
pub const TRACEPARENT: &str = "traceparent";
/// Its companion: vendor state. mur neither writes nor trusts it, and strips a
/// component's.
pub const TRACESTATE: &str = "tracestate";

/// A 16-byte trace id or an 8-byte span id, as lowercase hex in records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id<const N: usize>(pub [u8; N]);

pub type TraceId = Id<16>;
pub type SpanId = Id<8>;

impl<const N: usize> Id<N> {
    /// A random id; never all zeros (W3C: an all-zero id is invalid).
    pub fn random() -> Self {
        loop {
            let mut bytes = [0u8; N];
            rand::fill(&mut bytes);
            if bytes.iter().any(|b| *b != 0) {
                return Id(bytes);
            }
        }
    }

    /// Lowercase hex, `2 * N` characters.
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Exactly `2 * N` lowercase hex digits, not all zero.
    pub fn parse(s: &str) -> Option<Self> {
        if s.len() != 2 * N || !s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let mut bytes = [0u8; N];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        bytes.iter().any(|b| *b != 0).then_some(Id(bytes))
    }
}

impl<const N: usize> std::fmt::Display for Id<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.hex())
    }
}

impl<const N: usize> Serialize for Id<N> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

impl<'de, const N: usize> Deserialize<'de> for Id<N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Id::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!("`{s}` is not {} lowercase hex digits", 2 * N))
        })
    }
}

/// One span's place: its trace and its own id. What `traceparent` carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanContext {
    pub trace_id: TraceId,
    pub span_id: SpanId,
}

impl SpanContext {
    /// The first span of a new trace.
    pub fn root() -> SpanContext {
        SpanContext {
            trace_id: TraceId::random(),
            span_id: SpanId::random(),
        }
    }

    /// A new span in the same trace (its parent is `self`).
    pub fn child(&self) -> SpanContext {
        SpanContext {
            trace_id: self.trace_id,
            span_id: SpanId::random(),
        }
    }

    /// A span in the same trace whose id is a function of this span and `what`:
    /// the first 8 bytes of SHA-256(trace id, span id, `what`). The spans no record
    /// names by id (a model turn, a tool call) get theirs so, the same at run time
    /// and in every export.
    pub fn derived(&self, what: &str) -> SpanContext {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(self.trace_id.0);
        h.update(self.span_id.0);
        h.update(what.as_bytes());
        let digest = h.finalize();
        let mut id = [0u8; 8];
        id.copy_from_slice(&digest[..8]);
        if id == [0; 8] {
            id[7] = 1;
        }
        SpanContext {
            trace_id: self.trace_id,
            span_id: Id(id),
        }
    }

    /// The `execute_tool` span of tool call `call_id` in the task whose span this is.
    pub fn tool_call(&self, call_id: &str) -> SpanContext {
        self.derived(&format!("tool_call {call_id}"))
    }

    /// `00-<trace id>-<span id>-01` (sampled: mur records every span).
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-01", self.trace_id, self.span_id)
    }

    /// A `traceparent` value: version `00` with exactly four fields, or a later
    /// version (whose first four fields are read, as the W3C spec asks). Anything
    /// else, an all-zero id or version `ff` is `None`.
    pub fn parse(value: &str) -> Option<SpanContext> {
        let mut fields = value.split('-');
        let version = fields.next()?;
        let (trace, span, flags) = (fields.next()?, fields.next()?, fields.next()?);
        let rest = fields.next();
        let version_ok = version.len() == 2
            && version != "ff"
            && version
                .bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase());
        if !version_ok || (version == "00" && rest.is_some()) {
            return None;
        }
        if flags.len() != 2 || !flags.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        Some(SpanContext {
            trace_id: TraceId::parse(trace)?,
            span_id: SpanId::parse(span)?,
        })
    }
}

/// A task's place in a trace, as `a2a_task_received` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSpan {
    /// The task's own span (its trace is the caller's when the caller was trusted).
    pub span: SpanContext,
    /// The span that asked for the task: a member call, the launcher's, `mur send`'s.
    pub parent: Option<SpanId>,
    /// A `traceparent` from a caller whose trace mur does not join (a public or a
    /// declared credential): kept as a link, the task starts a trace of its own.
    pub link: Option<SpanContext>,
}

impl TaskSpan {
    /// The span of a task started with `inbound` (the caller's `traceparent`, if
    /// any). `trusted`: the caller holds the operator token or a formation token, so
    /// the task joins the caller's trace; otherwise it starts its own and links.
    pub fn inbound(inbound: Option<SpanContext>, trusted: bool) -> TaskSpan {
        match inbound {
            Some(parent) if trusted => TaskSpan {
                span: parent.child(),
                parent: Some(parent.span_id),
                link: None,
            },
            link => TaskSpan {
                span: SpanContext::root(),
                parent: None,
                link,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_round_trips_and_refuses_what_w3c_refuses() {
        let ctx = SpanContext::root();
        let tp = ctx.traceparent();
        assert_eq!(tp.len(), 55);
        assert_eq!(SpanContext::parse(&tp), Some(ctx));
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let parsed = SpanContext::parse(good).unwrap();
        assert_eq!(parsed.trace_id.hex(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(parsed.span_id.hex(), "b7ad6b7169203331");
        // A later version may add fields.
        assert!(SpanContext::parse(&format!("01{}-extra", &good[2..])).is_some());
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1",
        ] {
            assert_eq!(SpanContext::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_a_trusted_caller_s_trace_is_joined() {
        let caller = SpanContext::root();
        let joined = TaskSpan::inbound(Some(caller), true);
        assert_eq!(joined.span.trace_id, caller.trace_id);
        assert_eq!(joined.parent, Some(caller.span_id));
        assert_ne!(joined.span.span_id, caller.span_id);
        assert_eq!(joined.link, None);
        let linked = TaskSpan::inbound(Some(caller), false);
        assert_ne!(linked.span.trace_id, caller.trace_id);
        assert_eq!(linked.parent, None);
        assert_eq!(linked.link, Some(caller));
        let fresh = TaskSpan::inbound(None, true);
        assert_eq!((fresh.parent, fresh.link), (None, None));
    }
}
