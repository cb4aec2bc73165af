//! One cgroup v2 per formation, and its watcher: the case only a cgroup covers
//! (docs/design/descendants.md). When the launcher and the entry member die together (a
//! SIGKILL of the launcher's process group, the OOM killer taking both), nothing of
//! mur is left above what the entry member's harness left behind; a cgroup holds it
//! anyway.
//!
//! - The launcher makes `<its own cgroup>/murmur-frm_<id>` before any member starts
//!   ([`FormationCgroup::make`]) and starts every member in it (`spawn`, with
//!   `clone3(CLONE_INTO_CGROUP)`), so every member and every descendant of theirs is in
//!   it, however it escaped its session or process group. The launcher stays outside:
//!   moving it in cost an RCU grace period, 8–15 ms of each launch.
//! - It starts a watcher (`mur formation-watch`, hidden): its own session, outside the
//!   cgroup like the launcher, so no kill of the launcher's group and no
//!   `cgroup.kill` of the formation's reaches it. The watcher waits on a
//!   pidfd of the launcher. When the launcher is gone, it waits as the launcher would
//!   have for its members: until nothing is left in the cgroup, or 25 s (scaled), then
//!   writes `cgroup.kill` and removes the cgroup.
//! - A launcher that ends normally kills what is left in the cgroup after its sweep
//!   and removes it ([`FormationCgroup::end`]); the watcher then finds it gone and exits.
//! - Where no cgroup v2 is writable (an ordinary user without delegation, a container
//!   with a read-only or no v2 hierarchy, a kernel without `cgroup.kill`), the launcher
//!   runs without one and says so on `-v` only.

use std::fs;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::descendants;
use crate::timing;

/// The name of a formation's cgroup: this prefix and the formation id.
pub const PREFIX: &str = "murmur-frm_";

/// The hidden subcommand that runs the watcher.
pub const WATCH_COMMAND: &str = "formation-watch";

/// How long a kill of the cgroup may take to leave it empty and removed.
const KILL_LIMIT: Duration = Duration::from_secs(2);

/// How often the watcher looks at a cgroup whose launcher is gone.
const WATCH_EVERY: Duration = Duration::from_millis(50);

/// The cgroup v2 directory of this process, when a cgroup2 hierarchy that holds it
/// is mounted (`/sys/fs/cgroup` on a unified system, `/sys/fs/cgroup/unified` on a
/// hybrid one).
pub fn own_dir() -> Option<PathBuf> {
    let cgroup = fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    cgroup2_mounts(&mountinfo)
        .into_iter()
        .filter_map(|(root, point)| resolve(&root, &point, path))
        .find(|dir| dir.join("cgroup.procs").is_file())
}

/// Each cgroup2 mount in `/proc/self/mountinfo`: the hierarchy's path it shows, and
/// where. A mount point with an escaped character (`\040`) is left out.
fn cgroup2_mounts(mountinfo: &str) -> Vec<(String, PathBuf)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            if after.split_whitespace().next()? != "cgroup2" {
                return None;
            }
            let fields: Vec<&str> = before.split_whitespace().collect();
            let (root, point) = (fields.get(3)?, fields.get(4)?);
            if root.contains('\\') || point.contains('\\') {
                return None;
            }
            Some((root.to_string(), PathBuf::from(point)))
        })
        .collect()
}

/// The directory of cgroup `path` (as /proc/self/cgroup names it) under a mount that
/// shows the hierarchy from `root`; `None` when `path` is not below `root`.
fn resolve(root: &str, point: &Path, path: &str) -> Option<PathBuf> {
    let rel = if root == "/" {
        path
    } else {
        let rest = path.strip_prefix(root)?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        rest
    };
    Some(point.join(rel.trim_start_matches('/')))
}

/// Whether anything runs in cgroup `dir` or below it; `None` when it is gone.
fn populated(dir: &Path) -> Option<bool> {
    let events = fs::read_to_string(dir.join("cgroup.events")).ok()?;
    Some(events.lines().any(|l| l.trim() == "populated 1"))
}

/// SIGKILL to everything in cgroup `dir` and below (`cgroup.kill`), then removes it
/// and the cgroups below it (a nested formation's) once empty, within [`KILL_LIMIT`].
/// A cgroup already gone is done.
fn kill_and_remove(dir: &Path) -> io::Result<()> {
    let until = Instant::now() + KILL_LIMIT;
    if populated(dir) == Some(true) {
        match fs::write(dir.join("cgroup.kill"), b"1") {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            other => other?,
        }
    }
    loop {
        match remove_tree(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            // Busy: what was killed has not left yet.
            Err(e) if Instant::now() >= until => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Removes cgroup `dir` and every cgroup below it, deepest first; each must be empty.
fn remove_tree(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)?.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_tree(&entry.path())?;
        }
    }
    fs::remove_dir(dir)
}

/// Removes every empty formation cgroup under `parent` (with the empty cgroups below
/// it): what a watcher that was itself killed left. A cgroup something still runs in
/// is busy and stays, and so does one whose launcher holds its lock (a live formation's
/// before its first member starts).
pub fn remove_leftovers(parent: &Path) -> usize {
    let Ok(entries) = fs::read_dir(parent) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
        .filter(|e| {
            let Ok(dir) = fs::File::open(e.path()) else {
                return false;
            };
            // Held while it is removed, so its launcher never takes a removed cgroup.
            rustix::fs::flock(&dir, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
                && remove_tree(&e.path()).is_ok()
        })
        .count()
}

/// The formation's cgroup, which every member is started in (`spawn`), and its watcher
/// outside it. The launcher itself stays where it was.
#[derive(Debug)]
pub struct FormationCgroup {
    dir: PathBuf,
    /// The cgroup's directory, open and `flock`ed for the launcher's life: members are
    /// cloned into it, and another launch's leftover sweep passes it by.
    fd: fs::File,
    /// The watcher, owned: never a stray of this launcher's.
    _watcher: descendants::Own,
}

impl FormationCgroup {
    /// Makes formation `formation`'s cgroup below this process's own and starts its
    /// watcher. Call it before any member starts, and start each in [`Self::fd`].
    /// `Err` says why there is none (the launcher then runs without).
    pub fn make(formation: &str) -> Result<FormationCgroup, String> {
        let parent = own_dir().ok_or("no cgroup v2 hierarchy holding this process is mounted")?;
        let removed = remove_leftovers(&parent);
        if removed > 0 {
            tracing::debug!("removed {removed} empty formation cgroups left in {parent:?}");
        }
        let dir = parent.join(format!("murmur-{formation}"));
        let fail = |what: &str, e: io::Error| format!("{what} {}: {e}", dir.display());
        // Another launch removes empty formation cgroups it can lock: ours is empty and
        // unlocked until the lock below, so a removal in between is met by making it again.
        let mut tries = 0;
        let fd = loop {
            tries += 1;
            fs::create_dir(&dir).map_err(|e| fail("cannot make", e))?;
            if !dir.join("cgroup.kill").is_file() {
                let _ = fs::remove_dir(&dir);
                return Err(format!(
                    "{} has no cgroup.kill (a kernel before 5.14)",
                    dir.display()
                ));
            }
            let fd = fs::File::open(&dir).map_err(|e| fail("cannot open", e))?;
            // Blocking: a sweep holds it only while it removes the cgroup.
            rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive)
                .map_err(|e| fail("cannot lock", e.into()))?;
            if dir.join("cgroup.kill").is_file() {
                break fd;
            }
            if tries >= 3 {
                return Err(format!("{} was removed as it was made", dir.display()));
            }
        };
        match spawn_watcher(&dir) {
            Ok((watcher, own)) => {
                descendants::spare(watcher);
                Ok(FormationCgroup {
                    dir,
                    fd,
                    _watcher: own,
                })
            }
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                Err(fail("cannot start the watcher of", e))
            }
        }
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cgroup's directory, open: what `spawn` starts a member in.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The launcher's last act, after its sweep: SIGKILL to anything still in the
    /// cgroup, the cgroup removed. The watcher then finds it gone.
    pub fn end(self) {
        if let Err(e) = kill_and_remove(&self.dir) {
            tracing::warn!("cannot remove the formation's cgroup {:?}: {e}", self.dir);
        }
    }
}

/// Starts `mur formation-watch` for cgroup `dir`, in a session of its own and, like
/// the launcher, outside the formation's cgroup.
fn spawn_watcher(dir: &Path) -> io::Result<(u32, descendants::Own)> {
    let me = std::process::id();
    let start = descendants::stat(me)
        .ok_or_else(|| io::Error::other("cannot read this process's start time"))?
        .start;
    let null = fs::OpenOptions::new().write(true).open("/dev/null")?;
    let mut watcher = crate::spawn::Spawn::new(std::env::current_exe()?);
    watcher
        .args([WATCH_COMMAND, "--launcher"])
        .arg(format!("{me}:{start}"))
        .arg("--cgroup")
        .arg(dir)
        .own_session()
        .stdout_to(null.try_clone()?.into())
        .stderr(crate::spawn::Stderr::To(null.into()));
    let (child, own) = descendants::spawn_owned(|| watcher.spawn(None), |c| c.id())?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the watcher was reaped"))?;
    Ok((pid, own))
}

/// `mur formation-watch` (hidden; started by the launcher, docs/design/descendants.md).
#[derive(Debug, Clone, clap::Args)]
pub struct WatchArgs {
    /// The launcher: `<pid>:<start time>` (field 22 of /proc/<pid>/stat).
    #[arg(long)]
    pub launcher: String,
    /// The formation's cgroup directory (its name starts `murmur-frm_`).
    #[arg(long)]
    pub cgroup: PathBuf,
}

/// The watcher: waits for the launcher to be gone; then, if its cgroup is still
/// there, gives what runs in it until 25 s (scaled) to end on its own (members wind
/// down on their closed lifelines within 20 s), then kills it and removes the cgroup.
pub fn watch(args: &WatchArgs) -> crate::Result<i32> {
    let refuse = |why: String| crate::Diagnostic::new(crate::catalogue::E_RUN_008, why);
    let named = args
        .cgroup
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(PREFIX));
    if !named || !args.cgroup.join("cgroup.kill").is_file() {
        return Err(refuse(format!(
            "{} is no formation cgroup (a cgroup v2 named {PREFIX}…)",
            args.cgroup.display()
        )));
    }
    let (pid, start) = args
        .launcher
        .split_once(':')
        .and_then(|(p, s)| Some((p.parse().ok()?, s.parse().ok()?)))
        .ok_or_else(|| refuse(format!("--launcher {}: not <pid>:<start>", args.launcher)))?;
    // No pidfd: the launcher is already gone (or its pid names a later process).
    if let Some(fd) = descendants::pin_pid(pid, start) {
        descendants::wait_exited(&fd, None);
    }
    let kill_at = Instant::now() + timing::scaled(timing::WIND_DOWN_KILL);
    loop {
        match populated(&args.cgroup) {
            None => return Ok(0),
            Some(false) => break,
            Some(true) if Instant::now() >= kill_at => {
                tracing::info!("killing what is left in {:?}", args.cgroup);
                break;
            }
            Some(true) => std::thread::sleep(WATCH_EVERY),
        }
    }
    Ok(match kill_and_remove(&args.cgroup) {
        Ok(()) => 0,
        Err(e) => {
            tracing::warn!("cannot remove {:?}: {e}", args.cgroup);
            1
        }
    })
}

#[cfg(test)]
mod tests;
