//! The confinement primitives (src/confine/) on real processes: the probe
//! (probe/, `mur-probe`) runs under a `Prepared` applied in `pre_exec` (test only: the
//! session applies it through the spawner), against a real egress proxy and a real
//! HTTP server on 127.0.0.1; then the same probe runs unconfined, and every denial
//! turns into a success, so each is the confinement's.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use mur::confine::{self, Inputs, Plan, proxy::Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The probe, built once from probe/ (its own workspace, std only).
pub(crate) fn probe() -> &'static Path {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let target = root.join("target").join("probe");
        let out = std::process::Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--manifest-path"])
            .arg(root.join("probe/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .output()
            .expect("cargo runs");
        assert!(
            out.status.success(),
            "cannot build the probe: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        target.join("debug/mur-probe")
    })
}

/// A name other than `localhost` that /etc/hosts maps to 127.0.0.1 (the host name in
/// most images). The rebinding check needs one; none is a failure, not a skip.
pub(crate) fn loopback_name() -> String {
    let hosts = std::fs::read_to_string("/etc/hosts").expect("/etc/hosts");
    hosts
        .lines()
        .filter_map(|l| {
            let mut w = l.split('#').next()?.split_whitespace();
            (w.next()? == "127.0.0.1").then(|| w.map(str::to_string).collect::<Vec<_>>())
        })
        .flatten()
        .find(|n| n != "localhost" && !n.contains("localhost"))
        .expect("/etc/hosts names no host other than localhost at 127.0.0.1")
}

/// A tiny HTTP server: every request gets `200 hello`.
async fn web() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = c
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                    )
                    .await;
            });
        }
    });
    port
}

struct Layout {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in [
            "home/.murmur/running",
            "home/ro",
            "work",
            "other",
            "session/home",
            "session/tmp",
            "capsule",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("home/.murmur/running/ses.token"), "secret").unwrap();
        std::fs::write(root.join("home/ro/data"), "read me").unwrap();
        std::fs::write(root.join("other/notes"), "theirs").unwrap();
        Layout { _dir: dir, root }
    }

    fn p(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    fn plan(&self, files: &mur::manifest::Files, network: Vec<String>) -> Result<Plan, String> {
        let (work, sh, st, cap, home, murmur) = (
            self.root.join("work"),
            self.root.join("session/home"),
            self.root.join("session/tmp"),
            self.root.join("capsule"),
            self.root.join("home"),
            self.root.join("home/.murmur"),
        );
        Plan::new(&Inputs {
            workdir: &work,
            session_dirs: vec![&sh, &st],
            capsule_read: vec![&cap, probe()],
            files,
            user_home: &home,
            murmur_home: &murmur,
            network,
        })
    }
}

/// Runs the probe with `checks`, confined by `prepared` when given; its stdout, and
/// whether every check passed.
#[allow(
    unsafe_code,
    reason = "a test-only pre_exec hook that applies the confinement"
)]
async fn run_probe(
    prepared: Option<Arc<confine::Prepared>>,
    proxy: &Proxy,
    cwd: &Path,
    checks: &[String],
) -> (bool, String) {
    let mut cmd = tokio::process::Command::new(probe());
    cmd.args(checks).current_dir(cwd).env_clear();
    for (k, v) in proxy.env() {
        cmd.env(k, v);
    }
    if let Some(p) = prepared {
        // SAFETY: apply_in_child makes raw system calls only (async-signal-safe).
        unsafe {
            cmd.pre_exec(move || confine::apply_in_child(&p).map_err(std::io::Error::from));
        }
    }
    let out = cmd.output().await.expect("the probe runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.code().is_some(),
        "the probe died: {:?}\n{stdout}",
        out.status
    );
    (out.status.success(), stdout)
}

#[tokio::test]
async fn every_denial_is_the_confinements_and_the_proxy_decides_and_records() {
    let l = Layout::new();
    let kernel = confine::net::Kernel::probe();
    assert_eq!(
        kernel.missing(),
        None,
        "this machine must confine (CI: Landlock ABI 7)"
    );
    let web = web().await;
    let rebound = loopback_name();
    let allow = vec!["127.0.0.1".to_string(), rebound.clone()];
    let files = mur::manifest::Files {
        read: vec!["~/ro".into()],
        write: vec![],
    };
    let plan = l.plan(&files, allow.clone()).unwrap();

    let trace_path = l.root.join("trace.jsonl");
    let trace = Arc::new(mur::trace::TraceWriter::create(&trace_path).unwrap());
    let sink_trace = trace.clone();
    let proxy = Proxy::start(
        plan.network.clone(),
        Arc::new(move |d: &confine::proxy::Decision| sink_trace.record(d.event())),
    )
    .await
    .unwrap();
    let prepared = Arc::new(plan.prepare(proxy.addr().port()).unwrap());

    let parent = std::process::id();
    // (check, confined, unconfined)
    let table: Vec<(String, &str, &str)> = vec![
        (
            format!("read:{}", l.p("home/.murmur/running/ses.token")),
            "EACCES",
            "ok",
        ),
        (format!("read:{}", l.p("other/notes")), "EACCES", "ok"),
        (format!("write:{}", l.p("other/mine")), "EACCES", "ok"),
        (format!("write:{}", l.p("home/outside")), "EACCES", "ok"),
        (format!("read:{}", l.p("home/ro/data")), "ok", "ok"),
        (format!("write:{}", l.p("home/ro/data")), "EACCES", "ok"),
        (format!("write:{}", l.p("work/out")), "ok", "ok"),
        (format!("write:{}", l.p("session/tmp/t")), "ok", "ok"),
        (format!("connect:127.0.0.1:{web}"), "EACCES", "ok"),
        ("udp:127.0.0.1:9".to_string(), "EPERM", "ok"),
        (format!("kill:{parent}"), "EPERM", "ok"),
        (format!("ptrace:{parent}"), "EPERM", "ok"),
        (format!("http:http://127.0.0.1:{web}/"), "200", "200"),
        (format!("tunnel:127.0.0.1:{web}"), "200", "200"),
        ("http:http://blocked.example/".to_string(), "403", "403"),
        ("tunnel:blocked.example:443".to_string(), "403", "403"),
        (format!("tunnel:{rebound}:{web}"), "403", "403"),
    ];
    let with = |confined: bool| -> Vec<String> {
        table
            .iter()
            .map(|t| format!("{}={}", t.0, if confined { t.1 } else { t.2 }))
            .collect()
    };
    let work = l.root.join("work");
    let (ok, out) = run_probe(Some(prepared.clone()), &proxy, &work, &with(true)).await;
    assert!(ok, "confined probe:\n{out}");
    assert!(
        out.contains("blocked.example:80 is not in capabilities.network.allow"),
        "the 403 names the reason:\n{out}"
    );
    assert!(
        out.contains(&format!(
            "{rebound} resolves to 127.0.0.1, a loopback address"
        )),
        "{out}"
    );
    let (ok, out) = run_probe(None, &proxy, &work, &with(false)).await;
    assert!(ok, "unconfined probe:\n{out}");

    // Each decision is a trace record; the refusals say why.
    let text = std::fs::read_to_string(&trace_path).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r["type"] == "proxy_decision")
        .collect();
    let find = |host: &str, port: u16, method: &str| {
        records
            .iter()
            .find(|r| r["host"] == host && r["port"] == port && r["method"] == method)
            .unwrap_or_else(|| panic!("no record of {method} {host}:{port} in\n{text}"))
            .clone()
    };
    let refused = find("blocked.example", 443, "CONNECT");
    assert_eq!(refused["allowed"], false);
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .contains("not in capabilities.network.allow (127.0.0.1, "),
        "{refused}"
    );
    let allowed = find("127.0.0.1", web, "GET");
    assert_eq!(allowed["allowed"], true);
    assert_eq!(
        allowed["reason"],
        format!("allowed, connected to 127.0.0.1:{web}")
    );
    assert_eq!(find(&rebound, web, "CONNECT")["allowed"], false);
}

#[test]
fn a_grant_that_would_expose_murs_folder_is_refused() {
    let l = Layout::new();
    for grant in ["~", "~/.murmur", "~/.murmur/running"] {
        let files = mur::manifest::Files {
            read: vec![grant.into()],
            write: vec![],
        };
        let err = l.plan(&files, vec![]).unwrap_err();
        assert!(err.contains("would expose mur's folder"), "{grant}: {err}");
    }
    let files = mur::manifest::Files {
        read: vec!["missing".into()],
        write: vec![],
    };
    let err = l.plan(&files, vec![]).unwrap_err();
    assert!(err.contains("capabilities.files grant `missing`"), "{err}");
}

/// A native capsule (a one-line process harness) in the world's project folder.
fn native_capsule(w: &crate::support::World) {
    std::fs::write(
        w.proj.join("murmur.yaml"),
        "name: native\nversion: 0.1.0\ndescription: x\nagent:\n  transport: process\n  command: [\"sh\", \"-c\", \"read -r t; echo '{\\\"type\\\":\\\"message\\\",\\\"text\\\":\\\"done\\\"}'\"]\n",
    )
    .unwrap();
}

#[test]
fn a_kernel_without_landlock_refuses_a_native_capsule_unless_opted_out() {
    let w = crate::support::World::new();
    native_capsule(&w);
    let out = w
        .mur()
        .args(["run", "--task", "go"])
        .env("MUR_TEST_LANDLOCK_ABI", "0")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("E-RUN-054"), "{err}");
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(
        err.contains(&format!(
            "native starts a `transport: process` harness, and this kernel cannot confine them: it lacks Landlock (kernel {} has it disabled",
            kernel.trim()
        )),
        "{err}"
    );
    assert!(
        err.contains("--unconfined"),
        "the hint names the opt-out: {err}"
    );

    for (args, env, how) in [
        (&["--unconfined"][..], None, "--unconfined"),
        (
            &[][..],
            Some(("MURMUR_UNCONFINED", "1")),
            "MURMUR_UNCONFINED=1",
        ),
    ] {
        let mut cmd = w.mur();
        cmd.args(["run", "--task", "go"])
            .args(args)
            .env("MUR_TEST_LANDLOCK_ABI", "0");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{how}: {err}");
        assert_eq!(err.matches("W-RUN-011").count(), 1, "printed once: {err}");
        assert!(
            err.contains(&format!(
                "native starts a `transport: process` harness; {how}: they run unconfined"
            )),
            "{err}"
        );
        let trace = crate::support::files_under(&w.home.join(".murmur/records"))
            .into_iter()
            .filter(|f| f.file_name().is_some_and(|n| n == "trace.jsonl"))
            .map(|f| std::fs::read_to_string(f).unwrap())
            .find(|t| t.contains(&format!("\"unconfined\":\"{how}\"")));
        assert!(trace.is_some(), "session_start records {how}");
    }
}

/// The same confinement through the one spawner (`Spawn::confine`), whose child side
/// applies it last before execve: the path the harness and shell commands take.
#[tokio::test]
async fn the_spawner_applies_the_confinement_in_its_child_side() {
    let l = Layout::new();
    let web = web().await;
    let plan = l
        .plan(&mur::manifest::Files::default(), vec!["127.0.0.1".into()])
        .unwrap();
    let proxy = Proxy::start(
        plan.network.clone(),
        Arc::new(|_: &confine::proxy::Decision| {}),
    )
    .await
    .unwrap();
    let prepared = Arc::new(plan.prepare(proxy.addr().port()).unwrap());
    let parent = std::process::id();
    let checks = [
        format!("read:{}=EACCES", l.p("home/.murmur/running/ses.token")),
        format!("write:{}=EACCES", l.p("other/mine")),
        format!("write:{}=ok", l.p("work/out")),
        format!("connect:127.0.0.1:{web}=EACCES"),
        "udp:127.0.0.1:9=EPERM".to_string(),
        format!("kill:{parent}=EPERM"),
        format!("ptrace:{parent}=EPERM"),
        format!("tunnel:127.0.0.1:{web}=200"),
        "tunnel:blocked.example:443=403".to_string(),
    ];
    let mut spawn = mur::spawn::Spawn::new(probe());
    spawn
        .args(&checks)
        .env_clear()
        .envs(proxy.env())
        .current_dir(l.root.join("work"))
        .confine(prepared);
    let mut child = spawn.spawn(None).expect("the probe starts");
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{status:?}\n{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("PASS")).count(),
        checks.len(),
        "{out}"
    );
}

/// Runs `sh -c "<probe> checks…"` through the spawner, confined by `prepared`: the
/// probe is a process the confined child starts. Its stdout and status.
async fn spawn_probe_under_sh(
    prepared: Arc<confine::Prepared>,
    proxy: &Proxy,
    cwd: &Path,
    checks: &[String],
) -> (bool, String) {
    let mut script = format!("{}", probe().display());
    for c in checks {
        script.push_str(&format!(" '{c}'"));
    }
    let mut spawn = mur::spawn::Spawn::new("/bin/sh");
    spawn
        .args(["-c", &script])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(proxy.env())
        .current_dir(cwd)
        .confine(prepared);
    let mut child = spawn.spawn(None).expect("sh starts");
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    (child.wait().await.unwrap().success(), out)
}

/// The two network tiers on one machine. Tier `netns`: a direct connect reaches
/// nothing of the host's, not even a listener on the proxy's port number at another
/// host address (Landlock alone lets that through: shown under tier `landlock`), and
/// a public address has no route; the proxy still serves, UDP is still refused, the
/// files are still Landlock's.
#[tokio::test]
async fn tier_netns_closes_the_port_only_gap_that_tier_landlock_leaves() {
    use confine::net::{Kernel, Tier};
    let kernel = Kernel::probe();
    assert_eq!(
        kernel.tier(),
        Some(Tier::Netns),
        "this machine (and CI) makes unprivileged namespaces: {:?}",
        kernel.netns
    );
    let l = Layout::new();
    let web = web().await;
    let plan = l
        .plan(&mur::manifest::Files::default(), vec!["127.0.0.1".into()])
        .unwrap();
    let proxy = Proxy::start(
        plan.network.clone(),
        Arc::new(|_: &confine::proxy::Decision| {}),
    )
    .await
    .unwrap();
    let port = proxy.addr().port();
    // A host listener on the proxy's port number, at another loopback address.
    let gap = std::net::TcpListener::bind(("127.0.0.2", port)).expect("bind 127.0.0.2");
    let common = |gap_expect: &str| {
        vec![
            format!("read:{}=EACCES", l.p("home/.murmur/running/ses.token")),
            format!("write:{}=ok", l.p("work/out")),
            format!("connect:127.0.0.1:{web}=EACCES"),
            format!("connect:127.0.0.2:{port}={gap_expect}"),
            "udp:127.0.0.1:9=EPERM".to_string(),
            format!("http:http://127.0.0.1:{web}/=200"),
            format!("tunnel:127.0.0.1:{web}=200"),
            "tunnel:blocked.example:443=403".to_string(),
        ]
    };
    let work = l.root.join("work");

    let netns = Arc::new(plan.prepare_for(&proxy, Tier::Netns).unwrap());
    assert_eq!(netns.tier(), Tier::Netns);
    let mut checks = common("ECONNREFUSED");
    checks.push(format!("connect:192.0.2.1:{port}=ENETUNREACH"));
    let (ok, out) = spawn_probe_under_sh(netns.clone(), &proxy, &work, &checks).await;
    assert!(ok, "tier netns:\n{out}");
    // A second tree gets a namespace (and a listener) of its own.
    let (ok, out) = spawn_probe_under_sh(netns, &proxy, &work, &checks[..3]).await;
    assert!(ok, "tier netns, again:\n{out}");

    let landlock = Arc::new(plan.prepare_for(&proxy, Tier::Landlock).unwrap());
    assert_eq!(landlock.tier(), Tier::Landlock);
    let (ok, out) = spawn_probe_under_sh(landlock, &proxy, &work, &common("ok")).await;
    assert!(ok, "tier landlock (the port-only gap is open):\n{out}");
    drop(gap);
}
