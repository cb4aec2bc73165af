//! The roster reader: any text is a roster or an E-ROS refusal with its file, never
//! a panic; checks 2–5 run on whatever parsed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let refusal = match mur::roster::parse(text, Path::new("roster.yaml")) {
        Ok(roster) => match mur::roster::check(&roster) {
            Ok(()) => return,
            Err(r) => r,
        },
        Err(r) => r,
    };
    let d = refusal.diagnostic;
    assert!(d.code.as_str().starts_with("E-ROS-"), "{d}");
    assert!(d.file.is_some(), "{d}");
});
