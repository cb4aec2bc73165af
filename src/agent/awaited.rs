//! What a task waits for at the end of its turn: the answers of the members it called
//! (call-member) and of the children it delegated to. Both keep their calls here, so
//! a task waits for either kind the one way (docs/call-member.md, docs/delegation.md).

use std::sync::{Mutex, MutexGuard};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What became of one call: its answer, once it came, and whether that answer (or the
/// call's failure to start) already went back into the task.
#[derive(Debug)]
pub(crate) struct Reply<A> {
    pub answer: Option<A>,
    pub delivered: bool,
}

impl<A> Reply<A> {
    pub(crate) fn awaited() -> Reply<A> {
        Reply {
            answer: None,
            delivered: false,
        }
    }
}

/// One call a task made, as [`Awaited`] keeps it.
pub(crate) trait Pending {
    type Answer: Clone;
    fn reply(&mut self) -> &mut Reply<Self::Answer>;
}

/// A task's calls of one kind, in call order, and the signals waiting needs.
#[derive(Debug)]
pub(crate) struct Awaited<E> {
    calls: Mutex<Vec<E>>,
    /// Bumped whenever an answer arrives.
    version: watch::Sender<u64>,
    /// The calling task ended: nothing more is waited for.
    ended: CancellationToken,
}

impl<E: Pending> Awaited<E> {
    pub(crate) fn new() -> Awaited<E> {
        Awaited {
            calls: Mutex::new(Vec::new()),
            version: watch::Sender::new(0),
            ended: CancellationToken::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Vec<E>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every waiter: an answer arrived or a call ended.
    pub(crate) fn changed(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    pub(crate) fn ended(&self) -> &CancellationToken {
        &self.ended
    }

    /// Whether some call's answer has not gone back into the task yet.
    pub(crate) fn owed(&self) -> bool {
        self.lock().iter_mut().any(|e| !e.reply().delivered)
    }

    /// Waits until every call not yet delivered has its answer, or until `cancel` or
    /// the task's end; returns the answers that came, in call order, each once.
    pub(crate) async fn wait_all(&self, cancel: &CancellationToken) -> Vec<E::Answer> {
        let mut rx = self.subscribe();
        loop {
            let stop = cancel.is_cancelled() || self.ended.is_cancelled();
            {
                let mut calls = self.lock();
                let complete = calls.iter_mut().all(|e| {
                    let r = e.reply();
                    r.answer.is_some() || r.delivered
                });
                if complete || stop {
                    return calls
                        .iter_mut()
                        .filter_map(|e| {
                            let r = e.reply();
                            let answer = r.answer.clone().filter(|_| !r.delivered)?;
                            r.delivered = true;
                            Some(answer)
                        })
                        .collect();
                }
            }
            tokio::select! {
                _ = rx.changed() => {}
                () = cancel.cancelled() => {}
                () = self.ended.cancelled() => {}
            }
        }
    }
}
