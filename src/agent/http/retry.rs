//! When the http transport tries a request again, and how long it waits first.

use std::time::{Duration, SystemTime};

use crate::timing;

/// The statuses worth another try: rate limited, or the server is having trouble.
pub const RETRY_STATUSES: [u16; 5] = [429, 500, 502, 503, 504];

/// The first backoff; each try after doubles it, up to [`BACKOFF_CAP`].
pub const BACKOFF_BASE: Duration = Duration::from_millis(500);
pub const BACKOFF_CAP: Duration = Duration::from_secs(30);
/// The longest `Retry-After` mur waits; asked to wait longer, the turn fails.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(120);

/// The wait before try `attempt + 1` after try `attempt` (from 1) failed: exponential,
/// with jitter (a random half to all of it), under `MUR_TEST_TIME_SCALE`.
pub fn backoff(attempt: u32) -> Duration {
    let full = BACKOFF_BASE
        .saturating_mul(1 << attempt.saturating_sub(1).min(16))
        .min(BACKOFF_CAP);
    timing::scaled(full.mul_f64(0.5 + rand::random::<f64>() / 2.0))
}

/// A `Retry-After` value: whole seconds, or an HTTP date (a date gone by is 0).
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_both_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(" 0 ", now), Some(Duration::ZERO));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(retry_after(&later, now), Some(Duration::from_secs(7)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(retry_after(&earlier, now), Some(Duration::ZERO));
        for bad in ["", "soon", "-1", "1.5"] {
            assert_eq!(retry_after(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_cap() {
        let scale = crate::testing::time_scale();
        for attempt in 1..=8 {
            let full = BACKOFF_BASE * (1 << (attempt - 1));
            let full = full.min(BACKOFF_CAP).mul_f64(scale);
            let got = backoff(attempt);
            assert!(
                got >= full / 2 && got <= full,
                "try {attempt}: {got:?} of {full:?}"
            );
        }
        assert!(backoff(100) <= BACKOFF_CAP);
    }
}
