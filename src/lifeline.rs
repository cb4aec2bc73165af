//! Lifelines: the read end of a pipe whose only write end the launcher holds.
//!
//! Nothing is ever written to a lifeline. A member reads end of file on it in exactly
//! one case: the formation has ended, because the launcher closed its end or because
//! the launcher's process died by any means (the kernel closes its descriptors on
//! SIGKILL and on the OOM killer alike).
//!
//! Both ends are created close-on-exec (`std::io::pipe`), so a process the launcher
//! spawns concurrently never inherits a write end; only the member it is meant for
//! gets its read end, moved to a fixed descriptor number after fork.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use nix::sys::stat::{SFlag, fstat};

/// `MURMUR_FORMATION_LIFELINE`: the descriptor of a member's own lifeline.
pub const ENV: &str = crate::env::MURMUR_FORMATION_LIFELINE;

/// The launcher's write end of one member's lifeline. Dropping it closes it.
#[derive(Debug)]
pub struct Lifeline(Option<OwnedFd>);

impl Lifeline {
    /// A new lifeline: the launcher keeps the returned `Lifeline`, the member
    /// inherits the `OwnedFd` (the read end).
    pub fn new() -> io::Result<(Lifeline, OwnedFd)> {
        let (reader, writer) = io::pipe()?;
        Ok((Lifeline(Some(writer.into())), reader.into()))
    }

    /// Closes the launcher's end; the member reads end of file.
    pub fn close(&mut self) {
        self.0 = None;
    }

    pub fn is_closed(&self) -> bool {
        self.0.is_none()
    }
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
    // SAFETY: fcntl(F_GETFD) on an arbitrary number only queries; it fails with EBADF
    // when nothing is open there.
    let flags = fcntl(
        unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
        FcntlArg::F_GETFD,
    )
    .map_err(|_| InheritError::NotOpen { var, fd })?;
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

/// Resolves when the lifeline reads end of file. Bytes written to it (nothing should
/// be) are read and ignored.
pub async fn closed(fd: OwnedFd) -> io::Result<()> {
    use tokio::io::AsyncReadExt;
    let mut receiver = tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?;
    let mut buf = [0u8; 64];
    loop {
        if receiver.read(&mut buf).await? == 0 {
            return Ok(());
        }
    }
}

/// The raw number of a descriptor, for the child's environment.
pub fn number(fd: &OwnedFd) -> RawFd {
    fd.as_raw_fd()
}

#[cfg(test)]
mod tests {
    use super::*;
    use command_fds::{CommandFdExt, FdMapping};
    use std::os::fd::IntoRawFd;
    use std::time::Duration;

    fn shell_reading(fd: OwnedFd) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", "cat <&7 >/dev/null; echo eof"])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        cmd.fd_mappings(vec![FdMapping {
            parent_fd: fd,
            child_fd: 7,
        }])
        .unwrap();
        cmd
    }

    #[tokio::test]
    async fn child_reads_eof_exactly_when_the_launcher_closes() {
        let (mut lifeline, read_end) = Lifeline::new().unwrap();
        let mut cmd = shell_reading(read_end);
        let child = cmd.spawn().unwrap();
        drop(cmd); // the launcher keeps no copy of the read end
        // A second, concurrently spawned process must not keep the write end open.
        let bystander = tokio::process::Command::new("sleep")
            .arg("30")
            .kill_on_drop(true)
            .spawn();
        let wait = tokio::spawn(child.wait_with_output());
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !wait.is_finished(),
            "the member saw EOF before the lifeline closed"
        );
        lifeline.close();
        let out = tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "eof");
        drop(bystander);
    }

    #[test]
    fn take_fd_checks_number_openness_and_kind() {
        let (_keep, read_end) = Lifeline::new().unwrap();
        let n = read_end.into_raw_fd();
        let (owned, kind) = take_fd(ENV, &n.to_string()).unwrap();
        assert_eq!(kind, FdKind::Pipe);
        let flags = fcntl(&owned, FcntlArg::F_GETFD).unwrap();
        assert!(FdFlag::from_bits_truncate(flags).contains(FdFlag::FD_CLOEXEC));

        let file = tempfile::tempfile().unwrap();
        let n = file.into_raw_fd();
        assert_eq!(take_fd(ENV, &n.to_string()).unwrap().1, FdKind::File);

        assert!(matches!(
            take_fd(ENV, "x"),
            Err(InheritError::NotANumber { .. })
        ));
        assert!(matches!(
            take_fd(ENV, "-3"),
            Err(InheritError::NotANumber { .. })
        ));
        assert!(matches!(
            take_fd(ENV, "987654"),
            Err(InheritError::NotOpen { .. })
        ));
        let sock = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let n = sock.as_raw_fd();
        assert!(matches!(
            take_fd(ENV, &n.to_string()),
            Err(InheritError::WrongKind { .. })
        ));
        drop(sock); // still owned by the listener: take_fd left it alone
    }

    #[tokio::test]
    async fn closed_resolves_on_eof_when_the_writer_dies() {
        let (lifeline, read_end) = Lifeline::new().unwrap();
        let waiter = tokio::spawn(closed(read_end));
        drop(lifeline);
        tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}
