//! The spec's time limits, in one place.
//!
//! `MUR_TEST_TIME_SCALE` (`crate::testing::time_scale`, e.g. `0.05`) multiplies every
//! limit below, so that fast test runs exercise the same code paths; it is off (scale
//! 1) unless set, and the e2e suite proves the real limits with it unset.

use std::time::Duration;

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

/// `limit` under the test time scale in force (1 unless set).
pub fn scaled(limit: Duration) -> Duration {
    limit.mul_f64(crate::testing::time_scale())
}

/// When this process started, as near as mur can tell: the first call, which `main`
/// makes first thing. A formation's `--deadline` counts from it.
pub fn process_start() -> (std::time::Instant, std::time::SystemTime) {
    static START: std::sync::OnceLock<(std::time::Instant, std::time::SystemTime)> =
        std::sync::OnceLock::new();
    *START.get_or_init(|| (std::time::Instant::now(), std::time::SystemTime::now()))
}

/// How long one call of a WASM component (a tool call, a hook) may run: its CPU bound
/// (an epoch deadline) and its wall-clock bound (waiting on the network included).
pub const COMPONENT_CALL: Duration = Duration::from_secs(10);
/// How long a session's end waits for its asynchronous hooks (drained at session end
/// and in wind-down); well inside [`WIND_DOWN_EXIT`].
pub const HOOK_DRAIN: Duration = Duration::from_secs(5);
