//! Inputs the fuzz targets in fuzz/ found, kept as plain tests so `cargo test` holds
//! them (docs/testing.md, Fuzzing).

/// harness_line: an unknown `type` was quoted whole in the refusal, so a harness could
/// put megabytes into the trace and the task's status.
#[test]
fn a_harness_line_with_a_long_unknown_type_gets_a_bounded_reason() {
    let line = format!(r#"{{"type":"{}","text":"x"}}"#, "m".repeat(100_000));
    let reason = match mur::agent::process::parse_line(&line) {
        Ok(_) => panic!("an unknown type was read"),
        Err(reason) => reason,
    };
    assert!(
        reason.chars().count() < 520,
        "{} chars",
        reason.chars().count()
    );
    assert!(reason.contains("not one of its messages"), "{reason}");
}
