//! What this kernel can enforce, and which network tier a native tree gets.
//!
//! Tier `netns` (where unprivileged user and network namespaces work): the child, before
//! Landlock and seccomp, enters a user and network namespace of its own ([`enter`]):
//! its uid and gid map to themselves (files keep their owner), only `lo` is up, and it
//! makes a listening socket on `127.0.0.1:<proxy port>` there and sends it, with a
//! pidfd of itself, to the egress proxy over a socketpair ([`Inlet`]). A socket keeps
//! the namespace it was made in, so the proxy accepts inside the tree's namespace and
//! dials out from mur's: a client that ignores the proxy variables has no route.
//!
//! Tier `landlock` (elsewhere): Landlock lets the tree connect to the proxy's port only
//! (any address: Landlock matches ports, not addresses). Both tiers keep Landlock and
//! the seccomp socket filter.

#![allow(
    unsafe_code,
    reason = "the namespace step of a spawn's child side and its probe: raw system calls"
)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

use super::Errno;
use super::files;

/// The network tier a native tree runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// A network namespace of its own with only loopback; the proxy accepts inside it.
    Netns,
    /// Landlock TCP connect to the proxy's port + seccomp socket filter.
    Landlock,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Netns => "netns",
            Tier::Landlock => "landlock",
        }
    }

    /// What the tier cannot stop on the network, for `mur doctor` and the start line.
    pub fn gap(self) -> &'static str {
        match self {
            Tier::Netns => {
                "nothing direct: the tree's namespace has only loopback, and the proxy is its one way out (TLS contents stay unseen)"
            }
            Tier::Landlock => {
                "a TCP connect to any address on the proxy's port (Landlock matches ports, not addresses); TLS contents"
            }
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
    /// Whether tier `netns` works here: Err says why not (the step and its errno, or
    /// the test setting that turned it off).
    pub netns: Result<(), String>,
}

impl Kernel {
    pub fn probe() -> Kernel {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let netns = match crate::testing::confine_tier() {
            Some("landlock") => Err(format!(
                "turned off by the test setting {}=landlock",
                crate::env::MUR_TEST_CONFINE_TIER
            )),
            _ => netns_works(),
        };
        Kernel {
            release,
            landlock_abi: crate::testing::landlock_abi().unwrap_or_else(files::kernel_abi),
            netns,
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

    /// The tier a native tree gets on this kernel, when it can be confined at all:
    /// `netns` where the namespaces work, `landlock` otherwise.
    pub fn tier(&self) -> Option<Tier> {
        self.missing().is_none().then_some(match self.netns {
            Ok(()) => Tier::Netns,
            Err(_) => Tier::Landlock,
        })
    }
}

/// What the child needs to enter its namespace, made in the parent.
#[derive(Debug)]
pub struct NetSetup {
    /// `"<uid> <uid> 1\n"` and the same for the gid: the ids map to themselves.
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// The port the listener takes on the namespace's 127.0.0.1 (the proxy's).
    port: u16,
    /// The socketpair end the listener is sent on (close-on-exec); None in the probe.
    inlet: Option<OwnedFd>,
}

impl NetSetup {
    pub(super) fn new(port: u16, inlet: Option<OwnedFd>) -> NetSetup {
        let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
        NetSetup {
            uid_map: format!("{0} {0} 1\n", uid.as_raw()).into_bytes(),
            gid_map: format!("{0} {0} 1\n", gid.as_raw()).into_bytes(),
            port,
            inlet,
        }
    }
}

/// A system call's return as a step: below zero fails with its errno.
fn ok(ret: libc::c_long) -> Result<libc::c_long, Errno> {
    if ret < 0 { Err(Errno::last()) } else { Ok(ret) }
}

/// Writes `data` to the `/proc/self` file `path` (raw calls).
///
/// # Safety
/// In a child between clone and exec, or any single-threaded process.
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> Result<(), Errno> {
    // SAFETY: open, write and close take a literal path and memory the caller owns.
    unsafe {
        let fd = ok(libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC).into())? as RawFd;
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let e = Errno::last();
        libc::close(fd);
        if n != data.len() as isize {
            return Err(if n < 0 { e } else { Errno::EIO });
        }
    }
    Ok(())
}

/// The child's namespace step: a user and network namespace of its own, `lo` up, the
/// proxy's listener made there and sent to mur. Raw system calls on `s` and locals
/// only: no allocation, async-signal-safe, sound in a vfork-like child. Before
/// Landlock (it writes `/proc/self/*_map` and binds) and seccomp (it makes a UDP
/// socket for the interface ioctl).
///
/// # Safety
/// Only in a child between clone and exec (or a throwaway child), single-threaded.
pub(super) unsafe fn enter(s: &NetSetup) -> Result<(), Errno> {
    // SAFETY: each call takes integers, literals, locals or memory `s` owns.
    unsafe {
        ok(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET).into())?;
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &s.uid_map)?;
        write_file(c"/proc/self/gid_map", &s.gid_map)?;

        let udp = ok(libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0).into())?
            as RawFd;
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let flags = (|| {
            ok(libc::ioctl(udp, libc::SIOCGIFFLAGS as libc::Ioctl, &mut req).into())?;
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            ok(libc::ioctl(udp, libc::SIOCSIFFLAGS as libc::Ioctl, &req).into())
        })();
        libc::close(udp);
        flags?;

        let listener =
            ok(libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0).into())?
                as RawFd;
        let sent = (|| {
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_port = s.port.to_be();
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            ok(libc::bind(
                listener,
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
            .into())?;
            ok(libc::listen(listener, 128).into())?;
            let Some(inlet) = &s.inlet else {
                return Ok(());
            };
            let pidfd = ok(libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0))? as RawFd;
            let r = send_fds(inlet.as_raw_fd(), [listener, pidfd]);
            libc::close(pidfd);
            r
        })();
        libc::close(listener);
        sent
    }
}

/// Sends `fds` in one message with one byte (SCM_RIGHTS), never SIGPIPE.
///
/// # Safety
/// Raw calls on locals; as [`enter`].
unsafe fn send_fds(sock: RawFd, fds: [RawFd; 2]) -> Result<(), Errno> {
    // Room for one cmsghdr with two ints, aligned as a cmsghdr.
    let mut space = [0u64; 4];
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: the message points at locals alive for the call; the CMSG_* helpers are
    // pointer arithmetic within `space`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of_val(&fds) as u32) as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(&fds) as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast::<RawFd>(), 2);
        ok(libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) as libc::c_long)?;
    }
    Ok(())
}

/// Receives one `(listener, pidfd)` message from the proxy's end of the socketpair,
/// without blocking: None when none is waiting (or the message carried no pair).
pub(crate) fn recv_listener(sock: RawFd) -> std::io::Result<Option<(OwnedFd, OwnedFd)>> {
    let mut space = [0u64; 4];
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: recvmsg into locals; each descriptor the kernel installs is owned once.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&space) as _;
        let n = libc::recvmsg(sock, &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let mut got: Vec<OwnedFd> = Vec::new();
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(c).cast::<RawFd>();
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    got.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        let mut it = got.into_iter();
        Ok(match (it.next(), it.next()) {
            (Some(l), Some(p)) => Some((l, p)),
            _ => None,
        })
    }
}

/// A close-on-exec Unix seqpacket socketpair (blocking): the proxy's inlet.
pub(crate) fn socketpair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as RawFd; 2];
    // SAFETY: socketpair writes two new descriptors into `fds`, owned once each below.
    unsafe {
        if libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// Whether a throwaway child can enter a namespace as a confined child would
/// (cached: once per process). Err names the step's errno.
fn netns_works() -> Result<(), String> {
    static WORKS: OnceLock<Result<(), String>> = OnceLock::new();
    WORKS.get_or_init(try_netns).clone()
}

/// Runs [`enter`] (port 0, nothing sent) in a fork-like child that never runs a
/// program, and reports its errno. Not through the spawner: that module depends on
/// this one, and this child execs nothing.
fn try_netns() -> Result<(), String> {
    let setup = NetSetup::new(0, None);
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| format!("cannot make a pipe: {e}"))?;
    // SAFETY: the child makes raw system calls on `setup` (made before) and exits.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid == 0 {
        // SAFETY: in the child of a fork-like clone, single-threaded.
        unsafe {
            let code = match enter(&setup) {
                Ok(()) => 0i32,
                Err(e) => e as i32,
            };
            libc::write(w.as_raw_fd(), (&code as *const i32).cast(), 4);
            libc::_exit(0)
        }
    }
    if pid < 0 {
        return Err(format!("cannot start a child: {}", Errno::last()));
    }
    drop(w);
    let mut buf = [0u8; 4];
    let got = rustix::io::read(&r, &mut buf).unwrap_or(0);
    let mut status = 0;
    // SAFETY: reaping the child made above.
    unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
    match (got, i32::from_ne_bytes(buf)) {
        (4, 0) => Ok(()),
        (4, e) => Err(format!(
            "a user and network namespace cannot be made here: {}",
            Errno::from_raw(e)
        )),
        _ => Err("the namespace probe's child died".into()),
    }
}
