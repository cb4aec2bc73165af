//! The probe (probe/, `mur-probe`) as a real `transport: process` harness and as a
//! real `shell` command of a real session, beside a second live session (the "other
//! member": its work folder, its door, its token): every denial with its exact error,
//! the proxy's answers and records; then the same session `--unconfined`, where each
//! denial turns into a success, so each is the confinement's (docs/confinement.md).

use std::io::{BufRead, Read, Write};
use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use crate::support::{self, KillOnDrop, World};

/// A tiny HTTP server on a thread: every request gets `200 hello`.
fn web() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                );
            });
        }
    });
    port
}

/// The other session: a built-in capsule serving in `peer/`, until dropped. Its
/// session id and door port.
fn peer(w: &World) -> (KillOnDrop, String, u16) {
    let dir = w.path("peer");
    support::write_capsule(&dir, "peer", "0.1.0");
    std::fs::write(dir.join("notes"), "theirs").unwrap();
    let child = w
        .mur_in(&dir)
        .args(["run", "--json"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop::pid(child);
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let ready: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first:?}"));
    let session = ready["session_id"].as_str().unwrap().to_string();
    let url = ready["door"].as_str().unwrap_or_else(|| panic!("{ready}"));
    let port = url.rsplit(':').next().unwrap().trim_end_matches('/');
    (child, session, port.parse().unwrap())
}

/// (check, confined, unconfined). The proxy's checks run confined only: an
/// unconfined session has no proxy, and connects directly instead.
fn table(w: &World, peer_session: &str, peer_port: u16, web: u16) -> Vec<(String, &'static str)> {
    let p = |rel: &str| w.path(rel).display().to_string();
    let token = w
        .home
        .join(format!(".murmur/running/{peer_session}.token"))
        .display()
        .to_string();
    vec![
        (format!("read:{token}"), "EACCES"),
        (format!("read:{}", p("peer/notes")), "EACCES"),
        (format!("write:{}", p("peer/mine")), "EACCES"),
        (format!("write:{}", p("outside")), "EACCES"),
        // A forged approval for the next launch (docs/approval.md).
        (
            format!(
                "write:{}",
                w.home.join(".murmur/approvals/forged.json").display()
            ),
            "EACCES",
        ),
        (format!("read:{}", p("ro/data")), "ok"),
        (format!("write:{}", p("ro/data")), "EACCES"),
        (format!("write:{}", w.proj.join("mine").display()), "ok"),
        (format!("connect:127.0.0.1:{peer_port}"), "EACCES"),
        (format!("connect:127.0.0.1:{web}"), "EACCES"),
        ("udp:127.0.0.1:9".to_string(), "EPERM"),
        // $PPID: the mur session that started the harness (and the shell's sh).
        ("kill:$PPID".to_string(), "EPERM"),
        ("ptrace:$PPID".to_string(), "EPERM"),
        (format!("kill:{}", std::process::id()), "EPERM"),
    ]
}

fn proxied(web: u16, rebound: &str) -> Vec<String> {
    vec![
        format!("http:http://127.0.0.1:{web}/=200"),
        format!("tunnel:127.0.0.1:{web}=200"),
        "http:http://blocked.example/=403".to_string(),
        "tunnel:blocked.example:443=403".to_string(),
        format!("tunnel:{rebound}:{web}=403"),
    ]
}

/// The probe capsule in the world's project: its harness runs the probe with `checks`,
/// then asks for one shell call that runs it again; each run's output and status land
/// in the work folder.
fn capsule(w: &World, rebound: &str, checks: &[String]) {
    std::fs::copy(crate::confine::probe(), w.proj.join("mur-probe")).unwrap();
    let manifest = format!(
        "name: probe\nversion: 0.1.0\ndescription: x\nagent:\n  transport: process\n  command: [\"sh\", \"harness.sh\"]\ncapabilities:\n  shell: {{}}\n  files:\n    read: [\"{}\"]\n  network:\n    allow: [\"127.0.0.1\", \"{rebound}\"]\n",
        w.path("ro").display()
    );
    std::fs::write(w.proj.join("murmur.yaml"), manifest).unwrap();
    let checks = checks.join(" ");
    let harness = format!(
        "IFS= read -r task\n./mur-probe {checks} > harness.out 2>&1; echo $? > harness.rc\necho '{{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"shell\",\"arguments\":{{\"command\":\"./mur-probe {checks} > shell.out 2>&1; echo $? > shell.rc\"}}}}'\nIFS= read -r result\necho '{{\"type\":\"message\",\"text\":\"done\"}}'\n"
    );
    std::fs::write(w.proj.join("harness.sh"), harness).unwrap();
    std::fs::set_permissions(
        w.proj.join("harness.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
}

fn world() -> World {
    let w = World::new();
    std::fs::create_dir_all(w.path("ro")).unwrap();
    std::fs::write(w.path("ro/data"), "read me").unwrap();
    w
}

/// Each run of the probe (harness, shell): its output, asserted to have passed all
/// `count` checks.
fn outputs(w: &World, count: usize, stderr: &str) -> Vec<String> {
    ["harness", "shell"]
        .iter()
        .map(|who| {
            let rc = std::fs::read_to_string(w.proj.join(format!("{who}.rc")))
                .unwrap_or_else(|e| panic!("the {who} probe did not run ({e}):\n{stderr}"));
            let out = std::fs::read_to_string(w.proj.join(format!("{who}.out"))).unwrap();
            assert_eq!(rc.trim(), "0", "the {who} probe:\n{out}\n{stderr}");
            assert_eq!(
                out.lines().filter(|l| l.starts_with("PASS")).count(),
                count,
                "{who}:\n{out}"
            );
            out
        })
        .collect()
}

fn trace(w: &World) -> Vec<Value> {
    let path = support::files_under(&w.home.join(".murmur/records"))
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "trace.jsonl"))
        .find(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .contains("\"name\":\"probe\"")
        })
        .expect("the probe session's trace");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The start line: W-RUN-010 names the tier this session got.
fn tier_said(stderr: &str, tier: &str) {
    assert_eq!(
        stderr.matches("W-RUN-010").count(),
        1,
        "said once: {stderr}"
    );
    assert!(
        stderr.contains(&format!("probe starts a `transport: process` harness and shell commands, confined: files deny by default, the network only through mur's egress proxy; tier {tier}")),
        "{stderr}"
    );
}

/// In each network tier (`MUR_TEST_CONFINE_TIER=landlock` forces the second on a
/// machine that has both).
#[rstest::rstest]
fn the_harness_and_its_shell_commands_are_confined_for_the_whole_session(
    #[values(None, Some("landlock"))] forced: Option<&str>,
) {
    let kernel = mur::confine::net::Kernel::probe();
    assert_eq!(kernel.missing(), None, "this machine must confine");
    let w = world();
    let (_peer, peer_session, peer_port) = peer(&w);
    let web = web();
    let rebound = crate::confine::loopback_name();
    let mut checks: Vec<String> = table(&w, &peer_session, peer_port, web)
        .into_iter()
        .map(|(c, e)| format!("{c}={e}"))
        .collect();
    checks.extend(proxied(web, &rebound));
    capsule(&w, &rebound, &checks);
    let mut run = w.mur();
    run.args(["run", "--task", "go"]);
    if let Some(tier) = forced {
        run.env("MUR_TEST_CONFINE_TIER", tier);
    }
    let out = run.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let tier = match (forced, kernel.netns.is_ok()) {
        (None, true) => "netns;",
        _ => "landlock",
    };
    tier_said(&stderr, tier);
    for out in outputs(&w, checks.len(), &stderr) {
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
    }
    assert!(!w.path("outside").exists() && !w.path("peer/mine").exists());
    assert_eq!(
        std::fs::read_to_string(w.path("ro/data")).unwrap(),
        "read me"
    );

    let records = trace(&w);
    assert!(records[0]["unconfined"].is_null(), "{}", records[0]);
    let decisions: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "proxy_decision")
        .collect();
    // Each proxied check, from the harness and from the shell command.
    let find = |host: &str, port: u16, method: &str| {
        let found: Vec<&&Value> = decisions
            .iter()
            .filter(|r| r["host"] == host && r["port"] == port && r["method"] == method)
            .collect();
        assert_eq!(found.len(), 2, "{method} {host}:{port} in {decisions:?}");
        (*found[0]).clone()
    };
    let refused = find("blocked.example", 443, "CONNECT");
    assert_eq!(refused["allowed"], false);
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .contains("blocked.example:443 is not in capabilities.network.allow (127.0.0.1, "),
        "{refused}"
    );
    let allowed = find("127.0.0.1", web, "GET");
    assert_eq!(allowed["allowed"], true);
    assert_eq!(
        allowed["reason"],
        format!("allowed, connected to 127.0.0.1:{web}")
    );
    assert_eq!(find(&rebound, web, "CONNECT")["allowed"], false);
    assert_eq!(find("127.0.0.1", web, "CONNECT")["allowed"], true);
}

#[test]
fn the_same_session_unconfined_succeeds_at_each_and_records_the_opt_out() {
    let w = world();
    let (_peer, peer_session, peer_port) = peer(&w);
    let web = web();
    let rebound = crate::confine::loopback_name();
    let checks: Vec<String> = table(&w, &peer_session, peer_port, web)
        .into_iter()
        .map(|(c, _)| format!("{c}=ok"))
        .collect();
    capsule(&w, &rebound, &checks);
    let out = w
        .mur()
        .args(["run", "--unconfined", "--task", "go"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("W-RUN-011").count(), 1, "{stderr}");
    assert!(!stderr.contains("W-RUN-010"), "{stderr}");
    outputs(&w, checks.len(), &stderr);
    let records = trace(&w);
    assert_eq!(records[0]["unconfined"], "--unconfined", "{}", records[0]);
    assert!(!records.iter().any(|r| r["type"] == "proxy_decision"));
}

/// `mur new --roster team` with `helper` on a native harness that runs the probe and
/// answers with its verdict: a formation peer works in its own folder under
/// `~/.murmur/formations/`, and cannot write the project's roster, lock or store, nor
/// the approvals. `unconfined`: the launch has `MURMUR_UNCONFINED=1`, and each check
/// is a success instead. The helper's answer is the launch's stdout.
fn peer_probe(unconfined: bool) -> (String, String) {
    let w = World::new();
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ok(w.mur().args(["new", "--roster", "team"]).output().unwrap());
    let project = w.proj.join("team");
    // The probe, where the helper's manifest grants it read (and execute).
    let bin = w.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(crate::confine::probe(), bin.join("mur-probe")).unwrap();
    let expect = if unconfined { "ok" } else { "EACCES" };
    let mut checks: Vec<String> = [
        project.join("roster.yaml"),
        project.join("murmur.lock"),
        project.join(".murmur/artifacts/planted.mur.zip"),
        w.home.join(".murmur/approvals/forged.json"),
    ]
    .iter()
    .map(|p| format!("write:{}={expect}", p.display()))
    .collect();
    checks.push("write:$MURMUR_WORKDIR/mine=ok".into());
    let helper = project.join("helper");
    let manifest = std::fs::read_to_string(helper.join("murmur.yaml"))
        .unwrap()
        .replace(
            "transport: builtin",
            "transport: process\n  command: [\"sh\", \"harness.sh\"]",
        )
        + &format!(
            "capabilities:\n  files:\n    read: [\"{}\"]\n",
            bin.display()
        );
    std::fs::write(helper.join("murmur.yaml"), manifest).unwrap();
    std::fs::write(
        helper.join("harness.sh"),
        format!(
            "IFS= read -r task\n{probe} {checks} > \"$MURMUR_WORKDIR/probe.out\" 2>&1\nrc=$?\nfails=$(grep -v ^PASS \"$MURMUR_WORKDIR/probe.out\" | tr -d '\"\\\\' | tr '\\n' ' ')\necho \"{{\\\"type\\\":\\\"message\\\",\\\"text\\\":\\\"probe rc=$rc pass=$(grep -c ^PASS \"$MURMUR_WORKDIR/probe.out\") $fails\\\"}}\"\n",
            probe = bin.join("mur-probe").display(),
            checks = checks.join(" ")
        ),
    )
    .unwrap();
    ok(w.mur_in(&project)
        .args(["install", "lead", "helper"])
        .output()
        .unwrap());
    let mut run = w.mur_in(&project);
    run.args(["run", "--roster", "--task", "Probe."]);
    if unconfined {
        run.env("MURMUR_UNCONFINED", "1");
    }
    let out = run.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let verdict = format!("> probe rc=0 pass={}", checks.len());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.lines().any(|l| l.trim_end() == verdict),
        "{stdout}\n{stderr}"
    );
    // The roster itself: untouched confined, the probe's unconfined.
    let roster = std::fs::read_to_string(project.join("roster.yaml")).unwrap();
    assert_eq!(roster == "mur-probe\n", unconfined, "{roster}");
    (stdout, stderr)
}

#[test]
fn a_formation_peer_cannot_write_the_project_s_roster_lock_store_or_approvals() {
    let (_, stderr) = peer_probe(false);
    assert!(
        stderr.contains("[helper] warning[W-RUN-010]: local/team-helper starts a `transport: process` harness, confined"),
        "{stderr}"
    );
}

#[test]
fn the_same_peer_unconfined_writes_each() {
    let (_, stderr) = peer_probe(true);
    assert!(stderr.contains("W-RUN-011"), "{stderr}");
    assert!(!stderr.contains("W-RUN-010"), "{stderr}");
}
