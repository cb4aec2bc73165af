//! The wait chain: which members' tasks are waiting, one on the next, for the call a
//! request makes (docs/design/call-member.md, Wait cycles). call-member sends it as
//! `x-murmur-call-chain`, the calling task's own chain with the caller's task added;
//! the door trusts it only from a formation token (as it trusts `traceparent`), and
//! refuses at once a call whose chain holds one of its own live tasks: that task is
//! waiting on this call, so the call could never be taken.

use axum::http::HeaderMap;

use super::Credential;
use crate::a2a::TaskId;

/// The request header: `member=task_id` links, caller last, separated by spaces.
pub const CHAIN_HEADER: &str = "x-murmur-call-chain";
/// A longer chain is no chain: a formation has at most this many members waiting.
const MAX_LINKS: usize = 64;

/// One waiting task: the member that runs it and its id at that member's door.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub member: String,
    pub task_id: TaskId,
}

/// The tasks waiting on a call, first caller first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallChain(Vec<Link>);

fn well_formed(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl CallChain {
    /// The chain a request carries: exactly one well-formed header from a formation
    /// token; anything else (any other caller, several headers, a bad link) is none.
    pub fn of(caller: &Credential, headers: &HeaderMap) -> CallChain {
        if !matches!(caller, Credential::Member(_)) {
            return CallChain::default();
        }
        let mut values = headers.get_all(CHAIN_HEADER).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return CallChain::default();
        };
        value
            .to_str()
            .ok()
            .and_then(CallChain::parse)
            .unwrap_or_default()
    }

    fn parse(text: &str) -> Option<CallChain> {
        let links = text
            .split(' ')
            .map(|link| {
                let (member, task) = link.split_once('=')?;
                (well_formed(member, 32) && well_formed(task, 128)).then(|| Link {
                    member: member.to_string(),
                    task_id: task.to_string().into(),
                })
            })
            .collect::<Option<Vec<Link>>>()?;
        (links.len() <= MAX_LINKS).then_some(CallChain(links))
    }

    /// This chain with `member`'s task `task_id` waiting last.
    pub fn then(&self, member: &str, task_id: &TaskId) -> CallChain {
        let mut links = self.0.clone();
        links.push(Link {
            member: member.to_string(),
            task_id: task_id.clone(),
        });
        CallChain(links)
    }

    /// The header's value; `None` for an empty chain.
    pub fn header_value(&self) -> Option<String> {
        if self.0.is_empty() || self.0.len() > MAX_LINKS {
            return None;
        }
        let links: Vec<String> = self
            .0
            .iter()
            .map(|l| format!("{}={}", l.member, l.task_id.as_str()))
            .collect();
        Some(links.join(" "))
    }

    /// The cycle a call closes, as `a → b → a`, when a task of the callee's own
    /// (`live` says which ids are) is waiting on it.
    pub fn closes(&self, live: impl Fn(&TaskId) -> bool) -> Option<String> {
        let at = self.0.iter().position(|l| live(&l.task_id))?;
        let mut names: Vec<&str> = self.0[at..].iter().map(|l| l.member.as_str()).collect();
        names.push(&self.0[at].member);
        Some(names.join(" → "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(CHAIN_HEADER, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_a_member_s_one_well_formed_chain_counts() {
        let member = Credential::Member("b".to_string());
        let one = headers(&["a=tsk_1 b=tsk_2"]);
        assert_eq!(
            CallChain::of(&member, &one),
            CallChain::default()
                .then("a", &"tsk_1".to_string().into())
                .then("b", &"tsk_2".to_string().into())
        );
        for bad in [
            headers(&["a=tsk_1", "b=tsk_2"]),
            headers(&["a=tsk 1"]),
            headers(&["a=tsk_1  b=tsk_2"]),
            headers(&["a"]),
            headers(&["a=tsk/1"]),
        ] {
            assert_eq!(CallChain::of(&member, &bad), CallChain::default());
        }
        assert_eq!(
            CallChain::of(&Credential::Operator, &one),
            CallChain::default()
        );
        assert_eq!(
            CallChain::of(&Credential::Public, &one),
            CallChain::default()
        );
        let long = vec!["a=t"; MAX_LINKS + 1].join(" ");
        assert_eq!(
            CallChain::of(&member, &headers(&[&long])),
            CallChain::default()
        );
    }

    #[test]
    fn a_call_closes_the_cycle_from_the_callee_s_waiting_task() {
        let chain = CallChain::parse("lead=t0 a=t1 b=t2 c=t3").unwrap();
        let mine = |id: &TaskId| id.as_str() == "t1";
        assert_eq!(chain.closes(mine).as_deref(), Some("a → b → c → a"));
        assert_eq!(chain.closes(|_| false), None);
        assert_eq!(
            chain.header_value().as_deref(),
            Some("lead=t0 a=t1 b=t2 c=t3")
        );
        assert_eq!(CallChain::default().header_value(), None);
    }
}
