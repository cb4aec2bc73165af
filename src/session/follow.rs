//! `mur trace show --follow`: a live trace, to its session_end. Each live session's
//! door streams every record as it is written (`murmur.WatchSession`, operator
//! token); the watch is opened first, the trace file is read, and the stream's
//! records after the file's last `seq` follow, so none is missed or shown twice.

use crate::a2a;
use crate::a2a_client::{Endpoint, Events};
use crate::catalogue::{E_RUN_002, E_RUN_007};
use crate::diag::{Diagnostic, Result};
use crate::output;
use crate::records::Records;
use crate::running::RunningDir;
use crate::trace::{self, Event, Record};

/// One session to follow, and how to print its lines.
pub(crate) struct Followed {
    pub records: Records,
    /// Put before each line when several sessions are followed (`[lead] `).
    pub prefix: String,
}

/// Follows every session in `sessions` at once, each to its session_end (or to the
/// end of its trace when it no longer runs).
pub(crate) fn follow(sessions: Vec<Followed>, json: bool) -> Result<i32> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Diagnostic::new(E_RUN_002, format!("cannot start a runtime: {e}")))?;
    runtime.block_on(async {
        let running = RunningDir::default();
        let follows = sessions.iter().map(|s| one(s, &running, json));
        for result in futures_util::future::join_all(follows).await {
            result?;
        }
        Ok(0)
    })
}

async fn one(s: &Followed, running: &RunningDir, json: bool) -> Result<()> {
    let id = &s.records.session_id;
    let live = running.get(id)?;
    // Subscribed before the file is read: nothing written in between is lost.
    let stream = match live.as_ref().and_then(|r| r.door_url.clone()) {
        Some(door) => Some(watch(&door, &running.token(id)?, id).await?),
        None => None,
    };
    let read = trace::read(&s.records.trace_path())?;
    let mut last = 0;
    for record in &read.records {
        show(s, record, json);
        last = record.seq;
    }
    let ended = read
        .records
        .last()
        .is_some_and(|r| matches!(r.event, Event::SessionEnd { .. }));
    let Some(mut events) = stream.filter(|_| !ended) else {
        return Ok(());
    };
    while let Some(Ok(result)) = events.next().await {
        let Ok(record) = serde_json::from_value::<Record>(result) else {
            continue;
        };
        if record.seq <= last {
            continue;
        }
        last = record.seq;
        show(s, &record, json);
        if matches!(record.event, Event::SessionEnd { .. }) {
            break;
        }
    }
    Ok(())
}

/// Opens `murmur.WatchSession` on the session's door; returns once subscribed.
async fn watch(door: &str, token: &str, id: &str) -> Result<Events> {
    let failed = |e: String| {
        Diagnostic::new(
            E_RUN_007,
            format!("cannot follow {id} at its door {door}: {e}"),
        )
    };
    let http = crate::a2a_client::http()
        .build()
        .map_err(|e| failed(e.to_string()))?;
    Endpoint::at(http, door, token)
        .map_err(|e| failed(e.to_string()))?
        .stream(a2a::WATCH_SESSION, serde_json::json!({}))
        .await
        .map_err(|e| failed(e.to_string()))
}

fn show(s: &Followed, record: &Record, json: bool) {
    if json {
        output::stdout_line(serde_json::to_string(record).unwrap_or_default());
    } else {
        output::stdout_line(format_args!("{}{record}", s.prefix));
    }
}
