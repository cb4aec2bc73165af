//! The start-time rule: a capsule that starts native processes runs only where they
//! can be confined, or under an explicit, recorded opt-out.

use super::net::{Kernel, Tier};
use crate::catalogue::{E_RUN_054, W_RUN_011};
use crate::diag::Diagnostic;
use crate::manifest::{Manifest, Transport};

/// How the opt-out was given, when it was: `--unconfined` or `MURMUR_UNCONFINED=1`.
pub fn opt_out(flag: bool) -> Option<&'static str> {
    if flag {
        Some("--unconfined")
    } else if std::env::var(crate::env::MURMUR_UNCONFINED).is_ok_and(|v| v == "1") {
        Some("MURMUR_UNCONFINED=1")
    } else {
        None
    }
}

/// What native processes the manifest starts (for messages), or None.
pub fn native(m: &Manifest) -> Option<&'static str> {
    match (&m.agent.transport, m.capabilities.shell.is_some()) {
        (Transport::Process(_), true) => Some("a `transport: process` harness and shell commands"),
        (Transport::Process(_), false) => Some("a `transport: process` harness"),
        (_, true) => Some("shell commands"),
        _ => None,
    }
}

/// At session start: Ok(Some((opt-out, W-RUN-011))) when the user opted out (the
/// caller prints the warning once and records the opt-out in `session_start`),
/// Ok(None) when nothing native runs or the kernel can confine it, E-RUN-054 when it
/// cannot and the user did not opt out.
pub fn check(
    name: &str,
    m: &Manifest,
    flag: bool,
    kernel: &Kernel,
) -> Result<Option<(&'static str, Diagnostic)>, Diagnostic> {
    let Some(what) = native(m) else {
        return Ok(None);
    };
    if let Some(how) = opt_out(flag) {
        let w = Diagnostic::new(
            W_RUN_011,
            format!(
                "{name} starts {what}; {how}: they run unconfined, with your user's access to files, network and processes"
            ),
        );
        return Ok(Some((how, w)));
    }
    match kernel.missing() {
        None => Ok(None),
        Some(missing) => Err(Diagnostic::new(
            E_RUN_054,
            format!("{name} starts {what}, and this kernel cannot confine them: it lacks {missing}"),
        )
        .hint("Run on a kernel with Landlock enabled, or opt out knowingly: `mur run --unconfined` or MURMUR_UNCONFINED=1.")),
    }
}

/// One line for `mur doctor`: the confinement a member's native processes get, what is
/// enforced and what is not.
pub fn describe(m: &Manifest, kernel: &Kernel, opted_out: Option<&str>) -> String {
    let Some(what) = native(m) else {
        return "nothing native to confine (WASM components run in mur's host)".into();
    };
    if let Some(how) = opted_out {
        return format!("unconfined ({how}): {what} with your user's whole access");
    }
    let Some(tier) = kernel.tier() else {
        let missing = kernel.missing().unwrap_or_default();
        return format!("refused at start (E-RUN-054): this kernel lacks {missing}");
    };
    let enforced = match tier {
        Tier::Netns => {
            "a network namespace with only loopback (the egress proxy its one way out), files deny by default (reads included), TCP only to the proxy's port, UDP/raw/packet/MPTCP sockets and io_uring refused, signals and abstract sockets scoped to the tree, no ptrace outside it"
        }
        Tier::Landlock => {
            "files deny by default (reads included), TCP only to the egress proxy's port, UDP/raw/packet/MPTCP sockets and io_uring refused, signals and abstract sockets scoped to the tree, no ptrace outside it"
        }
    };
    let not = tier.gap();
    format!(
        "tier {}: {what}; enforced: {enforced}; not enforced: {not}",
        tier.as_str()
    )
}

/// The network tier this kernel gives and what it cannot stop, for `mur doctor` and
/// the session's start line: `netns`, or `landlock` and why not `netns`.
pub fn tier_line(kernel: &Kernel) -> String {
    match (kernel.tier(), &kernel.netns) {
        (None, _) => "none: no native process can be confined here (E-RUN-054)".into(),
        (Some(t @ Tier::Netns), _) => format!("{}; cannot stop: {}", t.as_str(), t.gap()),
        (Some(t), Err(why)) => format!(
            "{} (tier netns is not available: {why}); cannot stop: {}",
            t.as_str(),
            t.gap()
        ),
        (Some(t), Ok(())) => format!("{}; cannot stop: {}", t.as_str(), t.gap()),
    }
}
