//! The host's tools (goals: a shell call under 5 ms; a process-harness task start
//! within 10 ms of an unconfined one; a delegation round trip under 50 ms).
//!
//! `cargo bench --bench host` (MUR_BENCH_ITERS sets the shell and harness iterations,
//! default 500; a fifth of them, at least 20, are delegations). The shell call and the
//! harness start are measured unconfined and confined in each tier this kernel gives
//! (`netns`, `landlock`). A shell call is
//! `shell::run` of `true`, from spawn to result. A harness task start is a
//! `transport: process` harness (`/bin/sh` answering one line) from spawn to its
//! first reply. A delegation round trip is `Delegations::delegate` of
//! an installed capsule on the built-in model, from the child's start until
//! `Delegations::wait_all` holds its result: the child is the real `mur run`, with
//! its door, records and trace.

// A bench is a program that prints its figures; it uses some of the dev-dependencies.
#![allow(
    unused_crate_dependencies,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]
// It points HOME at a temporary folder with `set_var` before any thread starts.
#![allow(unsafe_code, reason = "std::env::set_var is unsafe in edition 2024")]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mur::delegation::{DelegationConfig, Delegations};
use mur::shell::{self, ShellConfig};
use tokio_util::sync::CancellationToken;

use mur_test::clean;
use mur_test::measure;

fn main() {
    let iters: usize = measure::knob("MUR_BENCH_ITERS", 500, 5);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, proj) = (root.join("home"), root.join("proj"));
    std::fs::create_dir_all(&home).unwrap();
    // SAFETY: no other thread runs yet; the children read HOME from this process.
    unsafe { std::env::set_var("HOME", &home) };
    install_kid(&root, &proj);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Unconfined (the opt-out), then confined in each tier this kernel gives; the
        // work folder beside HOME, never holding it (E-RUN-055).
        let work = root.join("work");
        std::fs::create_dir_all(&work).unwrap();
        let kernel = mur::confine::net::Kernel::probe();
        let mut tiers = vec![("unconfined", None)];
        if kernel.missing().is_none() {
            use mur::confine::net::Tier;
            if kernel.netns.is_ok() {
                tiers.push(("netns", Some(confined(&root, &work, Tier::Netns).await)));
            }
            tiers.push((
                "landlock",
                Some(confined(&root, &work, Tier::Landlock).await),
            ));
        }
        for (tier, confine) in &tiers {
            let calls = shell_calls(&work, iters, confine.clone()).await;
            measure::summary(
                "host",
                "shell_call",
                serde_json::json!({ "tier": tier }),
                &format!("shell call (`true`, spawn to result), {tier}"),
                &calls,
            );
            let starts = harness_starts(&work, iters, confine.clone()).await;
            measure::summary(
                "host",
                "harness_start",
                serde_json::json!({ "tier": tier }),
                &format!("process-harness task start (spawn to first reply), {tier}"),
                &starts,
            );
        }
        let trips = delegations(&root, &proj, (iters / 5).max(measure::sized(20, 2))).await;
        measure::summary(
            "host",
            "delegation",
            serde_json::json!({}),
            "delegation round trip (child start to result, builtin model)",
            &trips,
        );
    });
}

fn install_kid(root: &Path, proj: &Path) {
    let src = root.join("kid");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(proj).unwrap();
    std::fs::write(
        src.join("murmur.yaml"),
        "name: kid\nversion: 1.0.0\ndescription: x\nagent:\n  transport: builtin\n",
    )
    .unwrap();
    let out = clean::clean_mur()
        .arg("install")
        .arg(&src)
        .current_dir(proj)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A session's confinement with `work` as its work folder and `root/home` as HOME, in
/// `tier` (the proxy allows nothing: the benches make no connection).
async fn confined(
    root: &Path,
    work: &Path,
    tier: mur::confine::net::Tier,
) -> mur::confine::Confined {
    let files = mur::manifest::Files::default();
    let murmur = root.join("home/.murmur");
    std::fs::create_dir_all(&murmur).unwrap();
    let inputs = mur::confine::Inputs {
        workdir: work,
        session_dirs: vec![],
        capsule_read: vec![],
        files: &files,
        user_home: &root.join("home"),
        murmur_home: &murmur,
        network: vec![],
    };
    let plan = mur::confine::Plan::new(&inputs).unwrap();
    mur::confine::Confined::start(&plan, Arc::new(|_| {}), tier)
        .await
        .unwrap()
}

async fn shell_calls(
    root: &Path,
    iters: usize,
    confine: Option<mur::confine::Confined>,
) -> Vec<Duration> {
    let config = ShellConfig {
        workdir: root.to_path_buf(),
        env: vec![("HOME".into(), root.display().to_string())],
        confine,
    };
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let start = Instant::now();
        let ran = shell::run(&config, "true", shell::DEFAULT_TIMEOUT)
            .await
            .unwrap();
        samples.push(start.elapsed());
        assert_eq!(ran.exit_code, Some(0));
    }
    samples
}

async fn harness_starts(
    root: &Path,
    iters: usize,
    confine: Option<mur::confine::Confined>,
) -> Vec<Duration> {
    use mur::agent::{Conversation, Message, ProcessConfig, Reply, Transport};
    let config = ProcessConfig {
        command: vec![
            "/bin/sh".into(),
            "-c".into(),
            r#"read l; echo '{"type":"result","text":"ok"}'; read l"#.into(),
        ],
        cwd: root.to_path_buf(),
        env: vec![("HOME".into(), root.display().to_string())],
        stderr: None,
        confine,
    };
    let conversation = Conversation {
        task_id: "t1".into(),
        system: String::new(),
        tools: Vec::new(),
        messages: vec![Message::User { text: "go".into() }],
    };
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let start = Instant::now();
        let mut t = mur::agent::process::ProcessTransport::new(config.clone()).unwrap();
        let reply = t.turn(&conversation).await.unwrap();
        samples.push(start.elapsed());
        assert!(matches!(reply, Reply::Answer { .. }), "{reply:?}");
        t.shutdown().await;
    }
    samples
}

async fn delegations(root: &Path, proj: &Path, iters: usize) -> Vec<Duration> {
    let (logs, runtime) = (root.join("logs"), root.join("runtime"));
    std::fs::create_dir_all(&logs).unwrap();
    let config = Arc::new(DelegationConfig {
        program: clean::mur_bin().into(),
        project_dir: proj.to_path_buf(),
        allow: vec!["local/*".into()],
        formation_id: None,
        logs,
        runtime,
        tree: Arc::new(
            mur::delegation::tree::Tree::new(None, mur::delegation::tree::Asked::default())
                .unwrap(),
        ),
        env: mur::grant::mur_vars(),
    });
    let cancel = CancellationToken::new();
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let d = Delegations::new(config.clone(), None);
        let start = Instant::now();
        let out = d.delegate("c1", "local/kid", "1.0.0", "Say hello.").await;
        assert!(!out.is_error, "{}", out.output);
        let answers = d.wait_all(&cancel).await;
        samples.push(start.elapsed());
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].state, "completed", "{}", answers[0].text);
    }
    samples
}
