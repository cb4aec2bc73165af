//! Readiness at full scale (spec: "Readiness"): a peer that never reports is refused
//! with E-RUN-045 after 180 s of real time; the members already started are
//! stopped; the entry member never starts.

use std::time::Duration;

use anyhow::{Result, ensure};

use crate::container::{Config, Sandbox};
use crate::formation::{self, Members, events, wait_event};
use crate::procs;
use crate::report::Measured;
use crate::scenarios::kills::BOUND;

pub const READINESS: f64 = 180.0;

pub async fn silent_peer_refused() -> Result<Measured> {
    let sb = Sandbox::start("readiness-180s", Config::default()).await?;
    formation::setup(&sb, "trio", "trio").await?;
    let launch = formation::launch(
        &sb,
        "launcher",
        "trio",
        &["--task", "Write the report."],
        &Members::StandIn.env("reviewer=silent"),
    )
    .await?;
    let silent = wait_event(&sb, "reviewer", "started", Duration::from_secs(60)).await?;
    wait_event(&sb, "coder", "ready", Duration::from_secs(60)).await?;
    let code = launch.wait_exit(Duration::from_secs(260)).await?;
    let stderr = launch.stderr(&sb).await;
    ensure!(code == 1, "the launcher exited {code}, not 1: {stderr}");
    ensure!(
        stderr.contains("E-RUN-045") && stderr.contains("`reviewer`"),
        "no E-RUN-045 naming the silent peer: {stderr}"
    );
    // The moment the launcher gave up: it closed the silent peer's lifeline.
    let refused = wait_event(&sb, "reviewer", "lifeline_closed", Duration::ZERO)
        .await?
        .at;
    // From the peer process's start, the spec's "own start": never before 180 s
    // (the clocks tick in hundredths), and not much after.
    let waited = refused - formation::process_start(&silent)?;
    ensure!(
        (READINESS - 0.02..READINESS + 3.0).contains(&waited),
        "refused {waited:.2} s after the peer's process started, not 180 s"
    );
    for peer in ["coder", "reviewer"] {
        let ev = events(&sb, peer).await?;
        ensure!(
            ev.iter().any(|e| e.text.starts_with("lifeline_closed"))
                && ev.iter().any(|e| e.text == "exit 0"),
            "{peer} was not stopped through its lifeline: {ev:?}"
        );
    }
    let entry = events(&sb, "lead").await?;
    ensure!(entry.is_empty(), "the entry member started: {entry:?}");
    let t = procs::wait_all_gone(&sb, refused, BOUND).await?;
    ensure!(t.left.is_empty(), "left after the refusal: {:?}", t.left);
    Ok(Measured {
        teardown: t.gone_after,
        note: format!("E-RUN-045 after {waited:.1} s; ready peer stopped, entry never started"),
    })
}
