//! The child's side of a spawn, between its clone and its `execve`: what the parent
//! prepares for it ([`Prepared`], [`ChildPlan`]) and the steps it takes ([`steps`]),
//! each an async-signal-safe system call on that data, with no allocation. A step
//! added here (a confinement) is one more line in [`steps`] and, if it needs data, one
//! more field of [`ChildPlan`] filled in the parent.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;

use super::{Group, Spawn};

/// One more than the highest signal number (`_NSIG`).
const NSIG: libc::c_int = 65;

/// What a child reports when its parent is not the process that started it once the
/// parent-death signal is armed (not an errno value).
pub(super) const ORPHANED: i32 = -1;

/// What the child does between its clone and its `execve`, all prepared before.
#[derive(Clone, Copy)]
pub(super) struct ChildPlan<'a> {
    pub(super) prepared: &'a Prepared,
    /// Each descriptor to `dup2`, and the number it gets.
    pub(super) plan: &'a [(RawFd, RawFd)],
    pub(super) group: Group,
    /// With a parent-death signal: the pid the child's parent must have once it is armed.
    pub(super) parent: Option<libc::pid_t>,
    /// Whether the child becomes a child subreaper.
    pub(super) subreaper: bool,
    /// The confinement applied last before execve.
    pub(super) confine: Option<&'a crate::confine::Prepared>,
    /// The cgroup the child moves itself into (when made without `clone3`).
    pub(super) move_in: Option<RawFd>,
    /// Where a failed step writes its `errno`.
    pub(super) report: RawFd,
}

/// The C strings the child needs and the null-ended pointer arrays `execve` takes,
/// made before the clone.
pub(super) struct Prepared {
    program: CString,
    cwd: Option<CString>,
    _strings: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

impl Prepared {
    pub(super) fn new(spawn: &Spawn) -> io::Result<Prepared> {
        let c = |s: &OsStr| {
            CString::new(s.as_bytes())
                .map_err(|_| io::Error::other(format!("{s:?} holds a NUL byte")))
        };
        if !spawn.program.as_bytes().contains(&b'/') {
            return Err(io::Error::other(format!(
                "{:?}: a program to start must be given as a path",
                spawn.program
            )));
        }
        let program = c(std::path::absolute(&spawn.program)?.as_os_str())?;
        let mut strings = vec![c(&spawn.program)?];
        for a in &spawn.args {
            strings.push(c(a)?);
        }
        let argc = strings.len();
        let mut env: Vec<(OsString, OsString)> = match spawn.env_clear {
            true => Vec::new(),
            false => std::env::vars_os().collect(),
        };
        for (key, value) in &spawn.env {
            env.retain(|(k, _)| k != key);
            if let Some(value) = value {
                env.push((key.clone(), value.clone()));
            }
        }
        for (k, v) in env {
            let mut kv = k;
            kv.push("=");
            kv.push(v);
            strings.push(c(&kv)?);
        }
        // A CString's bytes stay where they are when the vector holding it moves.
        let ptrs = |list: &[CString]| {
            let mut p: Vec<*const libc::c_char> = list.iter().map(|s| s.as_ptr()).collect();
            p.push(std::ptr::null());
            p
        };
        let (argv, envp) = (ptrs(&strings[..argc]), ptrs(&strings[argc..]));
        let cwd = spawn.cwd.as_deref().map(c).transpose()?;
        Ok(Prepared {
            program,
            cwd,
            _strings: strings,
            argv,
            envp,
        })
    }
}

/// A step of the child's that failed: its `errno` is reported.
struct Failed;

/// A system call's return, as a step: below zero is a failure (its `errno` is set).
fn ok(ret: libc::c_int) -> Result<(), Failed> {
    if ret < 0 { Err(Failed) } else { Ok(()) }
}

/// The child's side, between clone and exec: no allocation, only system calls on data
/// the parent prepared, and no return. A step that fails reports its `errno` on the
/// report pipe and exits 127.
///
/// # Safety
/// Only in the child side of [`super::clone`], with `to_do` made before it.
pub(super) unsafe fn child(to_do: &ChildPlan<'_>) -> ! {
    // SAFETY: the caller's contract; every step is async-signal-safe.
    let errno = match unsafe { steps(to_do) } {
        // SAFETY: reading this thread's errno, which the failed call set.
        Err(Failed) => unsafe { *libc::__errno_location() },
        Ok(Orphaned) => ORPHANED,
    };
    // SAFETY: write and _exit are async-signal-safe; `errno` is a local.
    unsafe {
        libc::write(to_do.report, (&errno as *const i32).cast(), 4);
        libc::_exit(127)
    }
}

/// The parent changed before the parent-death signal was armed.
struct Orphaned;

/// The child's steps, in order, ending in its `execve`; returns only when one failed.
/// A step added here (a confinement) is one more line, on data in [`ChildPlan`].
///
/// # Safety
/// As [`child`].
unsafe fn steps(to_do: &ChildPlan<'_>) -> Result<Orphaned, Failed> {
    let ChildPlan {
        prepared,
        plan,
        group,
        parent,
        subreaper,
        confine,
        move_in,
        report: _,
    } = *to_do;
    // SAFETY: each call is async-signal-safe and takes pointers into `prepared`, which
    // the parent made and this child shares or holds a copy of.
    unsafe {
        default_signals()?;
        if let Some(cgroup) = move_in {
            join_cgroup(cgroup)?;
        }
        match group {
            Group::Launchers => {}
            Group::Own => ok(libc::setpgid(0, 0))?,
            Group::Session => ok(libc::setsid())?,
        }
        if let Some(parent) = parent {
            ok(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
            // The parent may have died before the signal was armed.
            if libc::getppid() != parent {
                return Ok(Orphaned);
            }
        }
        if subreaper {
            ok(libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))?;
        }
        for &(from, to) in plan {
            ok(libc::dup2(from, to))?;
        }
        if let Some(cwd) = &prepared.cwd {
            ok(libc::chdir(cwd.as_ptr()))?;
        }
        // Last: the folder and descriptors above are set while they still may be.
        // Raw system calls on prepared data; a failure leaves errno set.
        if let Some(confine) = confine
            && crate::confine::apply_in_child(confine).is_err()
        {
            return Err(Failed);
        }
        libc::execve(
            prepared.program.as_ptr(),
            prepared.argv.as_ptr(),
            prepared.envp.as_ptr(),
        );
    }
    Err(Failed)
}

/// A standard start: every handled signal back to its default first (a handler of the
/// parent's must not run here, where the memory may be the parent's), then no signal
/// blocked, and SIGPIPE at its default (Rust's runtime ignores it, and an ignored
/// signal stays ignored across exec).
///
/// # Safety
/// Only in a child between clone and exec.
unsafe fn default_signals() -> Result<(), Failed> {
    // SAFETY: sigaction, signal, sigemptyset and pthread_sigmask are async-signal-safe
    // and take locals.
    unsafe {
        for signal in 1..NSIG {
            let mut action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut action) == 0
                && action.sa_sigaction != libc::SIG_DFL
                && action.sa_sigaction != libc::SIG_IGN
            {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        ok(libc::pthread_sigmask(
            libc::SIG_SETMASK,
            &none,
            std::ptr::null_mut(),
        ))
    }
}

/// Moves this process into the cgroup directory `cgroup` (a child made without
/// `clone3`).
///
/// # Safety
/// Only in a child between clone and exec.
unsafe fn join_cgroup(cgroup: RawFd) -> Result<(), Failed> {
    // SAFETY: openat, write and close are async-signal-safe; the path is a literal.
    unsafe {
        let procs = libc::openat(
            cgroup,
            c"cgroup.procs".as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC,
        );
        ok(procs)?;
        if libc::write(procs, b"0".as_ptr().cast(), 1) != 1 {
            return Err(Failed);
        }
        libc::close(procs);
    }
    Ok(())
}
