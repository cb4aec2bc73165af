//! The trust class of a task: where its request came from, and for a peer task, the
//! class its caller stamped (the spec's "stamps the origin peer with the trust class
//! of the task the component is running for"). A chain is only as trusted as the
//! task at its root. Decisions in docs/design/call-member.md, Trust.

use axum::http::HeaderMap;

use super::Credential;
use crate::trace::context::{SpanContext, TRACEPARENT, TaskSpan};

/// The request header naming where a task came from; call-member stamps `peer`.
pub const ORIGIN_HEADER: &str = "x-murmur-task-origin";
/// The request header carrying the trust class of the calling task.
pub const TRUST_HEADER: &str = "x-murmur-task-trust";
/// The origin call-member stamps: the task comes from a peer member.
pub const ORIGIN_PEER: &str = "peer";

/// The trust class of a task, stamped on every call it makes (`x-murmur-task-trust`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Started by the session's operator (`--task`, the operator token) or by a
    /// credential the capsule declared (`network.authentication.bearer_env`).
    Trusted,
    /// Started by an anonymous caller of a public door, or by nothing known.
    Untrusted,
}

impl Trust {
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Trusted => "trusted",
            Trust::Untrusted => "untrusted",
        }
    }

    /// The class of a task the door accepted from `caller`. A task a member started
    /// carries the class its caller stamped; without a stamp it is untrusted.
    /// `stamped` counts only for a formation token: any other caller's header is
    /// ignored, so nobody outside the formation can claim a class.
    pub fn of(caller: &Credential, stamped: Option<Trust>) -> Trust {
        match caller {
            Credential::Operator | Credential::Declared(_) => Trust::Trusted,
            Credential::Public => Trust::Untrusted,
            Credential::Member(_) => stamped.unwrap_or(Trust::Untrusted),
        }
    }

    /// The stamp on a request: exactly one `x-murmur-task-trust` whose value is
    /// `trusted` or `untrusted`. Several, or any other value, is no stamp.
    pub fn stamped(headers: &HeaderMap) -> Option<Trust> {
        let mut values = headers.get_all(TRUST_HEADER).iter();
        let value = values.next()?;
        if values.next().is_some() {
            return None;
        }
        match value.as_bytes() {
            b"trusted" => Some(Trust::Trusted),
            b"untrusted" => Some(Trust::Untrusted),
            _ => None,
        }
    }
}

/// The span of a task this request starts. Its `traceparent` (exactly one, well
/// formed) is joined only for the operator or a member: a formation token or the
/// operator token proves the caller is mur's own. Anyone else's becomes a link.
pub fn task_span(caller: &Credential, headers: &HeaderMap) -> TaskSpan {
    let mut values = headers.get_all(TRACEPARENT).iter();
    let inbound = match (values.next(), values.next()) {
        (Some(v), None) => v.to_str().ok().and_then(SpanContext::parse),
        _ => None,
    };
    let trusted = matches!(caller, Credential::Operator | Credential::Member(_));
    TaskSpan::inbound(inbound, trusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(TRUST_HEADER, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_one_well_formed_stamp_counts() {
        assert_eq!(Trust::stamped(&headers(&[])), None);
        assert_eq!(Trust::stamped(&headers(&["trusted"])), Some(Trust::Trusted));
        assert_eq!(
            Trust::stamped(&headers(&["untrusted"])),
            Some(Trust::Untrusted)
        );
        assert_eq!(Trust::stamped(&headers(&["Trusted"])), None);
        assert_eq!(Trust::stamped(&headers(&["trusted "])), None);
        assert_eq!(Trust::stamped(&headers(&["trusted", "trusted"])), None);
    }

    #[test]
    fn a_traceparent_is_joined_only_for_the_operator_or_a_member() {
        let caller = SpanContext::root();
        let mut h = HeaderMap::new();
        h.append(TRACEPARENT, caller.traceparent().parse().unwrap());
        for who in [Credential::Operator, Credential::Member("a".into())] {
            let span = task_span(&who, &h);
            assert_eq!(span.span.trace_id, caller.trace_id, "{who}");
            assert_eq!(span.parent, Some(caller.span_id));
        }
        for who in [Credential::Public, Credential::Declared("CI".into())] {
            let span = task_span(&who, &h);
            assert_ne!(span.span.trace_id, caller.trace_id, "{who}");
            assert_eq!((span.parent, span.link), (None, Some(caller)));
        }
        // Two headers are none.
        h.append(TRACEPARENT, caller.traceparent().parse().unwrap());
        let span = task_span(&Credential::Operator, &h);
        assert_eq!((span.parent, span.link), (None, None));
    }

    #[test]
    fn a_stamp_counts_only_for_a_member() {
        let member = Credential::Member("planner".into());
        let stamp = Some(Trust::Trusted);
        assert_eq!(Trust::of(&member, stamp), Trust::Trusted);
        assert_eq!(Trust::of(&member, None), Trust::Untrusted);
        assert_eq!(Trust::of(&Credential::Public, stamp), Trust::Untrusted);
        assert_eq!(
            Trust::of(&Credential::Operator, Some(Trust::Untrusted)),
            Trust::Trusted
        );
        assert_eq!(
            Trust::of(&Credential::Declared("CI_TOKEN".into()), None),
            Trust::Trusted
        );
    }
}
