//! Host warnings (W-SEC-013): protections mur relies on that this host lacks. A
//! launcher prints them once for its whole formation and tells every member so
//! (`MURMUR_HOST_WARNINGS_REPORTED=1`); a lone `mur run` prints them itself.

use crate::catalogue::W_SEC_013;
use crate::diag::Diagnostic;

/// The warnings that apply to this host now.
pub(crate) fn warnings() -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if nix::unistd::geteuid().is_root() && !root_allowed() {
        out.push(
            Diagnostic::new(
                W_SEC_013,
                "mur runs as root: capsules' harnesses and shell commands are confined by Landlock and seccomp, but keep root's kernel privileges",
            )
            .hint("Run mur as an ordinary user: Landlock confines root's files, network and signals too, but not root's other kernel privileges (loading modules, changing system settings). Where root is meant (a CI container), MURMUR_ALLOW_ROOT=1 silences this."),
        );
    }
    out
}

/// `MURMUR_ALLOW_ROOT=1`: running as root is meant (a CI container), so not warned of.
fn root_allowed() -> bool {
    std::env::var(crate::env::MURMUR_ALLOW_ROOT).is_ok_and(|v| v == "1")
}

/// Prints the host warnings to stderr unless a launcher already reported them.
pub(crate) fn report_unless_reported() {
    if std::env::var(crate::env::MURMUR_HOST_WARNINGS_REPORTED).is_ok_and(|v| v == "1") {
        return;
    }
    for w in warnings() {
        crate::output::stderr_line(&w);
    }
}
