//! The spec's time limits, in one place, and the one test setting that may scale them.
//!
//! `MUR_TEST_TIME_SCALE` (a positive number, e.g. `0.05`) multiplies every limit
//! below. It exists so that fast test runs can exercise the same code paths; it is off
//! (scale 1) unless set, and the e2e suite proves the real limits with it unset.

use std::sync::OnceLock;
use std::time::Duration;

/// The test setting's name. Documented in docs/testing.md.
pub const SCALE_ENV: &str = crate::env::MUR_TEST_TIME_SCALE;

/// Each member's time from its own start to become ready.
pub const READINESS: Duration = Duration::from_secs(180);
/// How often a peer's door is probed while the launcher waits for it.
pub const READINESS_PROBE: Duration = Duration::from_millis(100);
/// How long a member waits for the first line of its formation channel.
pub const CHANNEL_FIRST_LINE: Duration = Duration::from_secs(10);
/// How long a virtual peer address waits for its door URL to arrive.
pub const DOOR_URL_WAIT: Duration = Duration::from_secs(10);
/// A member exits with 143 this long after its lifeline closed.
pub const WIND_DOWN_EXIT: Duration = Duration::from_secs(20);
/// The launcher SIGKILLs a member's process group this long after closing its lifeline.
pub const WIND_DOWN_KILL: Duration = Duration::from_secs(25);
/// No member of a killed formation is left running after this long.
pub const TEARDOWN_BOUND: Duration = Duration::from_secs(30);

/// The scale in force: 1.0 unless `MUR_TEST_TIME_SCALE` holds a positive number.
pub fn scale() -> f64 {
    static SCALE: OnceLock<f64> = OnceLock::new();
    *SCALE.get_or_init(|| parse_scale(std::env::var(SCALE_ENV).ok().as_deref()))
}

fn parse_scale(value: Option<&str>) -> f64 {
    value
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1.0)
        .unwrap_or(1.0)
}

/// `limit` under the scale in force.
pub fn scaled(limit: Duration) -> Duration {
    limit.mul_f64(scale())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_is_off_unless_set_to_a_sane_fraction() {
        assert_eq!(parse_scale(None), 1.0);
        assert_eq!(parse_scale(Some("0.05")), 0.05);
        for bad in ["", "0", "-1", "abc", "NaN", "inf", "3"] {
            assert_eq!(parse_scale(Some(bad)), 1.0, "{bad}");
        }
    }
}
