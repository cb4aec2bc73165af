//! A session's place in a formation, read from its own environment before anything is
//! staged: `MURMUR_FORMATION_ID`, the formation channel's first line (credentials),
//! and the lifeline. Every refusal is E-RUN-046.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::call_member::Peers;
use crate::catalogue::{E_RUN_046, W_RUN_007};
use crate::channel::{self, ChannelError, Claims};
use crate::credential::VerifyKey;
use crate::diag::{Diagnostic, Result};
use crate::formation::{self, member::FORMATION_ID_ENV};
use crate::lifeline;
use crate::timing;

/// The variable a delegated child's spawner lifeline is named by. A child carries its
/// parent's formation id and no formation lifeline, and prints no W-RUN-007.
pub(crate) const SPAWNER_LIFELINE_ENV: &str = crate::env::MURMUR_SPAWNER_LIFELINE;

/// The session's place in a formation.
pub(crate) enum Place {
    /// No formation (or `--resume`, which never re-adopts one).
    None,
    /// `MURMUR_FORMATION_ID` without a lifeline: runs as any `mur run` (W-RUN-007 was
    /// printed, unless it is a delegated child). Nothing of the formation is used.
    Unbound { formation_id: String },
    /// A member the launcher started.
    Member(Box<Membership>),
}

/// A formation member's membership: who it is, what its launcher handed it, and its
/// lifeline. Its callees (tokens, door URLs, reach) are `peers`. Holds tokens: no
/// `Debug`.
pub(crate) struct Membership {
    pub formation_id: String,
    pub name: crate::ids::MemberName,
    pub entry: bool,
    pub verify_key: VerifyKey,
    pub project_dir: PathBuf,
    pub workdir: PathBuf,
    pub artifact_sha256: crate::ids::Sha256,
    pub deadline: Option<SystemTime>,
    /// Live trace export, as the launcher resolved it.
    pub otlp: Option<crate::trace::live::Target>,
    /// The read end of its lifeline (a member always has one; the main loop takes it).
    pub lifeline: Option<OwnedFd>,
    /// The members it may call, fed the channel's `doors` lines as they arrive.
    pub peers: Arc<Peers>,
}

fn refuse(message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(E_RUN_046, message)
}

/// Reads the session's formation environment. `warn` prints W-RUN-007.
pub(crate) async fn read(resume: bool, warn: &dyn Fn(&Diagnostic)) -> Result<Place> {
    if resume {
        return Ok(Place::None);
    }
    formation::refuse_inside(formation::Start::Session)?;
    let formation_id = std::env::var(FORMATION_ID_ENV).ok();
    let has_channel = std::env::var_os(channel::ENV).is_some();
    let Some(formation_id) = formation_id else {
        if has_channel {
            return Err(refuse(format!(
                "{} is set without {FORMATION_ID_ENV}",
                channel::ENV
            )));
        }
        return Ok(Place::None);
    };
    let lifeline = crate::proc::take_inherited(lifeline::ENV).map_err(|e| refuse(e.to_string()))?;
    let channel_fd =
        crate::proc::take_inherited(channel::ENV).map_err(|e| refuse(e.to_string()))?;
    let Some((lifeline, _)) = lifeline else {
        // No lifeline: it runs as any other mur run does (the spec's "member started
        // by hand"), so a channel, checked above, is closed unread: no credentials,
        // no formation tokens, no formation_id.
        drop(channel_fd);
        if std::env::var_os(SPAWNER_LIFELINE_ENV).is_none() {
            warn(&by_hand(&formation_id));
        }
        return Ok(Place::Unbound { formation_id });
    };
    let Some((channel_fd, _)) = channel_fd else {
        return Err(refuse(format!(
            "{} is set but {} is not: a member needs its formation channel",
            lifeline::ENV,
            channel::ENV
        )));
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
    let peers = Peers::new(creds.tokens, Vec::new())
        .map_err(|e| refuse(format!("cannot make the HTTP client for calls: {e}")))?
        .with_me(creds.member.clone());
    let peers = Arc::new(peers);
    peers.follow(reader);
    Ok(Place::Member(Box::new(Membership {
        formation_id,
        name: creds.member,
        entry: creds.entry,
        verify_key,
        project_dir: creds.project_dir,
        workdir: creds.workdir,
        artifact_sha256: creds.artifact_sha256,
        deadline: creds
            .deadline_unix_ms
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
        otlp: creds.otlp.map(|t| *t),
        lifeline: Some(lifeline),
        peers,
    })))
}

fn by_hand(formation_id: &str) -> Diagnostic {
    Diagnostic::new(
        W_RUN_007,
        format!(
            "this mur run carries {FORMATION_ID_ENV}={formation_id} but no lifeline: it runs as any mur run, and nothing winds it down when its formation ends"
        ),
    )
}
