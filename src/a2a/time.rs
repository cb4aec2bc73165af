//! Timestamps as A2A writes them: ISO-8601 UTC with millisecond precision and `Z`.

use std::time::SystemTime;

/// Now, as `2026-12-02T14:40:54.123Z`.
pub fn now() -> String {
    format(SystemTime::now())
}

pub fn format(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// Reads a UTC timestamp (`…Z`, any fractional precision); `None` when it does not read.
pub fn parse(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_millis() {
        let text = "2026-12-02T14:40:54.123Z";
        assert_eq!(format(parse(text).unwrap()), text);
        assert!(parse("yesterday").is_none());
    }
}
