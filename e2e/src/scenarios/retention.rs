//! Retention across several launches in one container (spec: "Removing formation
//! directories"): max_sessions and max_age with the spec's exact stderr lines, and
//! every never-remove case.
//!
//! The entry capsule `keeper` keeps `max_sessions: 2` and `max_age: 1h`. Directories
//! older than a launch are made by hand with ids minted from the container's clock
//! (the age is read from the id), each with the marker the case needs.

use std::time::Duration;

use anyhow::{Context, Result, ensure};

use crate::container::{Config, Sandbox};
use crate::formation::{self, Launch, Members, wait_event};
use crate::report::Measured;
use crate::traces;

const FORMATIONS: &str = "/root/.murmur/formations";
const RECORDS: &str = "/root/.murmur/records/root/.murmur/formations";
const PROJECT: &str = "/e2e/work/retention";

fn id_at(ms: u64, n: u8) -> String {
    format!("frm_{ms:012x}7{n:03x}8000000000000000")
}

fn marker(project: &str) -> String {
    format!(r#"{{"project_dir":"{project}","launcher_pid":999999,"launcher_start":"1"}}"#)
}

/// Makes a formation directory by hand, with a peer folder and that peer's records.
async fn fabricate(sb: &Sandbox, id: &str, formation_json: Option<&str>) -> Result<()> {
    let write = formation_json.map_or(String::new(), |text| {
        format!("printf '%s' '{text}' > {FORMATIONS}/{id}/formation.json && chmod 600 {FORMATIONS}/{id}/formation.json && ")
    });
    sb.sh(&format!(
        "mkdir -p {FORMATIONS}/{id}/coder {RECORDS}/{id}/coder/ses_1 && chmod 700 {FORMATIONS} {FORMATIONS}/{id} && \
         {write} echo '{{}}' > {RECORDS}/{id}/coder/ses_1/trace.jsonl"
    ))
    .await?
    .ok()
    .with_context(|| format!("making {id}"))?;
    Ok(())
}

async fn listing(sb: &Sandbox) -> Result<Vec<String>> {
    let out = sb.sh(&format!("ls {FORMATIONS}")).await?.ok()?;
    Ok(out.stdout.split_whitespace().map(String::from).collect())
}

async fn exists(sb: &Sandbox, path: &str) -> Result<bool> {
    Ok(sb.sh(&format!("[ -e {path} ]")).await?.code == 0)
}

/// The formation-directory retention lines of a launch's stderr.
async fn retention_lines(sb: &Sandbox, l: &Launch) -> Vec<String> {
    l.stderr(sb)
        .await
        .lines()
        .filter(|l| l.contains("retention: removed formation"))
        .map(String::from)
        .collect()
}

fn removed(id: &str, reason: &str) -> String {
    format!("[mur run] retention: removed formation {id} ({reason})")
}

/// Launches with `--task` (the entry member completes it at once) and returns the
/// launch once it exited 0. Retention writes nothing to stdout: a stand-in entry
/// member writes nothing either, a real one prints its result there.
async fn launch_once(sb: &Sandbox, tag: &str, members: Members) -> Result<Launch> {
    let l = formation::launch(
        sb,
        tag,
        "retention",
        &["--task", "Tidy up."],
        &members.env("keeper=exit:0"),
    )
    .await?;
    let code = l.wait_exit(Duration::from_secs(60)).await?;
    ensure!(code == 0, "{tag} exited {code}: {}", l.stderr(sb).await);
    let stdout = l.stdout(sb).await;
    match members {
        Members::StandIn => ensure!(stdout.is_empty(), "{tag} wrote to stdout: {stdout:?}"),
        Members::Real => ensure!(
            !stdout.contains("retention"),
            "{tag} wrote retention to stdout: {stdout:?}"
        ),
    }
    Ok(l)
}

fn newest(before: &[String], after: &[String]) -> Result<String> {
    after
        .iter()
        .find(|id| !before.contains(id))
        .cloned()
        .context("the launch made no formation directory")
}

pub async fn retention(members: Members) -> Result<Measured> {
    let name = match members {
        Members::StandIn => "retention",
        Members::Real => "real-retention",
    };
    let sb = Sandbox::start(name, Config::default()).await?;
    formation::setup(&sb, "retention", "retention").await?;

    // A formation whose launcher keeps running through every pass below.
    let l1 = formation::launch(&sb, "l1", "retention", &[], &members.env("")).await?;
    match members {
        Members::StandIn => {
            wait_event(&sb, "keeper", "started", Duration::from_secs(60)).await?;
        }
        Members::Real => {
            let until = tokio::time::Instant::now() + Duration::from_secs(60);
            while traces::of(&traces::traces(&sb).await?, "keeper").is_err() {
                ensure!(
                    tokio::time::Instant::now() < until,
                    "the running formation's entry member never started: {}",
                    l1.stderr(&sb).await
                );
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }
    let running = listing(&sb)
        .await?
        .pop()
        .context("no formation directory")?;

    // Older directories, made by hand.
    let now_ms: u64 = sb
        .sh("date +%s")
        .await?
        .ok()?
        .stdout
        .trim()
        .parse::<u64>()?
        * 1000;
    let mins = |m: u64| now_ms - m * 60_000;
    let mid = id_at(mins(30), 1); // young enough, but over max_sessions
    let old = id_at(mins(120), 2); // over both: max_age
    let other = id_at(mins(180), 3); // another project's
    let no_marker = id_at(mins(240), 4);
    let bad_marker = id_at(mins(300), 5);
    let live_record = id_at(mins(360), 6); // a running record names it, its pid alive
    fabricate(&sb, &mid, Some(&marker(PROJECT))).await?;
    fabricate(&sb, &old, Some(&marker(PROJECT))).await?;
    fabricate(&sb, &other, Some(&marker("/e2e/work/elsewhere"))).await?;
    fabricate(&sb, &no_marker, None).await?;
    fabricate(&sb, &bad_marker, Some("{not json")).await?;
    fabricate(&sb, &live_record, Some(&marker(PROJECT))).await?;
    // A running record (docs/records.md) naming it, whose process (PID 1) lives.
    let record = format!(
        r#"{{"session_id":"ses_live","pid":1,"start_time":null,"started_at":"2026-01-01T00:00:00.000Z","capsule":"local/coder","version":"0.1.0","door_url":null,"workdir":"/","records_dir":"/","formation_id":"{live_record}","formation_member":"ghost"}}"#
    );
    sb.sh(&format!(
        "mkdir -p /root/.murmur/running && chmod 700 /root/.murmur/running && printf '%s' '{record}' > /root/.murmur/running/ses_live.json"
    ))
    .await?
    .ok()?;

    // Launch 2: keeps itself and the running one; removes `mid` (3rd newest) and `old`.
    let before = listing(&sb).await?;
    let l2 = launch_once(&sb, "l2", members).await?;
    let second = newest(&before, &listing(&sb).await?)?;
    let lines = retention_lines(&sb, &l2).await;
    let want = vec![removed(&mid, "max_sessions"), removed(&old, "max_age")];
    let second_records = format!("{RECORDS}/{second}");
    let second_had_records = exists(&sb, &second_records).await?;
    ensure!(lines == want, "launch 2 printed {lines:#?}, not {want:#?}");

    // Launch 3: the running formation is now over max_sessions, and is kept.
    let before = listing(&sb).await?;
    let l3 = launch_once(&sb, "l3", members).await?;
    let third = newest(&before, &listing(&sb).await?)?;
    let lines = retention_lines(&sb, &l3).await;
    ensure!(lines.is_empty(), "launch 3 removed {lines:?}");

    // Launch 4: launch 2's directory goes (max_sessions); the running one stays.
    let before = listing(&sb).await?;
    let l4 = launch_once(&sb, "l4", members).await?;
    let fourth = newest(&before, &listing(&sb).await?)?;
    let lines = retention_lines(&sb, &l4).await;
    let want = vec![removed(&second, "max_sessions")];
    ensure!(lines == want, "launch 4 printed {lines:#?}, not {want:#?}");

    // The running launch ends: everything after it is protected from its own pass.
    formation::fault(&sb, "TERM", &l1.pid.to_string()).await?;
    l1.wait_exit(Duration::from_secs(40)).await?;
    let lines = retention_lines(&sb, &l1).await;
    ensure!(
        lines.is_empty(),
        "the first launch's pass removed {lines:?}"
    );

    let left = listing(&sb).await?;
    for kept in [
        &running,
        &third,
        &fourth,
        &other,
        &no_marker,
        &bad_marker,
        &live_record,
    ] {
        ensure!(left.contains(kept), "{kept} was removed; left: {left:?}");
    }
    for gone in [&mid, &old, &second] {
        ensure!(!left.contains(gone), "{gone} was kept; left: {left:?}");
    }
    for gone in [&mid, &old] {
        ensure!(
            !exists(&sb, &format!("{RECORDS}/{gone}")).await?,
            "the records of {gone} were kept"
        );
    }
    ensure!(
        exists(&sb, &format!("{RECORDS}/{other}")).await?,
        "another project's records were removed"
    );
    if members == Members::Real {
        ensure!(second_had_records, "launch 2's peer left no records");
        ensure!(
            !exists(&sb, &second_records).await?,
            "launch 2's peers' records were kept with its directory gone"
        );
    }
    Ok(Measured {
        teardown: None,
        note: "4 launches: max_sessions+max_age lines exact; running/other project/no or bad marker/live record kept".into(),
    })
}
