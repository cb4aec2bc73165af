//! Durability of a session's records, off the task's path. A task's result is written
//! whole (into a spare file swapped with out/result.txt) without waiting for the
//! disk; this thread then `fdatasync`s the records in rounds. Results that end during
//! one round share the next, so one slow disk flush never holds back the next task
//! (group commit). Rounds start at most every [`ROUND_GAP`], the first one that long
//! after the thread's start, so a busy session syncs 20 times a second, not once per
//! task: a power cut may lose the results of the last ~50 ms. A process kill loses
//! nothing: the kernel already has the bytes.
//! [`Flusher::flush`] waits until everything marked so far is on disk (no gap); the
//! session calls it after `session_end`.

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The least time from one round's start to the next one's, unless a
/// [`Flusher::flush`] or the end is waiting.
pub(super) const ROUND_GAP: Duration = Duration::from_millis(50);

/// Syncs a fixed set of files and folders each time it is told something changed.
pub(crate) struct Flusher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the thread: a mark, or the end.
    work: Condvar,
    /// Wakes [`Flusher::flush`] callers: a round finished.
    done: Condvar,
}

#[derive(Default)]
struct State {
    /// Marks made so far, and how many of them the finished rounds covered.
    marked: u64,
    synced: u64,
    closing: bool,
    /// A [`Flusher::flush`] is waiting: the next round starts at once.
    urgent: bool,
    /// The thread waits for a first mark; only then does a mark need to wake it
    /// (a wake per task would cost a context switch per task).
    idle: bool,
    /// The first failure, kept until a flush reports it.
    error: Option<String>,
}

impl Flusher {
    /// Starts the thread. Each round syncs every path in `paths` that exists: files
    /// with `fdatasync`, folders with `fsync` (so a rename in them is durable).
    pub(crate) fn start(paths: Vec<PathBuf>) -> std::io::Result<Flusher> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            work: Condvar::new(),
            done: Condvar::new(),
        });
        let thread = std::thread::Builder::new()
            .name("mur-flush".into())
            .spawn({
                let shared = shared.clone();
                move || run(&shared, &paths)
            })?;
        Ok(Flusher {
            shared,
            thread: Some(thread),
        })
    }

    /// Something in the records changed: sync it soon. Never blocks on the disk.
    pub(crate) fn mark(&self) {
        let mut state = lock(&self.shared.state);
        state.marked += 1;
        if state.idle {
            state.idle = false;
            self.shared.work.notify_one();
        }
    }

    /// Waits until every mark made before this call is on disk. Blocks the calling
    /// thread; `Err` holds what failed (a disk error), once.
    pub(crate) fn flush(&self) -> Result<(), String> {
        let mut state = lock(&self.shared.state);
        let target = state.marked;
        if state.synced < target {
            state.urgent = true;
            self.shared.work.notify_one();
        }
        while state.synced < target && !state.closing {
            state = self
                .shared
                .done
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
        match state.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Flusher {
    /// Finishes the marks made so far, then stops the thread.
    fn drop(&mut self) {
        lock(&self.shared.state).closing = true;
        self.shared.work.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(shared: &Shared, paths: &[PathBuf]) {
    // The gap counts from the thread's start too: the records a session writes as it
    // starts (its trace's first line, MURMUR.md) share a round ROUND_GAP later, off a
    // start-up that a formation runs once per member, all at once (docs/records.md).
    let mut last_round = Instant::now();
    loop {
        let target = {
            let mut state = lock(&shared.state);
            while state.marked == state.synced && !state.closing {
                state.idle = true;
                state = shared.work.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            state.idle = false;
            if state.marked == state.synced {
                return; // closing, nothing left
            }
            // Let the marks of the next moments join this round.
            let next = last_round + ROUND_GAP;
            while !state.urgent && !state.closing {
                let now = Instant::now();
                if now >= next {
                    break;
                }
                state = shared
                    .work
                    .wait_timeout(state, next - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            state.urgent = false;
            state.marked
        };
        last_round = Instant::now();
        let failed = sync_all(paths);
        let mut state = lock(&shared.state);
        state.synced = target;
        if let Some(e) = failed {
            state.error.get_or_insert(e);
        }
        shared.done.notify_all();
    }
}

/// One round; the first failure, if any. A path not there (yet) is skipped.
fn sync_all(paths: &[PathBuf]) -> Option<String> {
    let mut failed = None;
    for path in paths {
        let synced = match File::open(path) {
            // A folder's entries (a rename in it) need fsync; a file's data, fdatasync.
            Ok(file) => match file.metadata() {
                Ok(m) if m.is_dir() => file.sync_all(),
                Ok(_) => file.sync_data(),
                Err(e) => Err(e),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = synced {
            failed.get_or_insert(format!("cannot sync {}: {e}", path.display()));
        }
    }
    failed
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_returns_once_the_marked_files_are_synced_and_reports_a_failure_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("result.txt");
        std::fs::write(&file, "done\n").unwrap();
        let flusher = Flusher::start(vec![file.clone(), dir.path().to_path_buf()]).unwrap();
        assert_eq!(flusher.flush(), Ok(()), "nothing marked: returns at once");
        for _ in 0..100 {
            flusher.mark();
        }
        assert_eq!(flusher.flush(), Ok(()));
        {
            let state = lock(&flusher.shared.state);
            assert_eq!(state.synced, 100, "the rounds covered every mark");
        }
        drop(flusher);

        // A path that cannot be opened (a file in place of a folder on the way).
        let bad = file.join("below-a-file");
        let flusher = Flusher::start(vec![bad]).unwrap();
        flusher.mark();
        let err = flusher.flush().unwrap_err();
        assert!(err.contains("below-a-file"), "{err}");
        assert_eq!(flusher.flush(), Ok(()), "a failure is reported once");
    }

    #[test]
    fn a_mark_made_at_the_start_waits_a_round_gap_from_the_thread_s_start() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let flusher = Flusher::start(vec![dir.path().to_path_buf()]).unwrap();
        flusher.mark();
        // Woken by the round's end (`done`), as `flush` is, but without its urgency.
        let deadline = started + Duration::from_secs(30);
        let mut state = lock(&flusher.shared.state);
        while state.synced < 1 {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the first round never came");
            state = flusher.shared.done.wait_timeout(state, left).unwrap().0;
        }
        drop(state);
        assert!(
            started.elapsed() >= ROUND_GAP,
            "the first round ran {:?} after the start, before the gap",
            started.elapsed()
        );
    }

    #[test]
    fn dropping_the_flusher_syncs_what_was_marked_and_stops_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let flusher = Flusher::start(vec![dir.path().to_path_buf()]).unwrap();
        flusher.mark();
        let shared = flusher.shared.clone();
        drop(flusher);
        let state = lock(&shared.state);
        assert_eq!(state.synced, 1);
        assert!(state.closing);
    }
}
