//! The documented test settings (docs/testing.md), all of them, and the test-only
//! code behind them. Each is off unless set, and each exists only so a test can reach
//! a code path that real inputs would reach slowly or not at all. Production code
//! reaches this module through one call per setting.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// Multiplies every time limit of the spec (`crate::timing`) by a number in (0, 1].
pub(crate) const TIME_SCALE_ENV: &str = crate::env::MUR_TEST_TIME_SCALE;
/// The program the launcher starts for every member instead of `mur` itself.
pub(crate) const MEMBER_PROGRAM_ENV: &str = crate::env::MUR_TEST_MEMBER_PROGRAM;
/// Makes the launcher grow until the OOM killer ends it, `<seconds>` after the
/// entry member has started.
pub(crate) const LAUNCHER_BALLOON_ENV: &str = crate::env::MUR_TEST_LAUNCHER_BALLOON;
/// Makes one formation member grow until the OOM killer ends it: `<member>:<seconds>`
/// after it became ready.
pub(crate) const MEMBER_BALLOON_ENV: &str = crate::env::MUR_TEST_MEMBER_BALLOON;
/// How `spawn` clones every child, instead of the architecture's own way.
pub(crate) const SPAWN_VIA_ENV: &str = crate::env::MUR_TEST_SPAWN_VIA;

/// A session's write quota for its components in place of
/// [`crate::component::WRITE_QUOTA`].
pub(crate) const WRITE_QUOTA_ENV: &str = crate::env::MUR_TEST_WRITE_QUOTA;

/// The components' write quota in force: `MUR_TEST_WRITE_QUOTA` when it holds a
/// whole number of bytes, else `default`.
pub(crate) fn write_quota(default: u64) -> u64 {
    std::env::var(WRITE_QUOTA_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The time scale in force: 1.0 unless `MUR_TEST_TIME_SCALE` holds a number in (0, 1].
pub(crate) fn time_scale() -> f64 {
    static SCALE: OnceLock<f64> = OnceLock::new();
    *SCALE.get_or_init(|| parse_scale(std::env::var(TIME_SCALE_ENV).ok().as_deref()))
}

fn parse_scale(value: Option<&str>) -> f64 {
    value
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1.0)
        .unwrap_or(1.0)
}

/// `MUR_TEST_TERMINATION_LOG`, when set: the launcher's termination message goes there.
pub(crate) fn termination_log() -> Option<PathBuf> {
    std::env::var_os(crate::env::MUR_TEST_TERMINATION_LOG).map(PathBuf::from)
}

/// `MUR_TEST_LANDLOCK_ABI`, when it holds a whole number: the Landlock ABI the
/// confinement takes the kernel to have.
pub(crate) fn landlock_abi() -> Option<i32> {
    std::env::var(crate::env::MUR_TEST_LANDLOCK_ABI)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `MUR_TEST_CONFINE_TIER`, when set: `landlock` turns tier `netns` off.
pub(crate) fn confine_tier() -> Option<&'static str> {
    static TIER: OnceLock<Option<String>> = OnceLock::new();
    TIER.get_or_init(|| std::env::var(crate::env::MUR_TEST_CONFINE_TIER).ok())
        .as_deref()
        .map(str::trim)
}

/// `MUR_TEST_MEMBER_PROGRAM`, when set.
pub(crate) fn member_program() -> Option<PathBuf> {
    std::env::var_os(MEMBER_PROGRAM_ENV).map(PathBuf::from)
}

/// `MUR_TEST_SPAWN_VIA`, when set: how `spawn` clones every child (`Via::parse` reads
/// it), so x86_64 takes the fork-like paths aarch64 and a seccomp-filtered container
/// take.
pub(crate) fn spawn_via() -> Option<&'static str> {
    static VIA: OnceLock<Option<String>> = OnceLock::new();
    VIA.get_or_init(|| std::env::var(SPAWN_VIA_ENV).ok())
        .as_deref()
}

/// `MUR_TEST_LAUNCHER_BALLOON`: called by the launcher once its entry member has
/// started; does nothing unless the setting holds a whole number of seconds.
pub(crate) fn launcher_balloon() {
    if let Some(after) = parse_balloon(std::env::var(LAUNCHER_BALLOON_ENV).ok().as_deref()) {
        start_balloon(after, "the launcher");
    }
}

fn parse_balloon(value: Option<&str>) -> Option<Duration> {
    value?.trim().parse().ok().map(Duration::from_secs)
}

/// `MUR_TEST_MEMBER_BALLOON=<member>:<seconds>`: called by a formation member once it
/// is ready (its readiness line is out). The member the setting names grows as the
/// launcher's balloon does, so the e2e suite can have the OOM killer take one member,
/// and only it, while its formation runs.
pub(crate) fn member_balloon(member: &str) {
    if let Some(after) =
        parse_member_balloon(std::env::var(MEMBER_BALLOON_ENV).ok().as_deref(), member)
    {
        start_balloon(after, &format!("member `{member}`"));
    }
}

fn parse_member_balloon(value: Option<&str>, member: &str) -> Option<Duration> {
    let (named, after) = value?.trim().split_once(':')?;
    (named == member).then(|| parse_balloon(Some(after)))?
}

/// The e2e suite's OOM scenario needs the kernel to pick the launcher, not a member,
/// as its victim. A container's memory limit alone does not make that certain
/// (oom_badness rounds oom_score_adj), so the launcher makes itself the largest
/// process by far: it raises its own oom_score_adj to 1000 (raising needs no
/// privilege; members started earlier keep theirs) and, on a thread of its own,
/// allocates and touches memory in 1 MiB steps, forever. Nothing frees it: only the
/// OOM killer ends this process, which is the point. The delay lets a test see the
/// formation up, then stay still while the kernel acts.
fn start_balloon(after: Duration, who: &str) {
    use std::io::Write;
    let _ = std::fs::write("/proc/self/oom_score_adj", "1000");
    // Never a panic on a closed stderr.
    let _ = writeln!(
        std::io::stderr(),
        "[mur run] test setting: {who} allocates until killed, from {after:?} on"
    );
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let mut held: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut chunk = vec![0u8; 1 << 20];
            // Touch every page so the memory is really charged to the cgroup.
            for page in chunk.iter_mut().step_by(4096) {
                *page = 1;
            }
            held.push(std::hint::black_box(chunk));
        }
    });
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

    #[test]
    fn a_member_balloon_names_its_member_and_whole_seconds() {
        let got = |v: &str, m: &str| parse_member_balloon(Some(v), m);
        assert_eq!(got("hog:3", "hog"), Some(Duration::from_secs(3)));
        assert_eq!(got(" hog:0 ", "hog"), Some(Duration::ZERO));
        assert_eq!(got("hog:3", "lead"), None);
        for off in ["hog", "hog:", "hog:x", ":3", "hog:-1"] {
            assert_eq!(got(off, "hog"), None, "{off}");
        }
        assert_eq!(parse_member_balloon(None, "hog"), None);
    }

    #[test]
    fn the_balloon_is_off_unless_given_whole_seconds() {
        assert_eq!(parse_balloon(None), None);
        assert_eq!(parse_balloon(Some("0")), Some(Duration::ZERO));
        assert_eq!(parse_balloon(Some(" 6 ")), Some(Duration::from_secs(6)));
        for off in ["", "yes", "-1", "1.5", "6s"] {
            assert_eq!(parse_balloon(Some(off)), None, "{off}");
        }
    }
}
