//! The manifest reader: any text is a manifest or an E-MAN diagnostic with a place.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match mur::manifest::parse(text, Path::new("murmur.yaml")) {
        Ok(m) => {
            let _ = m.card_skills();
        }
        Err(d) => {
            assert!(d.code.as_str().starts_with("E-MAN-"), "{d}");
            assert!(d.file.is_some(), "{d}");
        }
    }
});
