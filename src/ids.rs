//! The ids and names that travel between modules, each checked once, where it is
//! parsed (`FromStr`). Every one of them is safe as a single path component: no `/`,
//! no `.`, never empty, so a value of these types can be joined onto a folder as is.
//!
//! Session and formation ids are `ses_`/`frm_` and a UUIDv7 in lowercase hex without
//! dashes: they sort by the time they were minted, and carry that time.
//!
//! Each travels as its type from where it is read to where it is used: a member's
//! name from the roster through admission, the launch plan, the channel's credentials,
//! `Peers`, the door and the running records; a formation id from its key to the
//! formation directory and the member's environment. A2A task ids are opaque strings
//! on the wire, so `a2a::TaskId` (beside the A2A types) wraps without checking.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value that is not the id or name it was meant to be. Displays as
/// "`<value>` is not a <what>".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a {what}")]
pub struct Invalid {
    pub what: &'static str,
    pub value: String,
}

/// The one lexical rule of mur's names: a lowercase ASCII letter, then characters
/// `allowed` admits, `max_len` in all.
pub(crate) fn is_word(s: &str, max_len: usize, allowed: impl Fn(char) -> bool) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase()) && s.len() <= max_len && s.chars().all(allowed)
}

/// `^[a-z][a-z0-9-]{0,max_len-1}$`.
pub(crate) fn is_name(s: &str, max_len: usize) -> bool {
    is_word(s, max_len, |c| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
    })
}

macro_rules! string_type {
    ($name:ident, $what:literal, $valid:expr) => {
        // Each id type gets the same accessors; not every one is used by each type.
        #[allow(dead_code)]
        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
            /// Whether `s` parses, without keeping it.
            pub(crate) fn is_valid(s: &str) -> bool {
                ($valid)(s)
            }
        }
        impl FromStr for $name {
            type Err = Invalid;
            fn from_str(s: &str) -> Result<Self, Invalid> {
                if ($valid)(s) {
                    Ok($name(s.to_string()))
                } else {
                    Err(Invalid {
                        what: $what,
                        value: s.to_string(),
                    })
                }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // `pad`, so that width and alignment flags apply.
                f.pad(&self.0)
            }
        }
        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        impl AsRef<std::path::Path> for $name {
            fn as_ref(&self) -> &std::path::Path {
                self.0.as_ref()
            }
        }
        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.0 == *other
            }
        }
        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.0
            }
        }
        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?
                    .parse()
                    .map_err(serde::de::Error::custom)
            }
        }
    };
}

macro_rules! minted_id {
    ($name:ident, $prefix:literal, $what:literal) => {
        #[doc = concat!("`", $prefix, "` and a UUIDv7 in lowercase hex without dashes.")]
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// A new id, later in order than every id minted before it by this clock.
            pub fn mint() -> $name {
                $name(format!(
                    concat!($prefix, "{}"),
                    uuid::Uuid::now_v7().simple()
                ))
            }
            /// The time it was minted: the UUIDv7's first 48 bits, Unix milliseconds.
            pub fn minted_at(&self) -> SystemTime {
                let ms = u64::from_str_radix(&self.0[$prefix.len()..][..12], 16).unwrap_or(0);
                UNIX_EPOCH + Duration::from_millis(ms)
            }
        }

        string_type!($name, $what, |s: &str| is_uuid7_id(s, $prefix));
    };
}

fn is_uuid7_id(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == 32
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            // The version nibble: 7.
            && hex.as_bytes()[12] == b'7'
    })
}

minted_id!(SessionId, "ses_", "session id");
minted_id!(FormationId, "frm_", "formation id");

/// A roster member's name: `^[a-z][a-z0-9-]{0,31}$`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemberName(String);
string_type!(MemberName, "member name", |s: &str| is_name(s, 32));

/// An installed capsule's name, `<scope>/<name>`, each `^[a-z][a-z0-9-]{0,63}$`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArtifactName(String);
string_type!(ArtifactName, "capsule name", |s: &str| s
    .split_once('/')
    .is_some_and(|(scope, name)| is_name(scope, 64) && is_name(name, 64)));

/// A sha256 digest: 64 lowercase hex digits, as the store, murmur.lock and traces
/// write it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256(String);
string_type!(Sha256, "sha256", |s: &str| s.len() == 64
    && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));

impl Sha256 {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Sha256 {
        use sha2::Digest;
        Sha256(hex::encode(sha2::Sha256::digest(bytes)))
    }

    /// A finished hasher's digest.
    pub fn from_hasher(hasher: sha2::Sha256) -> Sha256 {
        use sha2::Digest;
        Sha256(hex::encode(hasher.finalize()))
    }
}

#[cfg(test)]
mod tests;
