//! What this kernel can enforce, and which network tier a native tree gets.
//!
//! Tier `landlock` is the one built: Landlock lets the tree connect to the egress
//! proxy's port only (any address: Landlock matches ports, not addresses), and seccomp
//! refuses UDP, raw, packet and Multipath TCP sockets. Tier `netns` (the tree in a
//! network namespace of its own with only loopback) is not built yet; where user and
//! network namespaces work, `mur doctor` says so (docs/confinement.md).

use super::files;

/// The network tier a native tree runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Landlock TCP connect to the proxy's port + seccomp socket filter.
    Landlock,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Landlock => "landlock",
        }
    }
}

/// What the running kernel offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// `uname -r`.
    pub release: String,
    /// 0 when Landlock is absent or disabled.
    pub landlock_abi: i32,
}

impl Kernel {
    pub fn probe() -> Kernel {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        Kernel {
            release,
            landlock_abi: crate::testing::landlock_abi().unwrap_or_else(files::kernel_abi),
        }
    }

    /// What confinement needs and this kernel lacks, or None when it has all of it.
    pub fn missing(&self) -> Option<String> {
        let wanted = files::ABI_WANTED as i32;
        match self.landlock_abi {
            0 => Some(format!(
                "Landlock (kernel {} has it disabled or predates 5.13; mur needs ABI {wanted}, Linux 6.12 or later, with `landlock` in the boot's lsm= list)",
                self.release
            )),
            abi if abi < wanted => Some(format!(
                "Landlock ABI {wanted} (kernel {} has ABI {abi}: {})",
                self.release,
                if abi < 4 {
                    "no TCP rules and no scopes"
                } else {
                    "no signal or abstract-socket scopes"
                }
            )),
            _ => None,
        }
    }

    /// The tier a native tree gets on this kernel, when it can be confined at all.
    pub fn tier(&self) -> Option<Tier> {
        self.missing().is_none().then_some(Tier::Landlock)
    }
}
