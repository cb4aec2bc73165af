//! No descendant left behind: every process a session or a launcher starts, and
//! everything those start, ends with it. docs/design/descendants.md says which mechanism
//! covers which end.
//!
//! - Every `mur run` (session and launcher) is a child subreaper
//!   ([`become_subreaper`]): an orphan below it (a grandchild that double-forked, or
//!   called setsid) reparents to it instead of to init, so it stays a descendant.
//! - [`sweep`] SIGKILLs every descendant of a process, found by walking `/proc` by
//!   parent pid, each signalled through a pidfd opened and then checked against the
//!   start time it was found with, so a pid reused meanwhile is never signalled. The
//!   process groups those descendants lead are killed too.
//! - The pids this process spawned on purpose are [`Own`]ed; a child that is not is
//!   a stray (an adopted orphan). [`reap_strays`] reaps the dead ones, which nothing
//!   else waits for; the launcher also kills the live ones ([`watch_strays`]), since
//!   its only children are meant to be its members.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

/// How long a sweep keeps killing what is left (each round waits for the killed).
const SWEEP_LIMIT: Duration = Duration::from_secs(2);

/// Makes this process a child subreaper (prctl `PR_SET_CHILD_SUBREAPER`). A failure
/// is ignored: the sweep then finds fewer descendants, nothing breaks.
pub fn become_subreaper() {
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

/// One line of the process table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub pgid: u32,
    /// `R`, `S`, `Z`, …
    pub state: char,
    /// Field 22 of /proc/<pid>/stat: tells a process from a later one with its pid.
    pub start: u64,
}

impl Proc {
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// `/proc/<pid>/stat`, read; `None` when there is no such process.
pub fn stat(pid: u32) -> Option<Proc> {
    // A line of a few hundred bytes: one read into room made for it, where
    // `read_to_string` would stat the file (size 0) and read it in six growing pieces.
    // Lossy: a command name need not be UTF-8, and the fields read are numbers.
    let mut bytes = Vec::with_capacity(1024);
    std::fs::File::open(format!("/proc/{pid}/stat"))
        .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes))
        .ok()?;
    let text = String::from_utf8_lossy(&bytes);
    // The command name may hold spaces and parentheses: split after the last ')'.
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    // fields[0] is field 3 (state); ppid is 4, pgrp 5, starttime 22.
    Some(Proc {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Every process this one can see.
pub fn table() -> Vec<Proc> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// This process's children, live and zombies, each read from its stat: the pids in
/// `/proc/self/task/<tid>/children` of every thread (a child hangs off the thread that
/// spawned it, an adopted orphan off the one the kernel picked), a few small reads
/// where the whole table is one per process on the machine. Where those files are
/// missing (a kernel without `CONFIG_PROC_CHILDREN`), the table filtered by parent.
/// A child that comes or goes during the read may be missed: callers look again.
fn children() -> Vec<Proc> {
    let me = std::process::id();
    let listed = (|| -> std::io::Result<Vec<u32>> {
        let mut pids = Vec::new();
        for task in std::fs::read_dir("/proc/self/task")? {
            let text = std::fs::read_to_string(task?.path().join("children"))?;
            pids.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
        Ok(pids)
    })();
    let Ok(mut pids) = listed else {
        return table().into_iter().filter(|p| p.ppid == me).collect();
    };
    pids.sort_unstable();
    pids.dedup();
    // The stat is read after the list: a pid reused meanwhile has another parent.
    pids.into_iter()
        .filter_map(stat)
        .filter(|p| p.ppid == me)
        .collect()
}

/// The descendants of `root` in `table`, parents before their children.
pub fn below(root: u32, table: &[Proc]) -> Vec<Proc> {
    let mut children: HashMap<u32, Vec<Proc>> = HashMap::new();
    for p in table {
        children.entry(p.ppid).or_default().push(*p);
    }
    let mut out = Vec::new();
    let mut next = vec![root];
    while let Some(pid) = next.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            // A pid cannot be its own ancestor; guard against a torn read anyway.
            if child.pid != root && !out.iter().any(|p: &Proc| p.pid == child.pid) {
                out.push(*child);
                next.push(child.pid);
            }
        }
    }
    out
}

/// A pidfd for `p`, when `p` is still the process it was when it was read.
fn pin(p: &Proc) -> Option<OwnedFd> {
    pin_pid(p.pid, p.start)
}

/// A pidfd for process `pid`, when it is still the one that started at `start`
/// (field 22 of /proc/<pid>/stat); `None` when it is gone or its pid was reused.
pub fn pin_pid(pid: u32, start: u64) -> Option<OwnedFd> {
    let fd = pidfd_open(Pid::from_raw(pid as i32)?, PidfdFlags::empty()).ok()?;
    // Opened after the read: if the pid was reused in between, the start time differs.
    (stat(pid)?.start == start).then_some(fd)
}

/// Processes no sweep of this one kills: the formation cgroup's watcher
/// (`cgroup::FormationCgroup`), which must outlive the launcher that started it.
static SPARED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// Keeps child `pid` out of every sweep.
pub fn spare(pid: u32) {
    SPARED.lock().unwrap_or_else(|e| e.into_inner()).insert(pid);
}

fn spared() -> BTreeSet<u32> {
    SPARED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Whether this process has a child, live or a zombie: one `waitid` that reaps
/// nothing (`WNOWAIT`), answering `ECHILD` when there is none. With none, no process
/// is below this one, so its sweep and its stray reap need no walk of `/proc` (each
/// walk reads every process's stat: at a formation's end, every member's).
fn has_children() -> bool {
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    let flags =
        WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT | WaitPidFlag::__WALL;
    !matches!(waitid(Id::All, flags), Err(nix::errno::Errno::ECHILD))
}

/// The live descendants of `root` (and `root` itself when `with_root`), each pinned
/// by a pidfd: signalling one later can only reach that very process.
pub fn pin_tree(root: u32, with_root: bool) -> Vec<(Proc, OwnedFd)> {
    let me = std::process::id();
    if root == me && !has_children() {
        return Vec::new(); // nothing below, and this process is never a target
    }
    let spared = spared();
    let table = table();
    let mut targets = below(root, &table);
    if with_root && let Some(r) = table.iter().find(|p| p.pid == root) {
        targets.push(*r);
    }
    targets
        .into_iter()
        .filter(|p| !p.is_zombie() && p.pid != me && !spared.contains(&p.pid))
        .filter_map(|p| Some((p, pin(&p)?)))
        .collect()
}

/// SIGKILL to each pinned process, then to the process groups they lead (while the
/// leader, alive or a zombie, still holds the group's id), then waits until each has
/// exited or `until`. Returns how many it signalled.
pub fn kill_pinned(pinned: &[(Proc, OwnedFd)], until: Instant) -> usize {
    let own_group = stat(std::process::id()).map(|p| p.pgid);
    let mut signalled = 0;
    for (p, fd) in pinned {
        if pidfd_send_signal(fd, Signal::KILL).is_ok() {
            signalled += 1;
        }
        if p.pgid == p.pid && Some(p.pgid) != own_group {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(p.pgid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    for (_, fd) in pinned {
        wait_exited(fd, Some(until));
    }
    signalled
}

/// SIGKILL, by pidfd, to every live descendant of `root` (and to `root` too when
/// `with_root`), and to the process groups they lead. Every target is pinned before
/// any is killed, so none reparents unseen; it repeats until none is left alive or
/// `SWEEP_LIMIT` passed (a process forked meanwhile). Returns how many processes it
/// signalled. Blocking and runtime-free, so it runs in a process's last moments too.
pub fn sweep(root: u32, with_root: bool) -> usize {
    let until = Instant::now() + SWEEP_LIMIT;
    let mut signalled = 0;
    loop {
        let pinned = pin_tree(root, with_root);
        if pinned.is_empty() || Instant::now() > until {
            return signalled;
        }
        signalled += kill_pinned(&pinned, until);
    }
}

/// Waits until the pidfd's process has exited (its pidfd reads as readable), or
/// `until` (`None`: however long that takes).
pub fn wait_exited(fd: &OwnedFd, until: Option<Instant>) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    loop {
        let timeout = match until {
            None => PollTimeout::NONE,
            Some(until) => {
                let left = until.saturating_duration_since(Instant::now());
                PollTimeout::from(u16::try_from(left.as_millis()).unwrap_or(u16::MAX))
            }
        };
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Err(nix::errno::Errno::EINTR) => continue,
            _ => return,
        }
    }
}

/// Sweeps every descendant of this process: the session's or launcher's last act.
pub fn sweep_all() -> usize {
    sweep(std::process::id(), false)
}

/// The pids this process spawned on purpose and waits for itself (through tokio).
static OWN: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn own() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    OWN.lock().unwrap_or_else(|e| e.into_inner())
}

/// A child this process waits for itself: never reaped or killed as a stray. Its pid
/// is forgotten when the `Own` is dropped (after the child was waited for).
#[derive(Debug)]
pub struct Own(Option<u32>);

impl Drop for Own {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            own().remove(&pid);
        }
    }
}

/// Spawns through `spawn` and owns the child, with the registry held across, so a
/// stray reaper never sees the new child unowned.
pub fn spawn_owned<C>(
    spawn: impl FnOnce() -> std::io::Result<C>,
    pid_of: impl Fn(&C) -> Option<u32>,
) -> std::io::Result<(C, Own)> {
    let mut set = own();
    let child = spawn()?;
    let pid = pid_of(&child);
    if let Some(pid) = pid {
        set.insert(pid);
    }
    Ok((child, Own(pid)))
}

/// Direct children of this process that it did not spawn on purpose: orphans of its
/// descendants, adopted because it is a subreaper.
fn strays() -> Vec<Proc> {
    if !has_children() {
        return Vec::new();
    }
    let set = own();
    children()
        .into_iter()
        .filter(|p| !set.contains(&p.pid))
        .collect()
}

/// SIGKILL to every live stray that started at or after `start` (a field 22 of
/// /proc/<pid>/stat) and to everything below it: what a child subreaper that exited
/// (a process harness) left, reparented to this process. Returns how many it signalled.
pub fn sweep_strays_since(start: u64) -> usize {
    let spared = spared();
    strays()
        .into_iter()
        .filter(|p| !p.is_zombie() && p.start >= start && !spared.contains(&p.pid))
        .map(|p| sweep(p.pid, true))
        .sum()
}

/// When each live stray was first seen (by pid and start time).
static SEEN: Mutex<BTreeMap<(u32, u64), Instant>> = Mutex::new(BTreeMap::new());

/// Reaps the dead strays (nothing else waits for them). With `kill_live` a live stray
/// first gets SIGTERM (a delegated child of a member that died winds down on it, as
/// on its closed spawner lifeline), and `grace` after it was first seen, SIGKILL with
/// everything below it. Returns how many were live.
pub fn reap_strays(kill_live: Option<Duration>) -> usize {
    let strays = strays();
    let live: Vec<&Proc> = strays.iter().filter(|p| !p.is_zombie()).collect();
    if let Some(grace) = kill_live {
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        seen.retain(|(pid, start), _| live.iter().any(|p| p.pid == *pid && p.start == *start));
        for p in &live {
            let first = *seen.entry((p.pid, p.start)).or_insert_with(|| {
                if let Some(fd) = pin(p) {
                    let _ = pidfd_send_signal(&fd, Signal::TERM);
                }
                Instant::now()
            });
            if first.elapsed() >= grace {
                sweep(p.pid, true);
            }
        }
    }
    // Only dead strays: a child tokio waits for must never be reaped here. The
    // registry is held so no child is spawned (and owned) between the check and the wait.
    let set = own();
    for p in dead_strays(&set) {
        let _ = nix::sys::wait::waitpid(
            nix::unistd::Pid::from_raw(p.pid as i32),
            Some(nix::sys::wait::WaitPidFlag::WNOHANG),
        );
    }
    live.len()
}

/// The launcher's last act: each live stray gets what is left of its `grace`, but
/// no more than `last` from now (the formation has ended: its 30 s bound holds even
/// for a stray first seen at the 25 s group kill), then every descendant left is swept.
pub fn end_strays_then_sweep(grace: Duration, last: Duration) {
    let until = Instant::now() + last;
    while reap_strays(Some(grace)) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    sweep_all();
    reap_strays(None);
}

fn dead_strays(set: &BTreeSet<u32>) -> Vec<Proc> {
    if !has_children() {
        return Vec::new();
    }
    children()
        .into_iter()
        .filter(|p| p.is_zombie() && !set.contains(&p.pid))
        .collect()
}

/// Every `every`, [`reap_strays`]: the launcher ends its live strays too (what a
/// member that died left behind), each after `kill_live`'s grace; a session only reaps
/// the dead ones (what it killed when a harness stopped). Runs until the returned task
/// is aborted. Only for a process that is a session or a launcher: it reaps children
/// it does not own.
///
/// A tick with no child at all does nothing more than `has_children`'s one
/// non-blocking `waitid`. Only a tick with children to read goes to the blocking
/// pool, whose thread tokio keeps for 10 s after its last job, so an idle session
/// reaping every 5 s would otherwise keep a third thread for good (0.1 MiB of RSS).
pub fn watch_strays(every: Duration, kill_live: Option<Duration>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            if has_children() {
                let _ = tokio::task::spawn_blocking(move || reap_strays(kill_live)).await;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_and_its_children_are_below_it() {
        let me = stat(std::process::id()).unwrap();
        assert_eq!(me.pid, std::process::id());
        assert!(!me.is_zombie());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let found = below(std::process::id(), &table());
        assert!(found.iter().any(|p| p.pid == child.id()), "{found:?}");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_child_live_or_dead_is_seen_and_never_reaped() {
        use std::os::unix::process::ExitStatusExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(has_children());
        let listed = |pid: u32| children().into_iter().find(|p| p.pid == pid);
        assert!(listed(child.id()).is_some_and(|p| !p.is_zombie()));
        child.kill().unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        while !stat(child.id()).unwrap().is_zombie() {
            assert!(
                Instant::now() < until,
                "the killed child never became a zombie"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(has_children());
        assert!(listed(child.id()).is_some_and(|p| p.is_zombie()));
        // Still there for its owner to reap, with its status.
        let pid = child.id();
        assert_eq!(child.wait().unwrap().signal(), Some(9));
        assert_eq!(listed(pid), None);
    }

    /// A child outlives the thread that spawned it: the kernel hangs it off another
    /// thread of this process, whose `children` file then lists it.
    #[test]
    fn a_child_of_a_thread_that_ended_is_still_listed() {
        let mut child = std::thread::spawn(|| {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap()
        })
        .join()
        .unwrap();
        let found = children();
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.iter().any(|p| p.pid == child.id()), "{found:?}");
    }

    #[test]
    fn a_reused_pid_is_not_pinned() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mut p = stat(child.id()).unwrap();
        assert!(pin(&p).is_some());
        p.start += 1; // as if the pid now named a later process
        assert!(pin(&p).is_none());
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
