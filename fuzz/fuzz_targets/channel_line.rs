//! The formation channel's lines: each is credentials, doors, or refused; credentials
//! that parse are validated against a real verification key.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use mur::channel::{Claims, Line};
use mur::credential::{FormationKey, VerifyKey};

static KEY: LazyLock<VerifyKey> =
    LazyLock::new(|| FormationKey::mint().expect("random bytes").verify_key());

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n') {
        if let Ok(Line::Credentials(c)) = Line::parse(line) {
            let key = VerifyKey::from_text(&c.formation, &c.verify_key).unwrap_or(KEY.clone());
            let _ = c.validate(KEY.formation_id(), |_, token| {
                key.verify(token).ok().map(|c| Claims {
                    formation: c.formation,
                    from: c.from,
                    to: c.to,
                })
            });
        }
    }
});
