//! A session's place in a formation, read from its own environment before anything is
//! staged: `MURMUR_FORMATION_ID`, the formation channel's first line (credentials),
//! and the lifeline. Every refusal is E-RUN-046.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::catalogue::{E_RUN_046, W_RUN_007};
use crate::channel::{self, ChannelError, Claims};
use crate::credential::FormationToken;
use crate::credential::VerifyKey;
use crate::diag::{Diagnostic, Result};
use crate::formation::member::{FORMATION_ID_ENV, PEERS_ENV};
use crate::lifeline;
use crate::timing;

/// The variable a delegated child's spawner lifeline is named by. A child carries its
/// parent's formation id and no formation lifeline, and prints no W-RUN-007.
pub const SPAWNER_LIFELINE_ENV: &str = crate::env::MURMUR_SPAWNER_LIFELINE;

/// How the session belongs to a formation.
pub enum Membership {
    /// No formation (or `--resume`, which never re-adopts one).
    None,
    /// `MURMUR_FORMATION_ID` without a lifeline: runs as any `mur run` (W-RUN-007 was
    /// printed, unless it is a delegated child). Nothing of the formation is used.
    Unbound { formation_id: String },
    /// A member the launcher started.
    Member(Box<Member>),
}

/// A formation member's credentials and lifeline. Holds tokens: no `Debug`.
pub struct Member {
    pub formation_id: String,
    pub name: String,
    pub entry: bool,
    pub verify_key: VerifyKey,
    /// One token per member it may call, in roster order.
    pub tokens: Vec<(String, FormationToken)>,
    pub project_dir: PathBuf,
    pub workdir: PathBuf,
    pub artifact_sha256: String,
    pub deadline: Option<SystemTime>,
    /// The read end of its lifeline; `None` when it has none (then W-RUN-007).
    pub lifeline: Option<OwnedFd>,
    /// Callees' door URLs, as later channel lines bring them (for call-member).
    pub doors: Arc<Mutex<BTreeMap<String, String>>>,
    /// call-member's view of the callees: tokens, and door URLs as they arrive.
    pub peers: Arc<crate::call_member::Peers>,
}

impl Member {
    /// The members it may call, in roster order.
    pub fn callees(&self) -> Vec<String> {
        self.tokens.iter().map(|(name, _)| name.clone()).collect()
    }
}

/// `MURMUR_FORMATION_PEERS` for the member's components: each callee at its virtual
/// address, in roster order; `None` when it may call nobody (never set empty). Never
/// set in `mur run`'s own environment.
pub fn peers_env(callees: &[String]) -> Option<(String, String)> {
    if callees.is_empty() {
        return None;
    }
    let value = callees
        .iter()
        .map(|c| format!("{c}=http://{c}.formation.invalid"))
        .collect::<Vec<_>>()
        .join(" ");
    Some((PEERS_ENV.to_string(), value))
}

fn refuse(message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(E_RUN_046, message)
}

/// Reads the session's formation environment. `warn` prints W-RUN-007.
pub async fn read(resume: bool, warn: &dyn Fn(&Diagnostic)) -> Result<Membership> {
    if resume {
        return Ok(Membership::None);
    }
    if std::env::var_os(PEERS_ENV).is_some() {
        return Err(refuse(format!(
            "{PEERS_ENV} is set in mur run's own environment; the runtime sets it for components only"
        )));
    }
    let formation_id = std::env::var(FORMATION_ID_ENV).ok();
    let has_channel = std::env::var_os(channel::ENV).is_some();
    let Some(formation_id) = formation_id else {
        if has_channel {
            return Err(refuse(format!(
                "{} is set without {FORMATION_ID_ENV}",
                channel::ENV
            )));
        }
        return Ok(Membership::None);
    };
    let lifeline = crate::proc::take_inherited(lifeline::ENV).map_err(|e| refuse(e.to_string()))?;
    let channel_fd =
        crate::proc::take_inherited(channel::ENV).map_err(|e| refuse(e.to_string()))?;
    let Some((channel_fd, _)) = channel_fd else {
        if lifeline.is_some() {
            return Err(refuse(format!(
                "{} is set but {} is not: a member needs its formation channel",
                lifeline::ENV,
                channel::ENV
            )));
        }
        if std::env::var_os(SPAWNER_LIFELINE_ENV).is_none() {
            warn(&by_hand(&formation_id));
        }
        return Ok(Membership::Unbound { formation_id });
    };
    let mut reader = channel::Reader::spawn(channel_fd);
    let creds = reader
        .credentials(timing::scaled(timing::CHANNEL_FIRST_LINE))
        .await
        .map_err(|e| refuse(e.to_string()))?;
    let verify_key = VerifyKey::from_text(&formation_id, &creds.verify_key).map_err(|_| {
        refuse(
            ChannelError::NotCredentials("its verification key does not read".into()).to_string(),
        )
    })?;
    creds
        .validate(&formation_id, |_, token| {
            verify_key.verify(token).ok().map(|c| Claims {
                formation: c.formation,
                from: c.from,
                to: c.to,
            })
        })
        .map_err(|e| refuse(e.to_string()))?;
    let lifeline = lifeline.map(|(fd, _)| fd);
    if lifeline.is_none() {
        warn(&by_hand(&formation_id));
    }
    let doors = Arc::new(Mutex::new(BTreeMap::new()));
    let kept = doors.clone();
    let peers = Arc::new(crate::call_member::Peers::new(
        creds.tokens.clone(),
        Vec::new(),
    ));
    let fed = peers.clone();
    tokio::spawn(async move {
        while let Some(more) = reader.next_doors().await {
            fed.add_doors(more.clone());
            kept.lock().unwrap_or_else(|p| p.into_inner()).extend(more);
        }
    });
    Ok(Membership::Member(Box::new(Member {
        formation_id,
        name: creds.member,
        entry: creds.entry,
        verify_key,
        tokens: creds.tokens,
        project_dir: creds.project_dir,
        workdir: creds.workdir,
        artifact_sha256: creds.artifact_sha256,
        deadline: creds
            .deadline_unix_ms
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
        lifeline,
        doors,
        peers,
    })))
}

/// W-RUN-008 when the member may call others but `capabilities.network.allow`
/// reaches no door on 127.0.0.1 (a port-less `localhost` or `127.0.0.1` does; a
/// port-bound entry cannot, since doors take a port chosen at launch).
pub fn out_of_reach(member: &Member, allow: &[String]) -> Option<Diagnostic> {
    if member.tokens.is_empty() {
        return None;
    }
    let reaches = allow.iter().any(|h| h == "localhost" || h == "127.0.0.1");
    (!reaches).then(|| {
        Diagnostic::new(
            crate::catalogue::W_RUN_008,
            format!(
                "member `{}` may call {}, but capabilities.network.allow reaches no door on localhost: every call it makes fails",
                member.name,
                member.callees().join(", ")
            ),
        )
    })
}

fn by_hand(formation_id: &str) -> Diagnostic {
    Diagnostic::new(
        W_RUN_007,
        format!(
            "this mur run carries {FORMATION_ID_ENV}={formation_id} but no lifeline: it runs as any mur run, and nothing winds it down when its formation ends"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_env_names_each_callee_at_its_virtual_address() {
        assert_eq!(peers_env(&[]), None);
        assert_eq!(
            peers_env(&["coder".into(), "reviewer".into()]),
            Some((
                "MURMUR_FORMATION_PEERS".into(),
                "coder=http://coder.formation.invalid reviewer=http://reviewer.formation.invalid"
                    .into()
            ))
        );
    }
}
