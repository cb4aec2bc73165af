//! The process harness's lines: each is one reply or a reason of bounded length
//! (it goes into the trace and the task's status), never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(reason) = mur::agent::process::parse_line(text.trim()) {
        // The reason quotes at most 200 characters of the line.
        assert!(reason.chars().count() < 520, "{}", reason.len());
    }
});
