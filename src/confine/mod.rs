//! Confinement of the native processes a capsule starts (docs/confinement.md).
//!
//! A [`Plan`] is made in the parent from the manifest's capabilities and the session's
//! folders; [`Plan::prepare`] turns it into a [`Prepared`]: a filled Landlock ruleset
//! fd and a compiled seccomp filter. The spawner's child side, between clone and
//! execve, calls [`apply_in_child`], which makes three raw system calls on that data
//! and nothing else: no allocation, no lock, async-signal-safe, so it is sound in a
//! vfork-like child that shares the parent's memory.
//!
//! The network tier ([`net::Tier`]): connections leave only through the egress proxy
//! ([`proxy`]), which mur runs outside the sandbox. Tier `netns`: the tree runs in a
//! network namespace of its own with only loopback, where the proxy accepts on a
//! listener the child made there. Both tiers: Landlock lets the tree connect to the
//! proxy's port only, and seccomp refuses every socket Landlock cannot see.

pub mod files;
pub mod net;
pub mod proxy;
pub mod seccomp;
pub mod start;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use nix::errno::Errno;

/// Read-only system paths a program needs to run: binaries, libraries, the loader's
/// cache, name-service and TLS configuration, devices every program opens. Not all of
/// `/etc` (a root harness could read `/etc/shadow`), not `/home`, `/root`, `/tmp`.
pub const SYSTEM_READ: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/nix/store",
    "/etc/alternatives",
    "/etc/ca-certificates",
    "/etc/ssl",
    "/etc/pki",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/terminfo",
    "/proc",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
    "/dev/full",
];

/// Devices every program may write.
pub const SYSTEM_WRITE: &[&str] = &["/dev/null", "/dev/tty"];

/// What a plan is made from.
#[derive(Debug, Clone)]
pub struct Inputs<'a> {
    /// The work folder: read-write.
    pub workdir: &'a Path,
    /// The session's records home/ and tmp/: read-write.
    pub session_dirs: Vec<&'a Path>,
    /// The capsule's own files (its installed folder) and the harness program: read-only.
    pub capsule_read: Vec<&'a Path>,
    /// `capabilities.files` as the manifest wrote it.
    pub files: &'a crate::manifest::Files,
    /// The user's home, for `~/…` grants.
    pub user_home: &'a Path,
    /// mur's own folder (`~/.murmur`): no grant may hold it or lie in it.
    pub murmur_home: &'a Path,
    /// `capabilities.network.allow`, already narrowed for this artifact.
    pub network: Vec<String>,
}

/// What a capsule's native tree may do, decided in the parent.
#[derive(Debug, Clone)]
pub struct Plan {
    pub rules: files::Rules,
    /// The hosts the proxy lets the tree reach.
    pub network: Vec<String>,
}

impl Plan {
    /// The plan for `inputs`. Refuses a grant that does not exist, and one that would
    /// expose mur's own folder (running records, tokens, other sessions' records):
    /// Landlock grants whole trees and cannot carve a hole out of one.
    pub fn new(inputs: &Inputs<'_>) -> Result<Plan, String> {
        let murmur = real(inputs.murmur_home);
        let exposes = |p: &Path| murmur.starts_with(p) || p.starts_with(&murmur);
        let mut rules = files::Rules::default();
        let workdir = real(inputs.workdir);
        // A formation peer works in its own `~/.murmur/formations/<frm_id>/<member>/`,
        // which holds nothing of mur's but its own files.
        let peer_folder = workdir.starts_with(murmur.join("formations"))
            && workdir.components().count() > murmur.components().count() + 2;
        if exposes(&workdir) && !peer_folder {
            return Err(format!(
                "the work folder {} holds or lies in mur's folder {}",
                workdir.display(),
                murmur.display()
            ));
        }
        rules.write.push(workdir.clone());
        for d in &inputs.session_dirs {
            rules.write.push(real(d));
        }
        for d in &inputs.capsule_read {
            let p = real(d);
            if p.starts_with(&murmur) || !exposes(&p) {
                rules.read.push(p);
            } else {
                return Err(format!("{} holds mur's folder", p.display()));
            }
        }
        for (list, into) in [
            (&inputs.files.read, &mut rules.read),
            (&inputs.files.write, &mut rules.write),
        ] {
            for written in list {
                let p = if written == "~" {
                    inputs.user_home.to_path_buf()
                } else if let Some(rest) = written.strip_prefix("~/") {
                    inputs.user_home.join(rest)
                } else {
                    workdir.join(written)
                };
                let p = std::fs::canonicalize(&p).map_err(|e| {
                    format!(
                        "capabilities.files grant `{written}` ({}): {e}",
                        p.display()
                    )
                })?;
                if exposes(&p) && !(peer_folder && p.starts_with(&workdir)) {
                    return Err(format!(
                        "capabilities.files grant `{written}` ({}) would expose mur's folder {}",
                        p.display(),
                        murmur.display()
                    ));
                }
                into.push(p);
            }
        }
        for (list, into) in [
            (SYSTEM_READ, &mut rules.read),
            (SYSTEM_WRITE, &mut rules.write),
        ] {
            into.extend(list.iter().map(PathBuf::from).filter(|p| p.exists()));
        }
        Ok(Plan {
            rules,
            network: inputs.network.clone(),
        })
    }

    /// The kernel objects the child applies. `proxy_port`: the one TCP port the tree
    /// may connect to.
    pub fn prepare(&self, proxy_port: u16) -> Result<Prepared, String> {
        let mut rules = self.rules.clone();
        rules.connect = vec![proxy_port];
        let filter = seccomp::filter()?;
        if filter.len() > u16::MAX as usize {
            return Err("seccomp filter too long".into());
        }
        Ok(Prepared {
            ruleset: files::ruleset(&rules)?,
            filter,
            tier: net::Tier::Landlock,
            netns: None,
        })
    }

    /// The kernel objects the child applies, in `tier`, for `proxy`: in tier `netns`
    /// each confined child enters a network namespace of its own and hands `proxy` a
    /// listener on its `127.0.0.1:<proxy port>` ([`proxy::Proxy::inlet`]); in tier
    /// `landlock`, as [`Plan::prepare`]. The proxy variables are `proxy.env()` in both.
    pub fn prepare_for(&self, proxy: &proxy::Proxy, tier: net::Tier) -> Result<Prepared, String> {
        let port = proxy.addr().port();
        let mut prepared = self.prepare(port)?;
        if tier == net::Tier::Netns {
            let inlet = proxy
                .inlet()
                .map_err(|e| format!("cannot open the proxy's inlet: {e}"))?;
            prepared.tier = tier;
            prepared.netns = Some(net::NetSetup::new(port, Some(inlet)));
        }
        Ok(prepared)
    }
}

fn real(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// What the child applies: owned by the parent, read (never changed) by the child.
#[derive(Debug)]
pub struct Prepared {
    ruleset: OwnedFd,
    filter: Vec<seccomp::Insn>,
    tier: net::Tier,
    /// Tier `netns`: what the child needs to enter its namespace.
    netns: Option<net::NetSetup>,
}

impl Prepared {
    /// The network tier the child gets.
    pub fn tier(&self) -> net::Tier {
        self.tier
    }
}

/// A session's confinement, made once and shared by its harness and every shell
/// command: the prepared kernel objects and the egress proxy they let the tree reach.
/// The proxy runs as long as a clone of this lives (the session's).
#[derive(Clone)]
pub struct Confined {
    prepared: Arc<Prepared>,
    proxy: Arc<proxy::Proxy>,
}

impl Confined {
    /// Starts the proxy for `plan.network` (decisions to `sink`) and prepares the
    /// ruleset, filter and, in tier `netns`, the namespace step for it
    /// ([`Plan::prepare_for`]). On a tokio runtime.
    pub async fn start(
        plan: &Plan,
        sink: proxy::Sink,
        tier: net::Tier,
    ) -> Result<Confined, String> {
        let proxy = proxy::Proxy::start(plan.network.clone(), sink)
            .await
            .map_err(|e| format!("cannot start the egress proxy on 127.0.0.1: {e}"))?;
        let prepared = plan.prepare_for(&proxy, tier)?;
        Ok(Confined {
            prepared: Arc::new(prepared),
            proxy: Arc::new(proxy),
        })
    }

    /// What the spawner applies in the child.
    pub fn prepared(&self) -> Arc<Prepared> {
        self.prepared.clone()
    }

    /// The proxy's URL, the value of the proxy variables.
    pub fn proxy_url(&self) -> String {
        self.proxy.url()
    }

    /// The proxy's port: the one TCP port the tree may connect to.
    pub fn proxy_port(&self) -> u16 {
        self.proxy.addr().port()
    }
}

impl std::fmt::Debug for Confined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confined")
            .field("proxy", &self.proxy.url())
            .finish_non_exhaustive()
    }
}

/// The same session's confinement.
impl PartialEq for Confined {
    fn eq(&self, other: &Confined) -> bool {
        Arc::ptr_eq(&self.prepared, &other.prepared)
    }
}

impl Eq for Confined {}

/// Confines the calling process, and all it starts, for good. For the child side of a
/// spawn: only raw system calls on `p`'s prepared data, no allocation, no lock.
///
/// Order: in tier `netns` the namespace step first ([`net::enter`]: it writes
/// `/proc/self/uid_map`, makes a UDP socket and binds, which Landlock and seccomp would
/// refuse), then no_new_privs (Landlock and seccomp need it unprivileged, and it stops
/// a setuid binary from shedding them), then Landlock, then seccomp.
#[allow(
    unsafe_code,
    reason = "the child step: raw prctl, landlock_restrict_self and seccomp calls on prepared data"
)]
pub fn apply_in_child(p: &Prepared) -> Result<(), Errno> {
    // SAFETY: each call takes plain integers or a pointer to memory `p` owns, alive for
    // the call; none touches the allocator.
    unsafe {
        if let Some(setup) = &p.netns {
            net::enter(setup)?;
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(Errno::last());
        }
        if libc::syscall(
            libc::SYS_landlock_restrict_self,
            p.ruleset.as_raw_fd(),
            0u32,
        ) != 0
        {
            return Err(Errno::last());
        }
        let prog = libc::sock_fprog {
            len: p.filter.len() as u16,
            filter: p.filter.as_ptr() as *mut libc::sock_filter,
        };
        if libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &prog as *const libc::sock_fprog,
        ) != 0
        {
            return Err(Errno::last());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
