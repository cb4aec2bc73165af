//! `murmur.WatchSession`: every record of the session's trace, published to the door's
//! watchers as it is written. The trace has several writers (the session, the agent
//! loop), so the session follows the file itself: complete lines only, in order.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::door::SessionEvents;

/// How often the trace is looked at for new records.
const POLL: Duration = Duration::from_millis(50);

/// Follows `trace` from `offset` (its length when the session began, so a resumed
/// session publishes only its own records) until `stop`, then publishes what is left.
pub fn follow(
    trace: PathBuf,
    offset: u64,
    events: SessionEvents,
    stop: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tail = Tail {
            path: trace,
            offset,
            partial: Vec::new(),
        };
        loop {
            tail.publish(&events);
            tokio::select! {
                _ = tokio::time::sleep(POLL) => {}
                _ = stop.cancelled() => break,
            }
        }
        tail.publish(&events);
    })
}

struct Tail {
    path: PathBuf,
    offset: u64,
    /// The start of a line not yet complete.
    partial: Vec<u8>,
}

impl Tail {
    fn publish(&mut self, events: &SessionEvents) {
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return;
        };
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut fresh = Vec::new();
        let Ok(n) = file.read_to_end(&mut fresh) else {
            return;
        };
        self.offset += n as u64;
        self.partial.extend_from_slice(&fresh);
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            if let Ok(value) = serde_json::from_slice::<serde_json::Value>(&line) {
                events.publish(value);
            }
        }
    }
}
