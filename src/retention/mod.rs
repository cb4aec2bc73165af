//! `trace.retain` (docs/manifest.md): one mechanism with two policies. At the end of
//! every session, a capsule's `trace.retain` bounds the records of earlier sessions of
//! the same work folder ([`sessions`]); at the end of every `mur run --roster`, the
//! entry member's bounds its roster's formation directories ([`formations`]).
//!
//! Both rank what they may remove newest first (the UUIDv7 in an id sorts by time),
//! ask [`Retain::reason`] whether rank and age put it out of bounds, never touch the
//! current item, a newer one or one still running, and report each removal with
//! [`Removal::line`]. Both remove by `set_aside` first, so a pass killed midway
//! never leaves a half-removed item: the next pass finishes it (`set_aside_before`).

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::ids::{FormationId, SessionId};

pub mod formations;
pub mod marker;
pub mod sessions;

pub use formations::{Dirs, Running, pass};

/// The prefix of an item a pass has set aside and not yet deleted.
const ASIDE: &str = ".trash-";

/// Renames `dir` to `.trash-<name>` beside it: one atomic step after which the item
/// is gone as a whole (no reader finds it half there), before the slow delete.
fn set_aside(dir: &Path) -> io::Result<PathBuf> {
    let name = dir.file_name().ok_or(io::ErrorKind::InvalidInput)?;
    let aside = dir.with_file_name(format!("{ASIDE}{}", name.to_string_lossy()));
    std::fs::rename(dir, &aside)?;
    Ok(aside)
}

/// What an earlier, killed pass set aside in `parent`: each entry's path and the name
/// it had. The pass deletes them before it starts.
fn set_aside_before(parent: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.strip_prefix(ASIDE)?.to_string();
            Some((e.path(), name))
        })
        .collect()
}

use crate::manifest::Retain;

impl Retain {
    /// Why the item at `rank` (0 = newest, the current one counted), minted at
    /// `minted`, is out of bounds at `now`; `None` when it is kept. `max_age` wins
    /// when both bound it.
    pub fn reason(&self, rank: usize, minted: SystemTime, now: SystemTime) -> Option<Reason> {
        let too_old = self
            .max_age
            .is_some_and(|max| now.duration_since(minted).unwrap_or_default() > max);
        let too_many = self.max_sessions.is_some_and(|max| rank >= max as usize);
        match (too_old, too_many) {
            (true, _) => Some(Reason::MaxAge),
            (false, true) => Some(Reason::MaxSessions),
            (false, false) => None,
        }
    }
}

/// Which key of `trace.retain` removed an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    MaxSessions,
    MaxAge,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::MaxSessions => "max_sessions",
            Reason::MaxAge => "max_age",
        }
    }
}

/// What a pass removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removed {
    /// A session's records directory.
    Session(SessionId),
    /// A formation directory, with its members' records.
    Formation(FormationId),
}

/// One removal and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    pub removed: Removed,
    pub reason: Reason,
}

impl Removal {
    /// The stderr line the spec gives, byte for byte:
    /// `[mur run] retention: removed formation frm_… (max_sessions)`.
    pub fn line(&self) -> String {
        let (what, id) = match &self.removed {
            Removed::Session(id) => ("session", id.as_str()),
            Removed::Formation(id) => ("formation", id.as_str()),
        };
        format!(
            "[mur run] retention: removed {what} {id} ({})",
            self.reason.as_str()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn the_policy_names_max_age_first_and_keeps_what_is_in_bounds() {
        let now = UNIX_EPOCH + 100 * HOUR;
        let both = Retain {
            max_sessions: Some(2),
            max_age: Some(HOUR),
        };
        assert_eq!(both.reason(0, now, now), None);
        assert_eq!(
            both.reason(1, now - HOUR, now),
            None,
            "exactly max_age is kept"
        );
        assert_eq!(both.reason(2, now, now), Some(Reason::MaxSessions));
        assert_eq!(both.reason(0, now - 2 * HOUR, now), Some(Reason::MaxAge));
        assert_eq!(both.reason(5, now - 2 * HOUR, now), Some(Reason::MaxAge));
        // Minted in the future (a clock set back): young, not an error.
        assert_eq!(both.reason(0, now + HOUR, now), None);
        let none = Retain::default();
        assert!(none.is_unbounded());
        assert_eq!(none.reason(1000, UNIX_EPOCH, now), None);
    }

    #[test]
    fn the_lines_are_the_spec_s() {
        let formation = Removal {
            removed: Removed::Formation("frm_0199c4e2f1b7712a9d3e4f5061728394".parse().unwrap()),
            reason: Reason::MaxSessions,
        };
        assert_eq!(
            formation.line(),
            "[mur run] retention: removed formation frm_0199c4e2f1b7712a9d3e4f5061728394 (max_sessions)"
        );
        let session = Removal {
            removed: Removed::Session("ses_0199c4e2f1b7712a9d3e4f5061728394".parse().unwrap()),
            reason: Reason::MaxAge,
        };
        assert_eq!(
            session.line(),
            "[mur run] retention: removed session ses_0199c4e2f1b7712a9d3e4f5061728394 (max_age)"
        );
    }
}
