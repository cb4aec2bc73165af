//! Formation credentials: the launcher mints one formation id and one ed25519 signing
//! key per launch, signs one token per roster edge, and hands every door the public
//! half, which verifies tokens and cannot sign one.
//!
//! Wire form: `mft1.<payload>.<signature>`, where
//! - `<payload>` is base64url without padding of the UTF-8 JSON
//!   `{"formation":"frm_…","from":"<member>","to":"<member>"}` (keys in that order);
//! - `<signature>` is base64url without padding of the 64-byte ed25519 signature
//!   (RFC 8032, checked with `verify_strict`) over the ASCII bytes `mft1.<payload>`,
//!   so the version prefix is signed too.
//!
//! A door remembers tokens it has verified, keyed by the SHA-256 of their exact bytes
//! (the key never changes for a formation), so a request pays one hash instead of one
//! signature check. Tokens are secrets: [`FormationToken`] never prints its value.

use std::collections::HashMap;
use std::fmt;
use std::sync::RwLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use rand::TryRng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The version prefix of every formation token.
pub const TOKEN_PREFIX: &str = "mft1";
/// How many verified tokens a door remembers; a formation issues one per edge, so a
/// door sees far fewer. Past the cap, tokens are still verified, just not remembered.
pub const CACHE_CAP: usize = 4096;

/// What a formation token says: which formation, which member presents it, and the
/// one door it is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    pub formation: String,
    pub from: String,
    pub to: String,
}

/// The launcher's signing half. Lives only in the launcher's memory; zeroed on drop.
/// Deliberately implements neither `Debug`, `Display`, `Clone` nor `Serialize`.
pub struct FormationKey {
    formation: crate::ids::FormationId,
    key: SigningKey,
}

impl FormationKey {
    /// Mints a formation: a fresh id and a signing key made from 32 bytes of the
    /// operating system's random source.
    pub fn mint() -> Result<FormationKey, rand::rngs::SysError> {
        let mut secret = [0u8; 32];
        rand::rngs::SysRng.try_fill_bytes(&mut secret)?;
        let key = SigningKey::from_bytes(&secret);
        secret.fill(0);
        Ok(FormationKey {
            formation: crate::ids::FormationId::mint(),
            key,
        })
    }

    pub fn formation_id(&self) -> &crate::ids::FormationId {
        &self.formation
    }

    /// The public half, handed to every member's door.
    pub fn verify_key(&self) -> VerifyKey {
        VerifyKey {
            formation: self.formation.to_string(),
            key: self.key.verifying_key(),
        }
    }

    /// Signs the token for the edge `from → to`.
    pub fn issue(&self, from: &str, to: &str) -> FormationToken {
        let claims = Claims {
            formation: self.formation.to_string(),
            from: from.to_string(),
            to: to.to_string(),
        };
        // Serializing three strings cannot fail.
        let payload = serde_json::to_vec(&claims).unwrap_or_default();
        let signed = format!("{TOKEN_PREFIX}.{}", B64.encode(payload));
        let signature = self.key.sign(signed.as_bytes());
        FormationToken(format!("{signed}.{}", B64.encode(signature.to_bytes())))
    }
}

/// A signed formation token. A secret: `Debug` shows nothing of it. It crosses only
/// the formation channel (serialized as its text) and the Authorization header.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FormationToken(String);

impl FormationToken {
    /// The token's text, to put behind `Authorization: Bearer`. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Wraps a token received on the formation channel.
    pub fn from_secret(text: String) -> Self {
        FormationToken(text)
    }
}

impl fmt::Debug for FormationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FormationToken(<redacted>)")
    }
}

/// The public half of a formation's key, bound to its formation id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyKey {
    formation: String,
    key: VerifyingKey,
}

impl VerifyKey {
    pub fn formation_id(&self) -> &str {
        &self.formation
    }

    /// The key's 32 bytes as base64url without padding, for the formation channel.
    pub fn key_text(&self) -> String {
        B64.encode(self.key.as_bytes())
    }

    /// Reads a key written by [`VerifyKey::key_text`] for `formation`.
    pub fn from_text(formation: &str, text: &str) -> Result<VerifyKey, InvalidToken> {
        let bytes = B64.decode(text).map_err(|_| InvalidToken::Malformed)?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| InvalidToken::Malformed)?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|_| InvalidToken::Malformed)?;
        Ok(VerifyKey {
            formation: formation.to_string(),
            key,
        })
    }

    /// Checks a token's form, signature and formation, with no cache.
    pub fn verify(&self, token: &str) -> Result<Claims, InvalidToken> {
        let mut pieces = token.split('.');
        let (Some(prefix), Some(payload), Some(signature), None) =
            (pieces.next(), pieces.next(), pieces.next(), pieces.next())
        else {
            return Err(InvalidToken::Malformed);
        };
        if prefix != TOKEN_PREFIX {
            return Err(InvalidToken::Malformed);
        }
        let signature = B64.decode(signature).map_err(|_| InvalidToken::Malformed)?;
        let signature = Signature::from_slice(&signature).map_err(|_| InvalidToken::Malformed)?;
        let signed = &token[..prefix.len() + 1 + payload.len()];
        self.key
            .verify_strict(signed.as_bytes(), &signature)
            .map_err(|_| InvalidToken::BadSignature)?;
        let payload = B64.decode(payload).map_err(|_| InvalidToken::Malformed)?;
        let claims: Claims =
            serde_json::from_slice(&payload).map_err(|_| InvalidToken::Malformed)?;
        if claims.formation != self.formation {
            return Err(InvalidToken::OtherFormation);
        }
        Ok(claims)
    }
}

/// Why a token did not verify. A door answers every one of these with the same
/// `401 invalid_token` body; the reason is for tests and the launcher's own checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidToken {
    #[error("not a formation token")]
    Malformed,
    #[error("signature does not verify")]
    BadSignature,
    #[error("issued for another formation")]
    OtherFormation,
}

/// What a door concludes from a formation token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCheck {
    /// Valid and issued for this door: served as `member:<from>`.
    ForThisDoor(Claims),
    /// Valid, but issued for another member's door (`403 not_permitted`).
    ForAnotherDoor(Claims),
}

/// A door's verifier: the public key, this member's roster name, and the tokens
/// already verified.
pub struct Verifier {
    key: VerifyKey,
    member: String,
    cache: Option<RwLock<HashMap<[u8; 32], Claims>>>,
}

impl Verifier {
    /// A verifier that remembers verified tokens.
    pub fn new(key: VerifyKey, member: impl Into<String>) -> Self {
        Verifier {
            key,
            member: member.into(),
            cache: Some(RwLock::new(HashMap::new())),
        }
    }

    /// A verifier that checks the signature on every call (for benchmarks).
    pub fn without_cache(key: VerifyKey, member: impl Into<String>) -> Self {
        Verifier {
            cache: None,
            ..Verifier::new(key, member)
        }
    }

    pub fn member(&self) -> &str {
        &self.member
    }

    pub fn formation_id(&self) -> &str {
        self.key.formation_id()
    }

    /// Verifies `token` (or finds it remembered) and says whose door it is for.
    pub fn check(&self, token: &str) -> Result<TokenCheck, InvalidToken> {
        let claims = self.verified(token)?;
        if claims.to == self.member {
            Ok(TokenCheck::ForThisDoor(claims))
        } else {
            Ok(TokenCheck::ForAnotherDoor(claims))
        }
    }

    fn verified(&self, token: &str) -> Result<Claims, InvalidToken> {
        let Some(cache) = &self.cache else {
            return self.key.verify(token);
        };
        // Keyed by digest: a lookup compares digests, never a token's secret bytes.
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(claims) = cache.read().ok().and_then(|c| c.get(&digest).cloned()) {
            return Ok(claims);
        }
        let claims = self.key.verify(token)?;
        if let Ok(mut cache) = cache.write()
            && cache.len() < CACHE_CAP
        {
            cache.insert(digest, claims.clone());
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(token: &str, piece: usize, f: impl FnOnce(Vec<u8>) -> Vec<u8>) -> String {
        let mut pieces: Vec<String> = token.split('.').map(String::from).collect();
        pieces[piece] = B64.encode(f(B64.decode(&pieces[piece]).unwrap()));
        pieces.join(".")
    }

    #[test]
    fn issued_token_verifies_with_the_public_half_and_has_the_documented_payload() {
        let key = FormationKey::mint().unwrap();
        let token = key.issue("planner", "coder");
        let text = token.expose();
        assert!(text.starts_with("mft1."));
        let payload = B64.decode(text.split('.').nth(1).unwrap()).unwrap();
        let expected = format!(
            r#"{{"formation":"{}","from":"planner","to":"coder"}}"#,
            key.formation_id()
        );
        assert_eq!(String::from_utf8(payload).unwrap(), expected);
        let verifier = Verifier::new(key.verify_key(), "coder");
        let check = verifier.check(text).unwrap();
        assert!(matches!(check, TokenCheck::ForThisDoor(c) if c.from == "planner"));
        // A second check is answered from the cache, with the same answer.
        assert!(matches!(
            verifier.check(text),
            Ok(TokenCheck::ForThisDoor(_))
        ));
    }

    #[test]
    fn forged_token_signed_by_another_key_is_refused() {
        let real = FormationKey::mint().unwrap();
        let forger = FormationKey {
            formation: real.formation.clone(),
            key: SigningKey::from_bytes(&[7u8; 32]),
        };
        let forged = forger.issue("planner", "coder");
        let verifier = Verifier::new(real.verify_key(), "coder");
        assert_eq!(
            verifier.check(forged.expose()),
            Err(InvalidToken::BadSignature)
        );
    }

    #[test]
    fn altered_payload_is_refused() {
        let key = FormationKey::mint().unwrap();
        let token = key.issue("reviewer", "coder");
        let altered = edit(token.expose(), 1, |p| {
            String::from_utf8(p)
                .unwrap()
                .replace("reviewer", "planner")
                .into_bytes()
        });
        let verifier = Verifier::new(key.verify_key(), "coder");
        assert_eq!(verifier.check(&altered), Err(InvalidToken::BadSignature));
    }

    #[test]
    fn altered_signature_is_refused() {
        let key = FormationKey::mint().unwrap();
        let token = key.issue("planner", "coder");
        let altered = edit(token.expose(), 2, |mut s| {
            s[10] ^= 1;
            s
        });
        let verifier = Verifier::new(key.verify_key(), "coder");
        assert_eq!(verifier.check(&altered), Err(InvalidToken::BadSignature));
        // A valid token remembered first does not make its altered twin pass.
        assert!(matches!(
            verifier.check(token.expose()),
            Ok(TokenCheck::ForThisDoor(_))
        ));
        assert_eq!(verifier.check(&altered), Err(InvalidToken::BadSignature));
    }

    #[test]
    fn another_formations_token_is_refused() {
        let ours = FormationKey::mint().unwrap();
        let theirs = FormationKey::mint().unwrap();
        let token = theirs.issue("planner", "coder");
        let verifier = Verifier::new(ours.verify_key(), "coder");
        assert_eq!(
            verifier.check(token.expose()),
            Err(InvalidToken::BadSignature)
        );
        // Even signed by our key, a payload naming another formation is refused.
        let confused = FormationKey {
            formation: theirs.formation.clone(),
            key: SigningKey::from_bytes(&ours.key.to_bytes()),
        };
        let token = confused.issue("planner", "coder");
        assert_eq!(
            verifier.check(token.expose()),
            Err(InvalidToken::OtherFormation)
        );
    }

    #[test]
    fn token_for_another_door_is_valid_but_not_for_this_one() {
        let key = FormationKey::mint().unwrap();
        let token = key.issue("planner", "reviewer");
        let verifier = Verifier::new(key.verify_key(), "coder");
        match verifier.check(token.expose()) {
            Ok(TokenCheck::ForAnotherDoor(c)) => assert_eq!(c.from, "planner"),
            other => panic!("expected ForAnotherDoor, got {other:?}"),
        }
    }

    #[test]
    fn malformed_tokens_are_refused() {
        let key = FormationKey::mint().unwrap();
        let verifier = Verifier::without_cache(key.verify_key(), "coder");
        let good = key.issue("planner", "coder");
        let extra = format!("{}.x", good.expose());
        let v2 = good.expose().replacen("mft1", "mft2", 1);
        for bad in ["", "mft1", "mft1..", "a.b.c", extra.as_str(), v2.as_str()] {
            assert_eq!(verifier.check(bad), Err(InvalidToken::Malformed), "{bad:?}");
        }
    }

    #[test]
    fn verify_key_round_trips_through_text() {
        let key = FormationKey::mint().unwrap();
        let vk = key.verify_key();
        let back = VerifyKey::from_text(key.formation_id().as_str(), &vk.key_text()).unwrap();
        assert_eq!(back, vk);
        assert!(VerifyKey::from_text("frm_x", "short").is_err());
    }

    #[test]
    fn token_debug_does_not_show_the_secret() {
        let key = FormationKey::mint().unwrap();
        let token = key.issue("planner", "coder");
        let shown = format!("{token:?}");
        assert!(!shown.contains(token.expose()));
    }
}
