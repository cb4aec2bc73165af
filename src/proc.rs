//! Facts about processes that mur reads from the kernel: when a process started (to
//! tell a live pid from a reused one), and the descriptors this process inherited
//! from its launcher (a member's lifeline and channel).

#![allow(
    unsafe_code,
    reason = "taking ownership of a descriptor inherited by number"
)]

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use nix::sys::stat::{SFlag, fstat};

/// When process `pid` started (field 22 of /proc/<pid>/stat, clock ticks after
/// boot); `None` when there is no such process or it is a zombie. A running record
/// and the launcher's ownership marker both keep it.
pub fn start_time(pid: u32) -> Option<u64> {
    crate::descendants::stat(pid)
        .filter(|p| !p.is_zombie())
        .map(|p| p.start)
}

/// What an inherited descriptor turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdKind {
    Pipe,
    File,
}

/// Why an inherited descriptor cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InheritError {
    #[error("{var} is `{value}`, not a descriptor number")]
    NotANumber { var: &'static str, value: String },
    #[error("descriptor {fd} named by {var} is not open")]
    NotOpen { var: &'static str, fd: RawFd },
    #[error("descriptor {fd} named by {var} is neither a pipe nor a file")]
    WrongKind { var: &'static str, fd: RawFd },
}

/// Takes ownership of the descriptor the environment variable `var` names, checks it
/// is an open pipe or file, and marks it close-on-exec so the member's own children
/// never inherit it. `Ok(None)` when the variable is unset.
pub fn take_inherited(var: &'static str) -> Result<Option<(OwnedFd, FdKind)>, InheritError> {
    match std::env::var_os(var) {
        None => Ok(None),
        Some(value) => take_fd(var, &value.to_string_lossy()).map(Some),
    }
}

/// `take_inherited` for a value already read from the environment.
pub fn take_fd(var: &'static str, value: &str) -> Result<(OwnedFd, FdKind), InheritError> {
    let fd: RawFd = value
        .trim()
        .parse()
        .ok()
        .filter(|fd| *fd >= 0)
        .ok_or_else(|| InheritError::NotANumber {
            var,
            value: value.to_string(),
        })?;
    // SAFETY: borrowed only for fcntl(F_GETFD), which on an arbitrary number only
    // queries; it fails with EBADF when nothing is open there.
    let probe = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let flags = fcntl(probe, FcntlArg::F_GETFD).map_err(|_| InheritError::NotOpen { var, fd })?;
    // SAFETY: the descriptor is open and was handed to this process to own; nothing
    // else in mur refers to it by number.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let stat = fstat(&owned).map_err(|_| InheritError::NotOpen { var, fd })?;
    let kind = match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
        SFlag::S_IFIFO => FdKind::Pipe,
        SFlag::S_IFREG => FdKind::File,
        _ => {
            // Not ours to close: leave it as it was.
            std::mem::forget(owned);
            return Err(InheritError::WrongKind { var, fd });
        }
    };
    let mut flags = FdFlag::from_bits_truncate(flags);
    flags.insert(FdFlag::FD_CLOEXEC);
    let _ = fcntl(&owned, FcntlArg::F_SETFD(flags));
    Ok((owned, kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, IntoRawFd};

    const VAR: &str = "MURMUR_TEST_FD";

    #[test]
    fn start_time_of_this_process_reads_and_is_stable() {
        let me = std::process::id();
        let a = start_time(me).expect("this process has a start time");
        assert_eq!(start_time(me), Some(a));
        assert_eq!(start_time(u32::MAX), None);
    }

    #[test]
    fn take_fd_checks_number_openness_and_kind() {
        let (read_end, _keep) = std::io::pipe().unwrap();
        let n = read_end.into_raw_fd();
        let (owned, kind) = take_fd(VAR, &n.to_string()).unwrap();
        assert_eq!(kind, FdKind::Pipe);
        let flags = fcntl(&owned, FcntlArg::F_GETFD).unwrap();
        assert!(FdFlag::from_bits_truncate(flags).contains(FdFlag::FD_CLOEXEC));

        let file = tempfile::tempfile().unwrap();
        let n = file.into_raw_fd();
        assert_eq!(take_fd(VAR, &n.to_string()).unwrap().1, FdKind::File);

        assert!(matches!(
            take_fd(VAR, "x"),
            Err(InheritError::NotANumber { .. })
        ));
        assert!(matches!(
            take_fd(VAR, "-3"),
            Err(InheritError::NotANumber { .. })
        ));
        assert!(matches!(
            take_fd(VAR, "987654"),
            Err(InheritError::NotOpen { .. })
        ));
        let sock = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let n = sock.as_raw_fd();
        assert!(matches!(
            take_fd(VAR, &n.to_string()),
            Err(InheritError::WrongKind { .. })
        ));
        drop(sock); // still owned by the listener: take_fd left it alone
    }
}
