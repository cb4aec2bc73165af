//! The Landlock ruleset: files (deny by default, reads included), TCP connect and
//! bind, and the ABI 6 scopes (signals, abstract Unix sockets).
//!
//! The ruleset is built and filled in the parent; only its fd goes to the child, which
//! calls `landlock_restrict_self` on it itself (`super::apply_in_child`). The crate's
//! `RulesetCreated::restrict_self` consumes the ruleset (a drop in a vfork-like child
//! would write the parent's memory and close its fd) and builds its error and status
//! values on the way; the raw call on a prepared fd does neither.

#![allow(
    unsafe_code,
    reason = "asking the kernel its Landlock ABI: a raw system call"
)]

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

/// The ABI mur asks for, fixed (the crate's advice: never built from the running
/// kernel): 6 is the first with scopes. Every part is a hard requirement.
pub const ABI_WANTED: ABI = ABI::V6;

/// What the ruleset grants. Paths must exist (the caller checked).
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Read and execute.
    pub read: Vec<PathBuf>,
    /// Read, execute, write, create, remove.
    pub write: Vec<PathBuf>,
    /// TCP ports the tree may connect to (any address: Landlock matches ports only).
    pub connect: Vec<u16>,
}

/// Builds the ruleset and returns its fd (close-on-exec).
pub fn ruleset(rules: &Rules) -> Result<OwnedFd, String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot build the Landlock ruleset: {e}");
    let all = AccessFs::from_all(ABI_WANTED);
    let read = AccessFs::from_read(ABI_WANTED);
    let mut created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| fail(&e))?
        .handle_access(AccessNet::from_all(ABI_WANTED))
        .map_err(|e| fail(&e))?
        .scope(Scope::from_all(ABI_WANTED))
        .map_err(|e| fail(&e))?
        .create()
        .map_err(|e| fail(&e))?;
    for (paths, access) in [(&rules.read, read), (&rules.write, all)] {
        for path in paths {
            let fd =
                PathFd::new(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            // A file takes only the file rights of the set (directories' rights would
            // be refused by the kernel).
            let access = if path.is_dir() {
                access
            } else {
                access & AccessFs::from_file(ABI_WANTED)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| format!("cannot grant {}: {e}", path.display()))?;
        }
    }
    for port in &rules.connect {
        created = created
            .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
            .map_err(|e| fail(&e))?;
    }
    Option::<OwnedFd>::from(created).ok_or_else(|| fail(&"the kernel gave no ruleset"))
}

/// The running kernel's Landlock ABI (0: none, or disabled at boot).
pub fn kernel_abi() -> i32 {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION takes no attribute and returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if v < 0 { 0 } else { v as i32 }
}
