//! The formation channel: a pipe only one member's `mur run` inherits, named by
//! `MURMUR_FORMATION_CHANNEL`, on which the launcher hands it its credentials and,
//! later, its callees' door URLs and the news that a callee exited. One JSON object
//! per line.
//!
//! Tokens cross only this pipe: never an environment variable, a command line or a
//! file. `FormationToken` keeps them out of `Debug` output and logs.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::credential::FormationToken;
use crate::ids::{FormationId, MemberName, Sha256};
use tokio::sync::mpsc;

/// `MURMUR_FORMATION_CHANNEL`: the inherited descriptor the channel is read from.
pub const ENV: &str = crate::env::MURMUR_FORMATION_CHANNEL;
/// A line longer than this is not a channel line.
const MAX_LINE: usize = 256 * 1024;

/// One line of the channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Line {
    /// The first line: who the member is and what it may call.
    Credentials(Credentials),
    /// A later line: door URLs of members it may call, by roster name.
    Doors { doors: BTreeMap<MemberName, String> },
    /// A later line: a member it may call exited while the formation runs.
    Exited(Exited),
}

/// A callee's process ended while its formation runs (docs/formation.md, "A member
/// that exits"): calls to it fail at once, saying so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exited {
    pub member: MemberName,
    /// When the launcher reaped it: RFC 3339 UTC, milliseconds.
    pub at: String,
    /// How it ended, as the launcher says it: `status 137 (SIGKILL)`, `status 0`.
    pub how: String,
}

/// A later line, as [`Reader::next`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Later {
    Doors(BTreeMap<MemberName, String>),
    Exited(Exited),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    pub formation: FormationId,
    pub member: MemberName,
    /// True for the entry member.
    pub entry: bool,
    /// The formation's public verification key (base64url, no padding).
    pub verify_key: String,
    /// One token per member this member may call, by callee name, in roster order.
    pub tokens: Vec<(MemberName, FormationToken)>,
    /// The roster's project: every member resolves its stores and lock from it.
    pub project_dir: std::path::PathBuf,
    /// The member's work folder: the project for the entry member, its own folder
    /// under `~/.murmur/formations/<frm_id>/` for a peer.
    pub workdir: std::path::PathBuf,
    /// The sha256 admission bound the member's artifact to (E-RUN-047 if it changed).
    pub artifact_sha256: Sha256,
    /// The formation's `--deadline`, one moment for every member, in Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_unix_ms: Option<u64>,
    /// Live trace export, as the launcher resolved it (`--otlp-endpoint`, the
    /// `OTEL_EXPORTER_OTLP_*` variables): the member takes this, not its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<Box<crate::trace::live::Target>>,
}

/// The launcher's end of one member's channel.
pub struct Writer(std::fs::File);

impl Writer {
    /// A new channel: the launcher keeps the `Writer`, the member inherits the read end.
    pub fn new() -> std::io::Result<(Writer, OwnedFd)> {
        let (reader, writer) = std::io::pipe()?;
        Ok((
            Writer(std::fs::File::from(OwnedFd::from(writer))),
            reader.into(),
        ))
    }

    /// Writes one line. Lines are far below the pipe's buffer, so this does not block
    /// on a member that has not started reading yet.
    pub fn send(&mut self, line: &Line) -> std::io::Result<()> {
        let mut text = serde_json::to_vec(line).map_err(std::io::Error::other)?;
        text.push(b'\n');
        self.0.write_all(&text)?;
        self.0.flush()
    }
}

/// Why a member refuses its channel (each is E-RUN-046 at the caller).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    #[error("no first line arrived on the formation channel within {0:?}")]
    Timeout(Duration),
    #[error("the formation channel closed before its first line")]
    Closed,
    #[error("the formation channel's first line is not a member's credentials: {0}")]
    NotCredentials(String),
    #[error("the formation channel names formation {got}, not {expected} (MURMUR_FORMATION_ID)")]
    OtherFormation { expected: String, got: String },
    #[error(
        "the formation channel holds a token for `{callee}` that was not issued to this member"
    )]
    ForeignToken { callee: String },
}

/// The member's end: lines are read on a thread of their own (a pipe or a file alike)
/// and arrive through `recv`.
pub struct Reader {
    lines: mpsc::UnboundedReceiver<Result<Line, String>>,
}

impl Reader {
    pub fn spawn(fd: OwnedFd) -> Reader {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("formation-channel".into())
            .spawn(move || {
                let mut reader = BufReader::new(std::fs::File::from(fd));
                loop {
                    let mut buf = Vec::new();
                    let read = (&mut reader)
                        .take(MAX_LINE as u64)
                        .read_until(b'\n', &mut buf);
                    match read {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {
                            if tx.send(Line::parse(&buf)).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .expect("spawn the formation channel reader");
        Reader { lines: rx }
    }

    /// The first line, which must be credentials, within `timeout`.
    pub async fn credentials(&mut self, timeout: Duration) -> Result<Credentials, ChannelError> {
        match tokio::time::timeout(timeout, self.lines.recv()).await {
            Err(_) => Err(ChannelError::Timeout(timeout)),
            Ok(None) => Err(ChannelError::Closed),
            Ok(Some(Err(e))) => Err(ChannelError::NotCredentials(e)),
            Ok(Some(Ok(Line::Credentials(c)))) => Ok(c),
            Ok(Some(Ok(other))) => Err(ChannelError::NotCredentials(format!(
                "a `{}` line came first",
                other.kind()
            ))),
        }
    }

    /// The next later line (door URLs, or a callee's exit); `None` once the channel
    /// has closed. Malformed later lines are skipped: the first line already proved
    /// the sender.
    pub async fn next(&mut self) -> Option<Later> {
        loop {
            match self.lines.recv().await? {
                Ok(Line::Doors { doors }) => return Some(Later::Doors(doors)),
                Ok(Line::Exited(exited)) => return Some(Later::Exited(exited)),
                _ => continue,
            }
        }
    }
}

impl Line {
    /// One line as read from the channel (its newline included or not).
    pub fn parse(bytes: &[u8]) -> Result<Line, String> {
        serde_json::from_slice::<Line>(bytes).map_err(|e| format!("{e}"))
    }

    fn kind(&self) -> &'static str {
        match self {
            Line::Credentials(_) => "credentials",
            Line::Doors { .. } => "doors",
            Line::Exited(_) => "exited",
        }
    }
}

/// What a token claims once its signature verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub formation: String,
    pub from: String,
    pub to: String,
}

impl Credentials {
    /// Checks the credentials against `MURMUR_FORMATION_ID` and that every token was
    /// issued to this member for the callee it is filed under. `verify` returns a
    /// token's claims when its signature verifies under `verify_key`.
    pub fn validate(
        &self,
        formation_id: &str,
        verify: impl Fn(&str, &str) -> Option<Claims>,
    ) -> Result<(), ChannelError> {
        if self.formation != formation_id {
            return Err(ChannelError::OtherFormation {
                expected: formation_id.to_string(),
                got: self.formation.to_string(),
            });
        }
        for (callee, token) in &self.tokens {
            let ok = verify(&self.verify_key, token.expose()).is_some_and(|c| {
                c.formation == self.formation && c.from == self.member && &c.to == callee
            });
            if !ok {
                return Err(ChannelError::ForeignToken {
                    callee: callee.to_string(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F1: &str = "frm_01900000000070008000000000000001";
    const F2: &str = "frm_01900000000070008000000000000002";

    fn creds(formation: &str) -> Credentials {
        Credentials {
            formation: formation.parse().unwrap(),
            member: "planner".parse().unwrap(),
            entry: true,
            verify_key: "k".into(),
            tokens: vec![(
                "coder".parse().unwrap(),
                FormationToken::from_secret("mft1.a.b".into()),
            )],
            project_dir: "/p".into(),
            workdir: "/p".into(),
            artifact_sha256: crate::ids::Sha256::of(b""),
            deadline_unix_ms: None,
            otlp: None,
        }
    }

    #[tokio::test]
    async fn first_line_then_doors() {
        let (mut w, r) = Writer::new().unwrap();
        let mut reader = Reader::spawn(r);
        w.send(&Line::Credentials(creds(F1))).unwrap();
        let doors = BTreeMap::from([("coder".parse().unwrap(), "http://127.0.0.1:1".to_string())]);
        w.send(&Line::Doors {
            doors: doors.clone(),
        })
        .unwrap();
        assert_eq!(
            reader.credentials(Duration::from_secs(5)).await.unwrap(),
            creds(F1)
        );
        let exited = Exited {
            member: "coder".parse().unwrap(),
            at: "2026-12-07T21:40:12.345Z".into(),
            how: "status 137 (SIGKILL)".into(),
        };
        w.send(&Line::Exited(exited.clone())).unwrap();
        assert_eq!(reader.next().await, Some(Later::Doors(doors)));
        assert_eq!(reader.next().await, Some(Later::Exited(exited)));
        drop(w);
        assert_eq!(reader.next().await, None);
    }

    #[tokio::test]
    async fn refusals() {
        let (_w, r) = Writer::new().unwrap();
        let err = Reader::spawn(r)
            .credentials(Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(matches!(err, ChannelError::Timeout(_)));

        let (w, r) = Writer::new().unwrap();
        drop(w);
        let err = Reader::spawn(r)
            .credentials(Duration::from_secs(5))
            .await
            .unwrap_err();
        assert_eq!(err, ChannelError::Closed);

        let (mut w, r) = Writer::new().unwrap();
        w.send(&Line::Doors {
            doors: BTreeMap::new(),
        })
        .unwrap();
        let err = Reader::spawn(r)
            .credentials(Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(err, ChannelError::NotCredentials(_)));

        let (w, r) = Writer::new().unwrap();
        let mut f = w.0;
        f.write_all(b"{\"type\":\"credentials\",\"bogus\":1}\n")
            .unwrap();
        let err = Reader::spawn(r)
            .credentials(Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(err, ChannelError::NotCredentials(_)));
    }

    #[test]
    fn validate_checks_formation_and_each_token() {
        let good = |_: &str, _: &str| {
            Some(Claims {
                formation: F1.into(),
                from: "planner".into(),
                to: "coder".into(),
            })
        };
        assert_eq!(creds(F1).validate(F1, good), Ok(()));
        assert!(matches!(
            creds(F2).validate(F1, good),
            Err(ChannelError::OtherFormation { .. })
        ));
        let to_other = |_: &str, _: &str| {
            Some(Claims {
                formation: F1.into(),
                from: "planner".into(),
                to: "x".into(),
            })
        };
        assert!(matches!(
            creds(F1).validate(F1, to_other),
            Err(ChannelError::ForeignToken { .. })
        ));
        assert!(matches!(
            creds(F1).validate(F1, |_: &str, _: &str| None),
            Err(ChannelError::ForeignToken { .. })
        ));
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let text = format!("{:?}", Line::Credentials(creds(F1)));
        assert!(!text.contains("mft1"), "{text}");
    }
}
