//! A real member's native harness, confined in the tier a container gets: the peer
//! `prober` (docker/e2e/capsules/prober) runs the probe (probe/, `mur-probe`) on a
//! task and tries the escapes of docs/confinement.md: another session's operator
//! token under `~/.murmur/running`, the project's roster, another member's door. Each
//! is denied with its exact error; then the same probe run from outside, unconfined,
//! succeeds at each, so every denial is the confinement's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use tokio::process::Command;

use crate::container::{Config, Sandbox};
use crate::formation::fault;
use crate::report::Measured;
use crate::scenarios::real::start;

/// Where the scenario puts the probe in the container: the capsule grants it read.
const PROBE_IN: &str = "/e2e/bin/mur-probe";

/// The probe, built once per run, static for musl (its own workspace, std only).
async fn probe() -> Result<&'static Path> {
    static BUILT: tokio::sync::OnceCell<PathBuf> = tokio::sync::OnceCell::const_new();
    BUILT
        .get_or_try_init(|| async {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            let target = root.join("target/probe-musl");
            let out = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--release"])
                .args(["--target", "x86_64-unknown-linux-musl", "--manifest-path"])
                .arg(root.join("probe/Cargo.toml"))
                .arg("--target-dir")
                .arg(&target)
                .output()
                .await?;
            ensure!(
                out.status.success(),
                "cannot build the probe: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Ok(target.join("x86_64-unknown-linux-musl/release/mur-probe"))
        })
        .await
        .map(PathBuf::as_path)
}

/// `(session id, door port)` of the running member `member`, from its running record.
async fn running(sb: &Sandbox, member: &str) -> Result<(String, u16)> {
    let out = sb
        .sh(&format!(
            "rec=$(grep -l '\"formation_member\": *\"{member}\"' /root/.murmur/running/*.json | head -n 1) && echo \"$rec\" && sed -n 's/.*\"door_url\": *\"[^\"]*:\\([0-9]*\\)\\/*\".*/\\1/p' \"$rec\""
        ))
        .await?
        .ok()?;
    let mut lines = out.stdout.lines();
    let rec = lines.next().context("no running record")?;
    let session = Path::new(rec)
        .file_stem()
        .and_then(|s| s.to_str())
        .context("a running record's name")?
        .to_string();
    let port = lines
        .next()
        .context("no door_url in the running record")?
        .trim()
        .parse()?;
    Ok((session, port))
}

pub async fn confined_peer() -> Result<Measured> {
    let probe = probe().await?;
    let sb = Sandbox::start("real-confined-peer", Config::default()).await?;
    let copied = Command::new("docker")
        .arg("cp")
        .arg(probe)
        .arg(format!("{}:{PROBE_IN}", sb.id()))
        .output()
        .await?;
    ensure!(
        copied.status.success(),
        "docker cp of the probe: {}",
        String::from_utf8_lossy(&copied.stderr)
    );
    let f = start(sb, "confined", &[], &[], &["lead", "coder", "prober"], &[]).await?;
    // Docker 20.10's default seccomp profile allows Landlock and refuses unshare.
    let said = "[prober] warning[W-RUN-010]: local/prober starts a `transport: process` harness, confined: files deny by default, the network only through mur's egress proxy; tier landlock (tier netns is not available";
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let stderr = f.launch.stderr(&f.sb).await;
        if stderr.contains(said) {
            break;
        }
        ensure!(
            tokio::time::Instant::now() < until,
            "the launcher did not say {said:?}: {stderr}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let (session, port) = running(&f.sb, "coder").await?;
    let token = format!("/root/.murmur/running/{session}.token");
    let roster = "/e2e/work/confined/roster.yaml";
    let before = crate::formation::read(&f.sb, roster).await?;
    let escapes = [
        format!("read:{token}"),
        format!("write:{roster}"),
        format!("connect:127.0.0.1:{port}"),
        format!("kill:{}", f.launch.pid),
    ];
    // Landlock's file and TCP rules refuse with EACCES; its signal scope with EPERM.
    let denied = ["EACCES", "EACCES", "EACCES", "EPERM"];
    let checks = |expect: Option<&str>| {
        escapes
            .iter()
            .zip(denied)
            .map(|(c, d)| format!("{c}={}", expect.unwrap_or(d)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    f.sb.exec(
        vec![
            "/e2e/bin/send-task".into(),
            "prober".into(),
            format!("probe: {} :end", checks(None)),
        ],
        &[],
    )
    .await?
    .ok()?;
    let rc_at = "find /root/.murmur -name probe.rc";
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    let rc = loop {
        let found = f.sb.sh(rc_at).await?.stdout;
        if let Some(path) = found.lines().next() {
            break path.to_string();
        }
        ensure!(
            tokio::time::Instant::now() < until,
            "the prober never ran the probe; launcher stderr: {}",
            f.launch.stderr(&f.sb).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let out_at = rc.replace("probe.rc", "probe.out");
    let out = crate::formation::read(&f.sb, &out_at)
        .await?
        .unwrap_or_default();
    let code = crate::formation::wait_file(&f.sb, &rc, Duration::from_secs(5)).await?;
    ensure!(code.trim() == "0", "the confined probe:\n{out}");
    let passed = out.lines().filter(|l| l.starts_with("PASS ")).count();
    ensure!(passed == escapes.len() + 1, "the confined probe:\n{out}");
    let after = crate::formation::read(&f.sb, roster).await?;
    ensure!(before == after, "the roster changed: {after:?}");

    // The same escapes from outside the confinement succeed: the denials were its.
    let mut cmd = vec![PROBE_IN.to_string()];
    cmd.extend(checks(Some("ok")).split(' ').map(String::from));
    let control = f.sb.exec(cmd, &[]).await?;
    ensure!(
        control.code == 0,
        "unconfined, the probe:\n{}",
        control.stdout
    );

    let at = fault(&f.sb, "TERM", &f.launch.pid.to_string()).await?;
    let gone = f.gone(at).await?;
    Ok(Measured {
        teardown: Some(gone),
        note: format!(
            "tier landlock; peer's harness denied {}, allowed its work folder; the same probe unconfined ok at each",
            checks(None).replace(' ', ", ")
        ),
    })
}
