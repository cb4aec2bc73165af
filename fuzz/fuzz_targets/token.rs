//! The token parser and verifier. Arbitrary text never verifies and never panics;
//! a real token with any byte changed, cut or extended never verifies either.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use mur::credential::{FormationKey, TokenCheck, Verifier, VerifyKey};

struct Fixture {
    verifier: Verifier,
    key: VerifyKey,
    token: String,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let key = FormationKey::mint().expect("random bytes");
    let token = key.issue("entry", "coder").expose().to_string();
    Fixture {
        verifier: Verifier::new(key.verify_key(), "coder"),
        key: key.verify_key(),
        token,
    }
});

fuzz_target!(|data: &[u8]| {
    let f = &*FIXTURE;
    let text = String::from_utf8_lossy(data);
    // As a whole token.
    if text != f.token {
        assert!(
            f.key.verify(&text).is_err(),
            "forged token verified: {text}"
        );
        assert!(f.verifier.check(&text).is_err());
    }
    // As a verification key's text.
    let _ = VerifyKey::from_text(f.key.formation_id(), &text);
    // As an edit of the real token: the first byte picks a place, the rest replace
    // the bytes from there (empty: the token is cut there).
    if let Some((&at, rest)) = data.split_first() {
        let mut edited = f.token.as_bytes().to_vec();
        let at = at as usize % (edited.len() + 1);
        edited.truncate(at);
        edited.extend_from_slice(rest);
        let edited = String::from_utf8_lossy(&edited);
        let verdict = f.verifier.check(&edited);
        if edited == f.token {
            assert!(matches!(verdict, Ok(TokenCheck::ForThisDoor(_))));
        } else {
            assert!(verdict.is_err(), "an edited token verified: {edited}");
        }
    }
});
