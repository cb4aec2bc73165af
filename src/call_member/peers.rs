//! The member side of a formation: the one owner of the members this one may call.
//! A token per callee (the formation channel's first line), a door URL per callee (its
//! later `doors` lines), the member's `capabilities.network.allow` and the one reach
//! rule over it (W-RUN-008 at launch and every call), `MURMUR_FORMATION_PEERS`, and
//! the routing of the virtual addresses `<member>.formation.invalid` its components
//! use. The session, call-member and the component host all go through it.

pub use crate::manifest::rules::{reaches_host, split_host_port};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use tokio::sync::watch;

use super::{CallError, ORIGIN_HEADER, TRUST_HEADER, Trust};
use crate::catalogue::W_RUN_008;
use crate::channel;
use crate::credential::FormationToken;
use crate::diag::Diagnostic;
use crate::ids::MemberName;
use crate::timing;
use crate::virtual_address::{VIRTUAL_DOMAIN, virtual_member};

/// `MURMUR_FORMATION_PEERS`: the components' list of virtual addresses.
pub const PEERS_ENV: &str = crate::env::MURMUR_FORMATION_PEERS;
/// Every door listens here, at a port chosen at launch.
const DOOR_HOST: &str = "127.0.0.1";
/// Below the door's 10 s keep-alive (docs/design/door.md), so a pooled connection is
/// dropped here before the door closes it under a request.
const POOL_IDLE: Duration = Duration::from_secs(5);

/// Where a component's request goes, as [`Peers::route`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    /// Not a virtual address: not the formation's to route. The host sends it as it
    /// is, under its own `capabilities.network.allow` check ([`reaches`]).
    Direct,
    /// A callee's door: send the request to `url`. The headers now hold the callee's
    /// token and the trust stamp, and nothing the component set in their place.
    Peer { member: String, url: Url },
}

/// A member's callees. Holds tokens: its `Debug` names the callees only.
pub struct Peers {
    /// Roster order.
    callees: Vec<MemberName>,
    tokens: HashMap<MemberName, FormationToken>,
    doors: watch::Sender<BTreeMap<MemberName, Url>>,
    /// Callees the launcher said exited (`exited` channel lines).
    exited: watch::Sender<BTreeMap<MemberName, channel::Exited>>,
    allow: RwLock<Vec<String>>,
    door_wait: Duration,
    /// This member's own roster name: the last link of each call's wait chain.
    me: Option<MemberName>,
    pub(crate) client: reqwest::Client,
}

impl fmt::Debug for Peers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peers")
            .field("callees", &self.callees)
            .field("doors", &*self.doors.borrow())
            .field("allow", &*self.allow())
            .finish_non_exhaustive()
    }
}

impl Peers {
    /// `tokens`: one per callee, in roster order, as the channel's first line holds
    /// them (`channel::Credentials::tokens`). `allow`: the member's
    /// `capabilities.network.allow` (or empty until [`Peers::set_allow`]).
    pub fn new(
        tokens: Vec<(MemberName, FormationToken)>,
        allow: Vec<String>,
    ) -> Result<Peers, reqwest::Error> {
        let client = crate::a2a_client::http()
            .pool_idle_timeout(POOL_IDLE)
            .build()?;
        Ok(Peers {
            callees: tokens.iter().map(|(n, _)| n.clone()).collect(),
            tokens: tokens.into_iter().collect(),
            doors: watch::Sender::new(BTreeMap::new()),
            exited: watch::Sender::new(BTreeMap::new()),
            allow: RwLock::new(allow),
            door_wait: timing::scaled(timing::DOOR_URL_WAIT),
            me: None,
            client,
        })
    }

    /// How long a call waits for a door URL not yet arrived (default: the spec's
    /// 10 s, `timing::DOOR_URL_WAIT`).
    pub fn with_door_wait(mut self, wait: Duration) -> Peers {
        self.door_wait = wait;
        self
    }

    /// This member's roster name, named in the wait chain its calls carry.
    pub fn with_me(mut self, me: MemberName) -> Peers {
        self.me = Some(me);
        self
    }

    pub fn me(&self) -> Option<&MemberName> {
        self.me.as_ref()
    }

    /// Sets `capabilities.network.allow` once the capsule is known (the channel's
    /// first line, and so the tokens, come before the capsule is staged).
    pub fn set_allow(&self, allow: Vec<String>) {
        *self.allow.write().unwrap_or_else(|p| p.into_inner()) = allow;
    }

    fn allow(&self) -> std::sync::RwLockReadGuard<'_, Vec<String>> {
        self.allow.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The members it may call, in roster order.
    pub fn callees(&self) -> &[MemberName] {
        &self.callees
    }

    pub fn may_call(&self, member: &str) -> bool {
        self.tokens.contains_key(member)
    }

    pub(crate) fn token(&self, member: &str) -> Option<&FormationToken> {
        self.tokens.get(member)
    }

    /// Takes door URLs from a `doors` line. Names that are not callees, and URLs that
    /// do not parse as `http://`, are ignored.
    pub fn add_doors(&self, doors: BTreeMap<MemberName, String>) {
        self.doors.send_modify(|known| {
            for (name, url) in doors {
                if !self.tokens.contains_key(&name) {
                    continue;
                }
                match Url::parse(&url) {
                    Ok(u) if u.scheme() == "http" && u.host_str().is_some() => {
                        known.insert(name, u);
                    }
                    _ => tracing::warn!("ignoring door URL for `{name}`: not an http URL"),
                }
            }
        });
    }

    /// Takes a callee's exit from an `exited` line; a name that is not a callee is
    /// ignored.
    pub fn add_exited(&self, exited: channel::Exited) {
        if self.tokens.contains_key(&exited.member) {
            self.exited.send_modify(|known| {
                known.insert(exited.member.clone(), exited);
            });
        }
    }

    /// Reads the channel's later lines into [`Peers::add_doors`] and
    /// [`Peers::add_exited`] until it closes.
    pub fn follow(self: &Arc<Self>, mut reader: channel::Reader) -> tokio::task::JoinHandle<()> {
        let peers = self.clone();
        tokio::spawn(async move {
            while let Some(later) = reader.next().await {
                match later {
                    channel::Later::Doors(doors) => peers.add_doors(doors),
                    channel::Later::Exited(exited) => peers.add_exited(exited),
                }
            }
        })
    }

    /// The refusal for a callee the launcher said exited, if it did.
    pub fn exited(&self, member: &str) -> Option<CallError> {
        self.exited.borrow().get(member).map(|e| CallError::Exited {
            member: member.to_string(),
            at: e.at.clone(),
            how: e.how.clone(),
        })
    }

    /// Waits until the launcher says `member` exited: its refusal.
    pub async fn await_exit(&self, member: &str) -> CallError {
        let mut rx = self.exited.subscribe();
        let _ = rx.wait_for(|e| e.contains_key(member)).await;
        // The sender lives as long as `self`: `wait_for` returns only once it is in.
        self.exited(member).unwrap_or(CallError::Ended)
    }

    /// What ended a call whose transport failed with `failure`: the callee's exit
    /// when the launcher reports one within `within` (a killed callee's connection
    /// drops a moment before its launcher reaps it), else `failure` itself.
    pub async fn exit_or(&self, member: &str, failure: CallError, within: Duration) -> CallError {
        let mut rx = self.exited.subscribe();
        let _ = tokio::time::timeout(within, rx.wait_for(|e| e.contains_key(member))).await;
        self.exited(member).unwrap_or(failure)
    }

    /// The callee's real door URL, waiting up to the door wait for it to arrive; at
    /// once the refusal when the callee exited.
    pub async fn door(&self, member: &str) -> Result<Url, CallError> {
        if !self.may_call(member) {
            return Err(self.not_callable(member));
        }
        if let Some(exited) = self.exited(member) {
            return Err(exited);
        }
        let mut rx = self.doors.subscribe();
        let mut gone = self.exited.subscribe();
        let found = tokio::select! {
            found = tokio::time::timeout(
                self.door_wait,
                rx.wait_for(|doors| doors.contains_key(member)),
            ) => found.ok().and_then(Result::ok).map(|doors| doors[member].clone()),
            _ = gone.wait_for(|e| e.contains_key(member)) => None,
        };
        match found {
            Some(url) => Ok(url),
            None => Err(self.exited(member).unwrap_or(CallError::NoDoor {
                member: member.to_string(),
                waited: self.door_wait,
            })),
        }
    }

    /// The one refusal for a member it may not call and for no member at all.
    pub(crate) fn not_callable(&self, member: &str) -> CallError {
        CallError::NotCallable {
            member: member.chars().take(64).collect(),
            callees: self.callees.iter().map(MemberName::to_string).collect(),
        }
    }

    /// What every call goes through: the one refusal for a non-callee, then the door
    /// URL (waited for), then the reach rule over `capabilities.network.allow`.
    pub async fn reach(&self, member: &str) -> Result<Url, CallError> {
        let door = self.door(member).await?;
        if reaches(&self.allow(), &door) {
            Ok(door)
        } else {
            Err(CallError::OutOfReach {
                member: member.to_string(),
                door: door.to_string(),
            })
        }
    }

    /// W-RUN-008 at launch ([`network_warning`]), with the doors known so far.
    pub fn network_warning(&self, member: &str) -> Option<Diagnostic> {
        let known = self.doors.borrow().clone();
        let callees: Vec<(&str, Option<&Url>)> = self
            .callees
            .iter()
            .map(|c| (c.as_str(), known.get(c)))
            .collect();
        network_warning(member, &callees, &self.allow())
    }

    /// `MURMUR_FORMATION_PEERS`'s value for the member's components: each callee at
    /// its virtual address, in roster order, space separated; `None` when it may call
    /// nobody (the variable is then not set at all, never set empty).
    pub fn peers_env(&self) -> Option<String> {
        if self.callees.is_empty() {
            return None;
        }
        Some(
            self.callees
                .iter()
                .map(|c| format!("{c}=http://{c}.{VIRTUAL_DOMAIN}"))
                .collect::<Vec<_>>()
                .join(" "),
        )
    }

    /// Routes a component's request. [`Routed::Direct`]: `url` is not under
    /// `formation.invalid`. For `http://<callee>.formation.invalid/<path>?<query>`:
    /// waits for the door URL, checks the real URL against
    /// `capabilities.network.allow`, removes any `Authorization`,
    /// `x-murmur-task-origin`, `x-murmur-task-trust`, `traceparent` and `tracestate`
    /// the component set, attaches the callee's token, `trust` and `span` (the task's,
    /// as `traceparent`), and returns the real URL. Any other name under
    /// `formation.invalid` (a member it may not call, no member, the bare domain, an
    /// https URL, an explicit port) gets the one refusal, before any connection.
    pub async fn route(
        &self,
        url: &str,
        headers: &mut HeaderMap,
        trust: Trust,
        span: Option<crate::trace::context::SpanContext>,
    ) -> Result<Routed, CallError> {
        let Ok(parsed) = Url::parse(url) else {
            return Ok(Routed::Direct);
        };
        let Some(host) = parsed.host_str().map(str::to_ascii_lowercase) else {
            return Ok(Routed::Direct);
        };
        let Some(member) = virtual_member(&host) else {
            return Ok(Routed::Direct);
        };
        if parsed.scheme() != "http" || parsed.port().is_some() || !self.may_call(member) {
            return Err(self.not_callable(&host));
        }
        let mut real = self.reach(member).await?;
        real.set_path(parsed.path());
        real.set_query(parsed.query());
        headers.remove(AUTHORIZATION);
        headers.remove(ORIGIN_HEADER);
        headers.remove(TRUST_HEADER);
        headers.remove(crate::trace::context::TRACEPARENT);
        headers.remove(crate::trace::context::TRACESTATE);
        // Only the runtime says which tasks wait on a call; a component's own
        // requests carry no chain (docs/design/call-member.md, Wait cycles).
        headers.remove(crate::door::chain::CHAIN_HEADER);
        let token = self
            .token(member)
            .ok_or_else(|| self.not_callable(member))?;
        let mut auth = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
            .map_err(|_| self.not_callable(member))?;
        auth.set_sensitive(true);
        headers.insert(AUTHORIZATION, auth);
        headers.insert(ORIGIN_HEADER, HeaderValue::from_static(super::ORIGIN_PEER));
        headers.insert(TRUST_HEADER, HeaderValue::from_static(trust.as_str()));
        if let Some(value) = span.and_then(|s| HeaderValue::from_str(&s.traceparent()).ok()) {
            headers.insert(crate::trace::context::TRACEPARENT, value);
        }
        Ok(Routed::Peer {
            member: member.to_string(),
            url: real,
        })
    }
}

/// W-RUN-008: `member` may call `callees` (each with its door, when known), but
/// `allow` lets no call through. A door not yet known is at 127.0.0.1 on a port chosen
/// at launch, so only a port-less entry is sure to reach it. The member's own launch
/// and `mur doctor` (with no door known) both ask this.
pub fn network_warning(
    member: &str,
    callees: &[(&str, Option<&Url>)],
    allow: &[String],
) -> Option<Diagnostic> {
    if callees.is_empty() {
        return None;
    }
    let reach = callees.iter().any(|(_, door)| match door {
        Some(door) => reaches(allow, door),
        None => reaches_host(allow, DOOR_HOST, None),
    });
    let names: Vec<&str> = callees.iter().map(|(c, _)| *c).collect();
    (!reach).then(|| {
        Diagnostic::new(
            W_RUN_008,
            format!(
                "member `{member}` may call {}, but its capabilities.network.allow ({}) reaches no door on localhost: every call it makes fails",
                names.join(", "),
                if allow.is_empty() {
                    "empty".to_string()
                } else {
                    allow.join(", ")
                }
            ),
        )
        .hint("Add `localhost` to capabilities.network.allow in the member's murmur.yaml.")
    })
}

/// The one reach rule: whether an allow list (`host`, `*.domain`, `host:port`,
/// `[v6]`, any letter case) reaches `url`. `localhost`, `127.0.0.1` and `[::1]` are
/// one host: the loopback the doors are on.
pub fn reaches(allow: &[String], url: &Url) -> bool {
    match url.host_str() {
        Some(host) => reaches_host(allow, host, url.port_or_known_default()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use rstest::rstest;

    const DOOR: &str = "http://127.0.0.1:40123/";

    fn one_callee(allow: &[&str]) -> Peers {
        let tokens = vec![(
            "coder".parse().unwrap(),
            FormationToken::from_secret("mft1.x.y".into()),
        )];
        Peers::new(tokens, allow.iter().map(|s| s.to_string()).collect()).unwrap()
    }

    // W-RUN-008 and the call path are one rule: for each entry, a call to a door at
    // 127.0.0.1:40123 gets through exactly when no W-RUN-008 was given for it (door
    // known), and before the door is known only a port-less loopback entry passes.
    #[rstest]
    #[case::localhost("localhost", true, true)]
    #[case::ipv4_loopback("127.0.0.1", true, true)]
    #[case::ipv6_loopback("[::1]", true, true)]
    #[case::letter_case("LocalHost", true, true)]
    #[case::port_of_the_door("localhost:40123", true, false)]
    #[case::loopback_port_of_the_door("127.0.0.1:40123", true, false)]
    #[case::other_port("localhost:8080", false, false)]
    #[case::wildcard("*.example.com", false, false)]
    #[case::unrelated_host("api.example.com", false, false)]
    #[tokio::test]
    async fn warning_and_calls_use_one_reach_rule(
        #[case] entry: &str,
        #[case] call_gets_through: bool,
        #[case] passes_before_doors: bool,
    ) {
        let p = one_callee(&[entry]);
        assert_eq!(
            p.network_warning("planner").is_none(),
            passes_before_doors,
            "before the door is known"
        );
        p.add_doors(BTreeMap::from([("coder".parse().unwrap(), DOOR.into())]));
        let call = p.reach("coder").await;
        assert_eq!(call.is_ok(), call_gets_through, "{call:?}");
        assert_eq!(p.network_warning("planner").is_none(), call_gets_through);
        if !call_gets_through {
            assert!(matches!(call, Err(CallError::OutOfReach { .. })));
        }
    }

    #[rstest]
    #[case::subdomain("*.example.com", "http://a.example.com/", true)]
    #[case::subdomain_case("*.Example.COM", "http://A.example.com/", true)]
    #[case::not_the_domain_itself("*.example.com", "http://example.com/", false)]
    #[case::host_and_port("api.example.com:8443", "https://api.example.com:8443/", true)]
    #[case::default_port("api.example.com:443", "https://api.example.com/", true)]
    #[case::wrong_port("api.example.com:8443", "https://api.example.com/", false)]
    #[case::loopback_is_not_a_subdomain("*.0.0.1", "http://127.0.0.1/", false)]
    fn hosts_outside_the_formation(#[case] entry: &str, #[case] url: &str, #[case] ok: bool) {
        assert_eq!(reaches(&[entry.to_string()], &Url::parse(url).unwrap()), ok);
    }

    #[test]
    fn an_empty_allow_list_reaches_nothing_and_no_callees_warn_of_nothing() {
        assert!(!reaches(&[], &Url::parse(DOOR).unwrap()));
        let w = one_callee(&[])
            .network_warning("planner")
            .expect("W-RUN-008");
        assert_eq!(w.code, W_RUN_008);
        assert!(
            w.message.contains("`planner` may call coder") && w.message.contains("(empty)"),
            "{}",
            w.message
        );
        assert!(
            Peers::new(vec![], vec![])
                .unwrap()
                .network_warning("p")
                .is_none()
        );
    }

    #[test]
    fn peers_env_names_each_callee_in_roster_order() {
        assert_eq!(Peers::new(vec![], vec![]).unwrap().peers_env(), None);
        let token = || FormationToken::from_secret("mft1.x.y".into());
        let p = Peers::new(
            vec![
                ("coder".parse().unwrap(), token()),
                ("reviewer".parse().unwrap(), token()),
            ],
            vec![],
        )
        .unwrap();
        assert_eq!(
            p.peers_env().as_deref(),
            Some("coder=http://coder.formation.invalid reviewer=http://reviewer.formation.invalid")
        );
    }
}
