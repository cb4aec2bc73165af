//! The runtime's view of the members this one may call: a token per callee (the
//! formation channel's first line), a door URL per callee (its later `doors` lines),
//! the member's `capabilities.network.allow`, and the virtual addresses
//! `<member>.formation.invalid` its components use.

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
use crate::timing;

/// `MURMUR_FORMATION_PEERS`: the components' list of virtual addresses.
pub const PEERS_ENV: &str = crate::env::MURMUR_FORMATION_PEERS;
/// Every virtual address is under this name; `.invalid` never resolves (RFC 2606).
pub const VIRTUAL_DOMAIN: &str = "formation.invalid";

/// A member's callees. Holds tokens: its `Debug` names the callees only.
pub struct Peers {
    /// Roster order.
    callees: Vec<String>,
    tokens: HashMap<String, FormationToken>,
    doors: watch::Sender<BTreeMap<String, Url>>,
    allow: RwLock<Vec<String>>,
    door_wait: Duration,
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
    /// `capabilities.network.allow`.
    pub fn new(tokens: Vec<(String, FormationToken)>, allow: Vec<String>) -> Peers {
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(60))
            .build()
            .unwrap_or_default();
        Peers {
            callees: tokens.iter().map(|(n, _)| n.clone()).collect(),
            tokens: tokens.into_iter().collect(),
            doors: watch::Sender::new(BTreeMap::new()),
            allow: RwLock::new(allow),
            door_wait: timing::scaled(timing::DOOR_URL_WAIT),
            client,
        }
    }

    /// How long a call waits for a door URL not yet arrived (default: the spec's
    /// 10 s, `timing::DOOR_URL_WAIT`).
    pub fn with_door_wait(mut self, wait: Duration) -> Peers {
        self.door_wait = wait;
        self
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
    pub fn callees(&self) -> &[String] {
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
    pub fn add_doors(&self, doors: BTreeMap<String, String>) {
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

    /// Reads the channel's later lines into [`Peers::add_doors`] until it closes.
    pub fn follow(self: &Arc<Self>, mut reader: channel::Reader) -> tokio::task::JoinHandle<()> {
        let peers = self.clone();
        tokio::spawn(async move {
            while let Some(doors) = reader.next_doors().await {
                peers.add_doors(doors);
            }
        })
    }

    /// The callee's real door URL, waiting up to the door wait for it to arrive.
    pub async fn door(&self, member: &str) -> Result<Url, CallError> {
        if !self.may_call(member) {
            return Err(self.not_callable(member));
        }
        let mut rx = self.doors.subscribe();
        let found = tokio::time::timeout(
            self.door_wait,
            rx.wait_for(|doors| doors.contains_key(member)),
        )
        .await;
        match found {
            Ok(Ok(doors)) => Ok(doors[member].clone()),
            _ => Err(CallError::NoDoor {
                member: member.to_string(),
                waited: self.door_wait,
            }),
        }
    }

    /// The one refusal for a member it may not call and for no member at all.
    pub(crate) fn not_callable(&self, member: &str) -> CallError {
        CallError::NotCallable {
            member: member.chars().take(64).collect(),
            callees: self.callees.clone(),
        }
    }

    /// Checks the real door URL against `capabilities.network.allow`.
    pub fn check_reach(&self, member: &str, door: &Url) -> Result<(), CallError> {
        if reaches(&self.allow(), door) {
            Ok(())
        } else {
            Err(CallError::OutOfReach {
                member: member.to_string(),
                door: door.to_string(),
            })
        }
    }

    /// W-RUN-008 at launch: the member may call others, but no entry of its
    /// `capabilities.network.allow` reaches a door on loopback. A port-less
    /// `localhost` (or `127.0.0.1`, `[::1]`) does; an entry with a port does only
    /// when a door already known is at that port (doors take a port chosen at launch).
    pub fn network_warning(&self, member: &str) -> Option<Diagnostic> {
        if self.callees.is_empty() {
            return None;
        }
        let known: Vec<Url> = self.doors.borrow().values().cloned().collect();
        let allow = self.allow().clone();
        let reach = allow.iter().any(|entry| {
            let (host, port) = split_host_port(entry);
            is_loopback(host)
                && match port {
                    None => true,
                    Some(p) => known.iter().any(|u| u.port_or_known_default() == Some(p)),
                }
        });
        (!reach).then(|| {
            Diagnostic::new(
                W_RUN_008,
                format!(
                    "member `{member}` may call {}, but its capabilities.network.allow ({}) reaches no door on localhost: every call it makes fails",
                    self.callees.join(", "),
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

    /// `MURMUR_FORMATION_PEERS`'s value for the member's components: each callee at
    /// its virtual address, in roster order; `None` when it may call nobody (the
    /// variable is then not set at all, never set empty).
    pub fn peers_env(&self) -> Option<String> {
        peers_env(&self.callees)
    }

    /// Routes a component's request. `Ok(None)`: `url` is not a virtual address, send
    /// it as it is. `Ok(Some(real))`: send it to `real` instead; `headers` then hold
    /// the callee's token and the trust stamp, and nothing the component set in their
    /// place. A name under `formation.invalid` that is not a callee is refused with
    /// one refusal, before any connection. `allow` is the sending component's
    /// `capabilities.network.allow` (per-artifact narrowing applied by the caller).
    pub async fn route(
        &self,
        url: &str,
        headers: &mut HeaderMap,
        allow: &[String],
        trust: Trust,
    ) -> Result<Option<Url>, CallError> {
        let Ok(parsed) = Url::parse(url) else {
            return Ok(None);
        };
        let Some(host) = parsed.host_str().map(str::to_ascii_lowercase) else {
            return Ok(None);
        };
        let member = if host == VIRTUAL_DOMAIN {
            ""
        } else if let Some(m) = host.strip_suffix(&format!(".{VIRTUAL_DOMAIN}")) {
            m
        } else {
            return Ok(None);
        };
        if parsed.scheme() != "http" || parsed.port().is_some() || !self.may_call(member) {
            return Err(self.not_callable(&host));
        }
        let door = self.door(member).await?;
        let mut real = door.clone();
        real.set_path(parsed.path());
        real.set_query(parsed.query());
        if !reaches(allow, &real) {
            return Err(CallError::OutOfReach {
                member: member.to_string(),
                door: door.to_string(),
            });
        }
        headers.remove(AUTHORIZATION);
        headers.remove(ORIGIN_HEADER);
        headers.remove(TRUST_HEADER);
        let token = self
            .token(member)
            .ok_or_else(|| self.not_callable(member))?;
        let mut auth = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
            .map_err(|_| self.not_callable(member))?;
        auth.set_sensitive(true);
        headers.insert(AUTHORIZATION, auth);
        headers.insert(ORIGIN_HEADER, HeaderValue::from_static(super::ORIGIN_PEER));
        headers.insert(TRUST_HEADER, HeaderValue::from_static(trust.as_str()));
        Ok(Some(real))
    }
}

/// `MURMUR_FORMATION_PEERS`'s value for these callees (roster order); `None` for none.
pub fn peers_env(callees: &[String]) -> Option<String> {
    if callees.is_empty() {
        return None;
    }
    Some(
        callees
            .iter()
            .map(|c| format!("{c}=http://{c}.{VIRTUAL_DOMAIN}"))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Whether an allow list (`host`, `*.domain`, `host:port`, `[v6]`) reaches `url`.
/// `localhost`, `127.0.0.1` and `[::1]` are one host: the loopback doors are on.
pub fn reaches(allow: &[String], url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let port = url.port_or_known_default();
    allow.iter().any(|entry| {
        let (h, p) = split_host_port(entry);
        let host_ok = if is_loopback(h) || is_loopback(host) {
            is_loopback(h) && is_loopback(host)
        } else if let Some(domain) = h.strip_prefix("*.") {
            host.len() > domain.len() + 1
                && host
                    .to_ascii_lowercase()
                    .ends_with(&format!(".{}", domain.to_ascii_lowercase()))
        } else {
            h.eq_ignore_ascii_case(host)
        };
        host_ok && p.is_none_or(|p| Some(p) == port)
    })
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]"
}

/// `host[:port]`, `[v6][:port]`.
fn split_host_port(entry: &str) -> (&str, Option<u16>) {
    let entry = entry.trim();
    if entry.starts_with('[') {
        if let Some(end) = entry.find(']') {
            let port = entry[end + 1..]
                .strip_prefix(':')
                .and_then(|p| p.parse().ok());
            return (&entry[..=end], port);
        }
        return (entry, None);
    }
    match entry.rsplit_once(':') {
        Some((h, p)) => match p.parse() {
            Ok(p) => (h, Some(p)),
            Err(_) => (entry, None),
        },
        None => (entry, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn allow_lists_reach_loopback_doors_as_localhost() {
        let door = url("http://127.0.0.1:40123/");
        let allow = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(reaches(&allow(&["localhost"]), &door));
        assert!(reaches(&allow(&["127.0.0.1"]), &door));
        assert!(reaches(&allow(&["localhost:40123"]), &door));
        assert!(!reaches(&allow(&["localhost:8080"]), &door));
        assert!(!reaches(
            &allow(&["api.example.com", "*.example.com"]),
            &door
        ));
        assert!(!reaches(&allow(&[]), &door));
        assert!(reaches(
            &allow(&["*.example.com"]),
            &url("http://a.example.com/")
        ));
        assert!(!reaches(
            &allow(&["*.example.com"]),
            &url("http://example.com/")
        ));
    }

    #[test]
    fn peers_env_names_each_callee_in_roster_order() {
        assert_eq!(peers_env(&[]), None);
        assert_eq!(
            peers_env(&["coder".into(), "reviewer".into()]).as_deref(),
            Some("coder=http://coder.formation.invalid reviewer=http://reviewer.formation.invalid")
        );
    }

    #[test]
    fn network_warning_only_without_a_loopback_grant() {
        let tokens = vec![(
            "coder".to_string(),
            FormationToken::from_secret("mft1.x.y".into()),
        )];
        let w =
            Peers::new(tokens.clone(), vec!["api.example.com".into()]).network_warning("planner");
        let w = w.expect("W-RUN-008");
        assert_eq!(w.code, W_RUN_008);
        assert!(
            w.message.contains("`planner` may call coder"),
            "{}",
            w.message
        );
        assert!(
            Peers::new(tokens.clone(), vec!["localhost".into()])
                .network_warning("p")
                .is_none()
        );
        assert!(Peers::new(vec![], vec![]).network_warning("p").is_none());
        // A port-bound entry reaches only a door already known at that port.
        let p = Peers::new(tokens, vec!["localhost:4000".into()]);
        assert!(p.network_warning("p").is_some());
        p.add_doors(BTreeMap::from([(
            "coder".into(),
            "http://127.0.0.1:4000/".into(),
        )]));
        assert!(p.network_warning("p").is_none());
    }
}
