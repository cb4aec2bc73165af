//! Starting a member: one `clone3` that makes the process straight inside the
//! formation's cgroup (`CLONE_INTO_CGROUP`) with a pidfd of it (`CLONE_PIDFD`), then the
//! member's descriptors and its `execve`. The formation's watcher starts the same way,
//! outside the cgroup.
//!
//! Why not the standard library's `Command`: it can only fork in the launcher's own
//! cgroup, so the launcher had to move itself into the formation's first, and the
//! first move of a process takes the cgroup threadgroup lock's writer side, which waits
//! out an RCU grace period: 8–15 ms of an 8-member launch's 34–38 ms on this project's
//! machines (docs/benchmarks.md). A clone into a cgroup takes only the reader side.
//!
//! On x86_64 the `clone3` is vfork-like (`CLONE_VM | CLONE_VFORK`, [`vfork`]): the
//! child shares the launcher's memory on a stack of its own until its `execve`, so the
//! launcher's page tables are not copied for every member. Elsewhere, and on the
//! fallback below, the child is a copy, as after `fork`, of a multi-threaded process
//! in which only this thread runs. Either way, between the clone and `execve` it calls
//! only async-signal-safe system calls on data the parent prepared, and allocates
//! nothing. An `execve` that fails reports its `errno` on a close-on-exec pipe, as the
//! standard library does.
//!
//! Where `clone3` is refused (Docker's default seccomp profile answers it with ENOSYS),
//! the child is made by `clone` with `CLONE_PIDFD` and moves itself into the cgroup
//! before its `execve`: the slow move, but still before the member runs. [`Via`] names
//! the three paths; the test setting `MUR_TEST_SPAWN_VIA` makes x86_64 take the other
//! two, so the tests run the path aarch64 and Docker take.
//!
//! Every child mur starts comes through here: members, the watcher, delegated
//! children, the process harness and shell commands. What a child gets (process
//! group, parent-death signal, subreaper, descriptors, environment) is decided by its
//! [`Spawn`] in the parent, and the child side (`child::steps`) is one list of
//! async-signal-safe calls on that prepared data.

#![allow(
    unsafe_code,
    reason = "clone3, clone and the child side between clone and execve: no safe wrapper clones into a cgroup with a pidfd"
)]

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::process::WaitOptions;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use child::{ChildPlan, ORPHANED, Prepared, child};

/// `CLONE_INTO_CGROUP` (linux/sched.h; Linux 5.7).
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// Whether `clone3` may be tried: false once it answered ENOSYS (a seccomp filter).
static CLONE3: AtomicBool = AtomicBool::new(true);

/// The read end of a child's stdout or stderr.
pub type Pipe = tokio::net::unix::pipe::Receiver;
/// The write end of a child's stdin.
pub type Sender = tokio::net::unix::pipe::Sender;

/// What becomes of the child's stderr.
#[derive(Debug)]
pub enum Stderr {
    Inherit,
    Piped,
    /// Written to this file.
    To(OwnedFd),
}

/// The process group a child runs in.
#[derive(Debug, Clone, Copy)]
enum Group {
    /// The launcher's.
    Launchers,
    /// One of its own, which it leads.
    Own,
    /// A session of its own, which it leads.
    Session,
}

/// A process to start: its program (a path), arguments, environment changes, folder,
/// process group, stdout, stderr and inherited descriptors. Its stdin is `/dev/null`
/// and its stdout a pipe unless [`Spawn::stdout_to`] says otherwise.
#[derive(Debug)]
pub struct Spawn {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    cwd: Option<OsString>,
    group: Group,
    stdout: Option<OwnedFd>,
    stderr: Stderr,
    fds: Vec<(OwnedFd, RawFd)>,
    kill_on_drop: bool,
    env_clear: bool,
    stdin_piped: bool,
    parent_death: bool,
    subreaper: bool,
    /// Applied last before execve (docs/design/confinement.md).
    confine: Option<std::sync::Arc<crate::confine::Prepared>>,
}

/// The highest descriptor number a child may be handed a descriptor at.
const MAX_CHILD_FD: RawFd = 9;

impl Spawn {
    pub fn new(program: impl AsRef<OsStr>) -> Spawn {
        Spawn {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            group: Group::Launchers,
            stdout: None,
            stderr: Stderr::Inherit,
            fds: Vec::new(),
            kill_on_drop: false,
            env_clear: false,
            stdin_piped: false,
            parent_death: false,
            subreaper: false,
            confine: None,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Spawn {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(&mut self, args: I) -> &mut Spawn {
        for a in args {
            self.arg(a);
        }
        self
    }

    /// Sets `key` in the child's environment (the launcher's, with these changes).
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Spawn {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Sets each `(key, value)`, as [`Spawn::env`].
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Spawn
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in vars {
            self.env(k, v);
        }
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Spawn {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Starts the child's environment empty: only what [`Spawn::env`] sets reaches it.
    pub fn env_clear(&mut self) -> &mut Spawn {
        self.env_clear = true;
        self.env.clear();
        self
    }

    /// A pipe to the child's stdin ([`Child::stdin`]) instead of `/dev/null`.
    pub fn stdin_piped(&mut self) -> &mut Spawn {
        self.stdin_piped = true;
        self
    }

    /// SIGKILL to the child when the thread that started it exits (`PR_SET_PDEATHSIG`):
    /// the backstop for a mur that is SIGKILLed and cannot stop its children. A child
    /// whose parent is no longer this process once the signal is armed (mur died in
    /// between) exits before its program runs.
    pub fn parent_death_signal(&mut self) -> &mut Spawn {
        self.parent_death = true;
        self
    }

    /// Makes the child a child subreaper (`PR_SET_CHILD_SUBREAPER`, kept across
    /// `execve`): what its descendants orphan stays below it, so a sweep of it finds
    /// all of it.
    pub fn child_subreaper(&mut self) -> &mut Spawn {
        self.subreaper = true;
        self
    }

    /// Confines the child, and all it starts, by `prepared`: its last step before
    /// execve is [`crate::confine::apply_in_child`] (docs/confinement.md).
    pub fn confine(&mut self, prepared: std::sync::Arc<crate::confine::Prepared>) -> &mut Spawn {
        self.confine = Some(prepared);
        self
    }

    /// [`Spawn::confine`] with the session's confinement, when there is one (none:
    /// the user opted out, or nothing native is confined).
    pub fn confined(&mut self, confined: Option<&crate::confine::Confined>) -> &mut Spawn {
        if let Some(c) = confined {
            self.confine(c.prepared());
        }
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Spawn {
        self.cwd = Some(dir.as_ref().as_os_str().to_owned());
        self
    }

    /// A process group of its own, led by the child.
    pub fn own_group(&mut self) -> &mut Spawn {
        self.group = Group::Own;
        self
    }

    /// A session (and so a process group) of its own, led by the child: no signal
    /// sent to the launcher's group or terminal reaches it.
    pub fn own_session(&mut self) -> &mut Spawn {
        self.group = Group::Session;
        self
    }

    /// Writes the child's stdout to `file` instead of a pipe.
    pub fn stdout_to(&mut self, file: OwnedFd) -> &mut Spawn {
        self.stdout = Some(file);
        self
    }

    pub fn stderr(&mut self, stderr: Stderr) -> &mut Spawn {
        self.stderr = stderr;
        self
    }

    /// SIGKILL to the child when its [`Child`] is dropped before it was reaped.
    pub fn kill_on_drop(&mut self) -> &mut Spawn {
        self.kill_on_drop = true;
        self
    }

    /// Hands `fd` to the child as descriptor `at` (3 to 9); the parent's copy is closed
    /// when the spawn is dropped.
    pub fn fd(&mut self, fd: OwnedFd, at: RawFd) -> &mut Spawn {
        self.fds.push((fd, at));
        self
    }

    /// Starts the child, in `cgroup` (a cgroup v2 directory) when given. Returns once it
    /// has run its program, or with the error that kept it from doing so.
    pub fn spawn(&self, cgroup: Option<BorrowedFd<'_>>) -> io::Result<Child> {
        self.start(cgroup)?.started()
    }

    /// Starts the child without waiting for it to run its program: a launcher starts
    /// all its members before it waits for the first ([`Starting::started`]), so each
    /// runs up to its program while the next is cloned.
    pub fn start(&self, cgroup: Option<BorrowedFd<'_>>) -> io::Result<Starting> {
        let via = crate::testing::spawn_via().and_then(Via::parse);
        self.start_with(cgroup, via.unwrap_or(Via::NATIVE))
    }

    /// [`Self::start`], cloning `via` (by `clone` once `clone3` answered ENOSYS). The
    /// tests of each path call it; everything else starts through [`Self::start`].
    pub(crate) fn start_with(
        &self,
        cgroup: Option<BorrowedFd<'_>>,
        via: Via,
    ) -> io::Result<Starting> {
        let prepared = Prepared::new(self)?;
        let (in_write, in_read) = match self.stdin_piped {
            true => {
                let (r, w) = pipe()?;
                (Some(w), r)
            }
            false => (None, std::fs::File::open("/dev/null")?.into()),
        };
        let (out_read, out_write) = match &self.stdout {
            Some(file) => (None, file.try_clone()?),
            None => {
                let (r, w) = pipe()?;
                (Some(r), w)
            }
        };
        let (err_read, err_write) = match &self.stderr {
            Stderr::Piped => {
                let (r, w) = pipe()?;
                (Some(r), Some(w))
            }
            Stderr::To(file) => (None, Some(file.try_clone()?)),
            Stderr::Inherit => (None, None),
        };
        let (report_read, report_write) = pipe()?;
        // Every descriptor the child receives, above every number it receives one at, so
        // no `dup2` overwrites a source a later one still needs. These copies are
        // close-on-exec; the numbers `dup2` gives are not.
        let mut moves: Vec<(OwnedFd, RawFd)> =
            vec![(high(in_read.as_fd())?, 0), (high(out_write.as_fd())?, 1)];
        if let Some(w) = &err_write {
            moves.push((high(w.as_fd())?, 2));
        }
        for (fd, at) in &self.fds {
            if !(3..=MAX_CHILD_FD).contains(at) {
                return Err(io::Error::other(format!(
                    "descriptor number {at} is outside 3..={MAX_CHILD_FD}"
                )));
            }
            moves.push((high(fd.as_fd())?, *at));
        }
        let plan: Vec<(RawFd, RawFd)> = moves.iter().map(|(f, at)| (f.as_raw_fd(), *at)).collect();

        let to_do = ChildPlan {
            prepared: &prepared,
            plan: &plan,
            group: self.group,
            parent: self
                .parent_death
                .then(|| rustix::process::getpid().as_raw_nonzero().get()),
            subreaper: self.subreaper,
            confine: self.confine.as_deref(),
            move_in: None,
            report: report_write.as_raw_fd(),
        };
        // SAFETY: the child side runs only `child`, on data prepared above.
        let Cloned {
            pid,
            pidfd,
            exec_done,
        } = unsafe { clone(cgroup, via, &to_do) }?;
        drop((moves, in_read, out_write, err_write, report_write));
        // SAFETY: the Child owns the pidfd for as long as it is registered.
        let pidfd = match unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) } {
            Ok(fd) => fd,
            Err(e) => {
                let (fd, e) = e.into_parts();
                abandon(&fd, pid);
                return Err(e);
            }
        };
        let pipes = (|| {
            Ok::<_, io::Error>((
                in_write.map(Sender::from_owned_fd).transpose()?,
                out_read.map(Pipe::from_owned_fd).transpose()?,
                err_read.map(Pipe::from_owned_fd).transpose()?,
            ))
        })();
        let (stdin, stdout, stderr) = match pipes {
            Ok(pipes) => pipes,
            Err(e) => {
                abandon(pidfd.get_ref(), pid);
                return Err(e);
            }
        };
        let child = Child {
            pid: pid as u32,
            pidfd,
            status: None,
            stdin,
            stdout,
            stderr,
            kill_on_drop: self.kill_on_drop,
        };
        Ok(Starting {
            child,
            report: report_read,
            exec_done,
        })
    }
}

/// How a child is cloned. Each is a path some machine takes; a test setting
/// (`MUR_TEST_SPAWN_VIA`, docs/testing.md) makes this one take the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `clone3`, vfork-like ([`vfork`], x86_64 only): the child runs in the parent's
    /// memory on a stack of its own until its `execve`.
    VforkClone3,
    /// `clone3`, fork-like: the child is a copy. What every other architecture takes.
    ForkClone3,
    /// `clone`, fork-like, the child moving itself into the cgroup: where `clone3` is
    /// refused (Docker's default seccomp profile).
    Clone,
}

impl Via {
    /// This architecture's own way.
    const NATIVE: Via = if cfg!(target_arch = "x86_64") {
        Via::VforkClone3
    } else {
        Via::ForkClone3
    };

    /// The test setting's spelling: `vfork-clone3`, `fork-clone3` or `clone`.
    pub fn parse(text: &str) -> Option<Via> {
        match text.trim() {
            "vfork-clone3" if cfg!(target_arch = "x86_64") => Some(Via::VforkClone3),
            "fork-clone3" => Some(Via::ForkClone3),
            "clone" => Some(Via::Clone),
            _ => None,
        }
    }
}

/// A child cloned and on its way to its program.
#[derive(Debug)]
pub struct Starting {
    child: Child,
    /// Closes empty when the child's `execve` succeeds; holds its `errno` when not.
    report: OwnedFd,
    /// The child is past its `execve`, or has exited (a vfork-like clone returns only
    /// then): the report holds all it ever will.
    exec_done: bool,
}

impl Starting {
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits until the child runs its program: the child, or why it could not (it is
    /// reaped then).
    pub fn started(self) -> io::Result<Child> {
        let Starting {
            mut child,
            report,
            exec_done,
        } = self;
        if let Some(errno) = exec_report(report, exec_done)? {
            // The child exits at once; reap it so no zombie is left.
            let _ = wait_blocking(child.pid as i32);
            child.status = Some(ExitStatus::from_raw(127 << 8));
            return Err(match errno {
                ORPHANED => io::Error::other("mur's process changed while the child started"),
                errno => io::Error::from_raw_os_error(errno),
            });
        }
        Ok(child)
    }
}

/// The parent's side of a clone: the child's pid and a pidfd of it.
struct Cloned {
    pid: i32,
    pidfd: OwnedFd,
    /// As [`Starting::exec_done`].
    exec_done: bool,
}

/// Starts a child that runs `to_do` and then its program, with a pidfd, in `cgroup`
/// when given, cloned `via` that way; by `clone` once `clone3` answered ENOSYS
/// (Docker's default seccomp profile does), where the child moves itself into the
/// cgroup (the slow move this module avoids where it can). Every signal is blocked in
/// the calling thread across the clone, so none is handled in the child before it has
/// set every handler back to its default.
///
/// # Safety
/// `to_do` must have been made before the call, from data that outlives it.
unsafe fn clone(
    cgroup: Option<BorrowedFd<'_>>,
    via: Via,
    to_do: &ChildPlan<'_>,
) -> io::Result<Cloned> {
    let mut pidfd: RawFd = -1;
    let parent = |pid: libc::c_long, pidfd: RawFd, exec_done: bool| {
        // SAFETY: the kernel wrote a new descriptor that nothing else owns.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
        Cloned {
            pid: pid as i32,
            pidfd,
            exec_done,
        }
    };
    let _blocked = Blocked::all();
    if via != Via::Clone && CLONE3.load(Ordering::Relaxed) {
        let mut args = libc::clone_args {
            flags: libc::CLONE_PIDFD as u64,
            pidfd: std::ptr::addr_of_mut!(pidfd) as u64,
            child_tid: 0,
            parent_tid: 0,
            exit_signal: libc::SIGCHLD as u64,
            stack: 0,
            stack_size: 0,
            tls: 0,
            set_tid: 0,
            set_tid_size: 0,
            cgroup: 0,
        };
        if let Some(cgroup) = cgroup {
            args.flags |= CLONE_INTO_CGROUP;
            args.cgroup = cgroup.as_raw_fd() as u64;
        }
        let pid = match via {
            #[cfg(target_arch = "x86_64")]
            Via::VforkClone3 => {
                let stack = vfork::Stack::new()?;
                // SAFETY: `child_entry` runs `child`, which keeps to what a child may
                // do and never returns; `to_do` outlives the call, which returns only
                // once the child has exec'd or exited; every signal is blocked.
                unsafe {
                    vfork::clone3(
                        &mut args,
                        &stack,
                        child_entry,
                        std::ptr::from_ref(to_do).cast(),
                    )
                }
            }
            // SAFETY: the child side runs only `child`, as after fork.
            _ => unsafe {
                match libc::syscall(
                    libc::SYS_clone3,
                    std::ptr::addr_of_mut!(args),
                    std::mem::size_of::<libc::clone_args>(),
                ) {
                    0 => child(to_do),
                    p if p < 0 => -libc::c_long::from(*libc::__errno_location()),
                    p => p,
                }
            },
        };
        match pid {
            p if p > 0 => return Ok(parent(p, pidfd, via == Via::VforkClone3)),
            p if p != -libc::c_long::from(libc::ENOSYS) => {
                return Err(io::Error::from_raw_os_error(-p as i32));
            }
            _ => CLONE3.store(false, Ordering::Relaxed),
        }
    }
    // SAFETY: the child side runs only `child`, as after fork. With a null stack the
    // argument order (x86_64: flags, stack, parent_tid, child_tid, tls; aarch64:
    // flags, stack, parent_tid, tls, child_tid) differs only in the two zeros;
    // CLONE_PIDFD stores the pidfd at parent_tid on both.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_PIDFD | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            std::ptr::addr_of_mut!(pidfd),
            0usize,
            0usize,
        )
    };
    match pid {
        0 => {
            let to_do = ChildPlan {
                move_in: cgroup.map(|c| c.as_raw_fd()),
                ..*to_do
            };
            // SAFETY: in the child of a fork-like clone.
            unsafe { child(&to_do) }
        }
        p if p > 0 => Ok(parent(p, pidfd, false)),
        _ => Err(io::Error::last_os_error()),
    }
}

/// All signals blocked in this thread, until dropped.
struct Blocked(nix::sys::signal::SigSet);

impl Blocked {
    fn all() -> Blocked {
        use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
        let mut old = SigSet::empty();
        let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&SigSet::all()), Some(&mut old));
        Blocked(old)
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        use nix::sys::signal::{SigmaskHow, pthread_sigmask};
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.0), None);
    }
}

/// The child's start after a [`vfork::clone3`]: `ctx` is the [`ChildPlan`].
///
/// # Safety
/// Only as the entry of a [`vfork::clone3`] child, with `ctx` a [`ChildPlan`] that
/// outlives the clone.
#[cfg(target_arch = "x86_64")]
unsafe extern "C" fn child_entry(ctx: *const std::ffi::c_void) -> ! {
    // SAFETY: `clone` passes its `to_do`, which outlives the clone.
    unsafe { child(&*ctx.cast::<ChildPlan<'_>>()) }
}

/// The program a command names: `name` itself when it holds a `/` (relative to
/// `cwd`), else the first executable file of that name in the search path `path` (as
/// a shell finds it). `None` when there is none.
pub fn find_program(name: &str, cwd: &Path, path: &str) -> Option<std::path::PathBuf> {
    if name.contains('/') {
        return Some(cwd.join(name));
    }
    if name.is_empty() {
        return None;
    }
    std::env::split_paths(path)
        .map(|dir| cwd.join(dir).join(name))
        .find(|p| p.is_file() && rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok())
}

/// A close-on-exec pipe: (read, write).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// A close-on-exec copy of `fd` numbered above every number a child receives.
fn high(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    Ok(rustix::io::fcntl_dupfd_cloexec(fd, MAX_CHILD_FD + 1)?)
}

/// The child's `errno` if its exec failed: the report pipe closes empty on a
/// successful exec. With `exec_done` its `errno` is already there or never comes: a
/// vfork-like clone returns once the child's `execve` is past failing, which can be
/// before the child closes its copy of the pipe, so nothing waits for that.
fn exec_report(report: OwnedFd, exec_done: bool) -> io::Result<Option<i32>> {
    if exec_done {
        rustix::io::ioctl_fionbio(&report, true)?;
    }
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match rustix::io::read(&report, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::AGAIN) if exec_done => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok((got == 4).then(|| i32::from_ne_bytes(buf)))
}

/// Kills and reaps a child this process could not take charge of: nothing may run
/// that it cannot wait for.
fn abandon(pidfd: &OwnedFd, pid: i32) {
    let _ = rustix::process::pidfd_send_signal(pidfd, rustix::process::Signal::KILL);
    let _ = wait_blocking(pid);
}

/// Reaps `pid`, waiting for it.
fn wait_blocking(pid: i32) -> io::Result<ExitStatus> {
    reap(pid, WaitOptions::empty()).map(|s| s.unwrap_or(ExitStatus::from_raw(0)))
}

/// `waitpid` on this process's child `pid`, retried on EINTR: its status, or `None`
/// when `WNOHANG` is given and it has not exited.
fn reap(pid: i32, options: WaitOptions) -> io::Result<Option<ExitStatus>> {
    let pid = rustix::process::Pid::from_raw(pid).ok_or(io::ErrorKind::InvalidInput)?;
    loop {
        match rustix::process::waitpid(Some(pid), options) {
            Ok(got) => return Ok(got.map(|(_, s)| ExitStatus::from_raw(s.as_raw()))),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A started child: its pid, a pidfd to wait on and signal it by, and its pipes.
/// Dropping it never reaps it, and kills it only if it was spawned to be.
#[derive(Debug)]
pub struct Child {
    pid: u32,
    pidfd: AsyncFd<OwnedFd>,
    status: Option<ExitStatus>,
    kill_on_drop: bool,
    /// With [`Spawn::stdin_piped`], the write end of its stdin.
    pub stdin: Option<Sender>,
    pub stdout: Option<Pipe>,
    pub stderr: Option<Pipe>,
}

impl Child {
    /// Its pid; `None` once it was reaped (the number may then name another process).
    pub fn id(&self) -> Option<u32> {
        self.status.is_none().then_some(self.pid)
    }

    /// Waits for it to exit and reaps it; its status from then on. Cancel-safe.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            let mut ready = self.pidfd.readable().await?;
            match reap(self.pid as i32, WaitOptions::NOHANG)? {
                Some(status) => self.status = Some(status),
                None => ready.clear_ready(),
            }
        }
    }

    /// SIGKILL through its pidfd, unless it was already reaped.
    pub fn start_kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        Ok(rustix::process::pidfd_send_signal(
            self.pidfd.get_ref(),
            rustix::process::Signal::KILL,
        )?)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.kill_on_drop {
            let _ = self.start_kill();
        }
    }
}

mod child;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod vfork;
