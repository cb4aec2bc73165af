//! Lifelines: the read end of a pipe whose only write end the launcher holds.
//!
//! Nothing is written to a member's lifeline (a spawner lifeline carries one line
//! first: docs/delegation.md). A member reads end of file on it in exactly
//! one case: the formation has ended, because the launcher closed its end or because
//! the launcher's process died by any means (the kernel closes its descriptors on
//! SIGKILL and on the OOM killer alike).
//!
//! Both ends are created close-on-exec (`std::io::pipe`), so a process the launcher
//! spawns concurrently never inherits a write end; only the member it is meant for
//! gets its read end, moved to a fixed descriptor number after fork.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

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

    /// Writes `bytes` to the pipe: only a spawner lifeline's first line
    /// (docs/delegation.md), before the child starts, so a pipe's buffer holds it.
    pub fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        let Some(fd) = &self.0 else {
            return Err(io::Error::from(io::ErrorKind::BrokenPipe));
        };
        while !bytes.is_empty() {
            let n = rustix::io::write(fd, bytes)?;
            bytes = &bytes[n..];
        }
        Ok(())
    }

    pub fn is_closed(&self) -> bool {
        self.0.is_none()
    }
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
    use crate::spawn::Spawn;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    fn shell_reading(fd: OwnedFd) -> Spawn {
        let mut cmd = Spawn::new("/bin/sh");
        cmd.args(["-c", "cat <&7 >/dev/null; echo eof"])
            .kill_on_drop()
            .fd(fd, 7);
        cmd
    }

    #[tokio::test]
    async fn child_reads_eof_exactly_when_the_launcher_closes() {
        let (mut lifeline, read_end) = Lifeline::new().unwrap();
        let cmd = shell_reading(read_end);
        let mut child = cmd.spawn(None).unwrap();
        drop(cmd); // the launcher keeps no copy of the read end
        // A second, concurrently spawned process must not keep the write end open.
        let bystander = Spawn::new("/bin/sleep")
            .arg("30")
            .kill_on_drop()
            .spawn(None);
        let wait = tokio::spawn(async move {
            let mut out = String::new();
            let mut stdout = child.stdout.take().unwrap();
            stdout.read_to_string(&mut out).await.unwrap();
            child.wait().await.unwrap();
            out
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !wait.is_finished(),
            "the member saw EOF before the lifeline closed"
        );
        lifeline.close();
        let out = tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(out.trim(), "eof");
        drop(bystander);
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
