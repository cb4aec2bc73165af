//! What the door spends on callers that have not authenticated, so that a flood of
//! them cannot starve a rightful caller:
//!
//! - which open connection closes when a new one comes at the cap
//!   (`Limits::max_connections`, `Open::reclaim_one`): callers that proved a
//!   credential are the last to go, so a rightful caller's kept-alive connection is
//!   not pushed out by a flood of idle or bad-token ones (it would reconnect behind
//!   the flood in the accept queue);
//! - how fast the door answers refusals of credentials (`Pacer`, `Limits::refusals`):
//!   past a burst, each 401/403 waits its turn, with no CPU spent while it waits. A
//!   caller flooding bad tokens waits for its answers instead of taking the cores
//!   the rightful caller needs.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// How long a new connection has to send its first request before a newcomer at the
/// cap may push it out: its request may be on the wire, not yet read.
const FIRST_REQUEST_GRACE: Duration = Duration::from_millis(250);

/// What a connection has shown of itself (`rank` orders them at the cap): a refused
/// or a verified credential replaces whatever the connection showed before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Shown {
    /// Carried a request whose credential was refused.
    Refused = 0,
    /// Nothing yet.
    Nothing = 1,
    /// Carried a request needing no credential (the Agent Card, a public door).
    Request = 2,
    /// Carried a request whose credential verified.
    Proven = 3,
}

/// A connection's mark; the request handlers find it among the request's extensions.
#[derive(Clone)]
pub(crate) struct Mark(Arc<AtomicU8>);

impl Mark {
    /// A request's head arrived (it is answered even if the connection is asked to
    /// close meanwhile).
    pub(crate) fn request(&self) {
        let _ = self.0.compare_exchange(
            Shown::Nothing as u8,
            Shown::Request as u8,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    pub(crate) fn proven(&self) {
        self.0.store(Shown::Proven as u8, Ordering::Relaxed);
    }

    pub(crate) fn refused(&self) {
        self.0.store(Shown::Refused as u8, Ordering::Relaxed);
    }

    fn shown(&self) -> Shown {
        match self.0.load(Ordering::Relaxed) {
            0 => Shown::Refused,
            1 => Shown::Nothing,
            2 => Shown::Request,
            _ => Shown::Proven,
        }
    }
}

struct Entry {
    /// Cancelled to ask the connection to close; cancelled by it when it ends.
    reclaim: CancellationToken,
    mark: Mark,
    opened: Instant,
}

/// The rank of a connection at the cap, lowest asked to close first: a refused
/// credential; nothing sent for `FIRST_REQUEST_GRACE`; nothing sent yet (`IN_GRACE`:
/// never asked, waited for instead, since its request may be on the wire); only
/// requests needing no credential; a verified credential.
fn rank(e: &Entry, now: Instant) -> u8 {
    match e.mark.shown() {
        Shown::Refused => 0,
        Shown::Nothing if now - e.opened >= FIRST_REQUEST_GRACE => 1,
        Shown::Nothing => IN_GRACE,
        Shown::Request => 3,
        Shown::Proven => 4,
    }
}

const IN_GRACE: u8 = 2;

/// The open connections, oldest first.
#[derive(Default)]
pub(crate) struct Open(VecDeque<Entry>);

impl Open {
    /// A new connection's reclaim signal and its mark.
    pub(crate) fn push(&mut self, now: Instant) -> (CancellationToken, Mark) {
        let (reclaim, mark) = (
            CancellationToken::new(),
            Mark(Arc::new(AtomicU8::new(Shown::Nothing as u8))),
        );
        self.0.push_back(Entry {
            reclaim: reclaim.clone(),
            mark: mark.clone(),
            opened: now,
        });
        (reclaim, mark)
    }

    /// Asks one open connection to close (at once when idle, after its response
    /// otherwise): the oldest of those that showed least (`rank`). False when there is
    /// none to ask, or when the best to ask is still in its first-request grace: the
    /// caller waits for it to show itself (or end) and asks again.
    pub(crate) fn reclaim_one(&mut self, now: Instant) -> bool {
        self.0.retain(|e| !e.reclaim.is_cancelled());
        let pick = self
            .0
            .iter()
            .enumerate()
            .min_by_key(|(i, e)| (rank(e, now), *i))
            .filter(|(_, e)| rank(e, now) != IN_GRACE)
            .map(|(i, _)| i);
        match pick.and_then(|i| self.0.remove(i)) {
            Some(e) => {
                e.reclaim.cancel();
                true
            }
            None => false,
        }
    }

    /// Forgets ended connections once there are more than `twice` entries.
    pub(crate) fn prune(&mut self, twice: usize) {
        if self.0.len() > twice {
            self.0.retain(|e| !e.reclaim.is_cancelled());
        }
    }
}

/// How many refusals of credentials the door answers at once, and how many a second
/// after that.
#[derive(Debug, Clone, Copy)]
pub struct Refusals {
    pub burst: u32,
    pub per_second: u32,
}

/// Spaces refusals out (the generic cell rate algorithm, queueing instead of
/// dropping): the first `burst` come at once, then one every `1 / per_second`.
pub(crate) struct Pacer {
    interval: Duration,
    /// How far ahead of now the schedule may run before a refusal waits.
    ahead: Duration,
    /// When the next refusal's slot begins.
    next: Mutex<Instant>,
}

impl Pacer {
    pub(crate) fn new(r: Refusals) -> Pacer {
        let interval = Duration::from_secs(1) / r.per_second.max(1);
        Pacer {
            interval,
            ahead: interval * r.burst.saturating_sub(1),
            next: Mutex::new(Instant::now()),
        }
    }

    /// Takes the next slot: how long a refusal arriving at `now` waits for it.
    fn take(&self, now: Instant) -> Duration {
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = (*next).max(now);
        *next = slot + self.interval;
        (slot - now).saturating_sub(self.ahead)
    }

    /// Waits for this refusal's turn.
    pub(crate) async fn turn(&self) {
        let wait = self.take(Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_past_the_burst_wait_their_turn() {
        let pacer = Pacer::new(Refusals {
            burst: 3,
            per_second: 100,
        });
        let t0 = Instant::now();
        let waits: Vec<_> = (0..6).map(|_| pacer.take(t0)).collect();
        let ms = Duration::from_millis;
        assert_eq!(waits, [ms(0), ms(0), ms(0), ms(10), ms(20), ms(30)]);
        // Once the schedule has caught up with time, the burst is there again.
        let later = t0 + ms(1000);
        assert_eq!(pacer.take(later), ms(0));
        assert_eq!(pacer.take(later), ms(0));
    }

    #[test]
    fn at_the_cap_the_least_proven_oldest_connection_goes() {
        let t0 = Instant::now();
        let mut open = Open::default();
        let (proven, m) = open.push(t0);
        m.proven();
        let (idle, _) = open.push(t0);
        let (card, m) = open.push(t0);
        m.request();
        let (bad, m) = open.push(t0);
        m.refused();
        let later = t0 + FIRST_REQUEST_GRACE;
        let (fresh, _) = open.push(later);
        let all = [&proven, &idle, &card, &bad, &fresh];
        let asked = |open: &mut Open, at: Instant| {
            assert!(open.reclaim_one(at));
            all.map(|t| t.is_cancelled())
        };
        assert_eq!(asked(&mut open, later), [false, false, false, true, false]);
        assert_eq!(asked(&mut open, later), [false, true, false, true, false]);
        // Next would be the fresh one, still in its grace: nobody is asked, not even
        // the connections that showed more.
        assert!(!open.reclaim_one(later));
        let after = later + FIRST_REQUEST_GRACE;
        assert_eq!(asked(&mut open, after), [false, true, false, true, true]);
        assert_eq!(asked(&mut open, after), [false, true, true, true, true]);
        assert_eq!(asked(&mut open, after), [true; 5]);
        assert!(!open.reclaim_one(after));
    }

    #[test]
    fn ended_connections_are_skipped_and_forgotten() {
        let t0 = Instant::now();
        let mut open = Open::default();
        let tokens: Vec<_> = (0..6).map(|_| open.push(t0).0).collect();
        for t in &tokens[..4] {
            t.cancel();
        }
        open.prune(4);
        assert_eq!(open.0.len(), 2);
        assert!(open.reclaim_one(t0 + FIRST_REQUEST_GRACE) && tokens[4].is_cancelled());
    }
}
