//! Pods as a kubelet runs them: the container's command, args, working folder and env
//! are the ones `mur kube job` writes, mur is PID 1 (no tini, no `--init`), the root
//! is read only, HOME is a volume (the records outlive the container), and the pod's
//! end is `docker stop -t 30` (SIGTERM, SIGKILL 30 s later) or `docker kill`.
//!
//! The image `mur-e2e-kube:local` is the e2e image with the projects installed and
//! `ENTRYPOINT ["/bin/mur"]`, built here from `mur-e2e:local`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;
use tokio::process::Command;

use crate::report::Measured;

const IMAGE: &str = "mur-e2e-kube:local";
const DOCKERFILE: &str = r#"FROM mur-e2e:local
RUN ["/bin/sh", "-c", "/e2e/bin/setup busy busy && /e2e/bin/setup trio trio && cp -a /e2e/work/busy /project && cp -a /e2e/work/trio /project-trio && /e2e/bin/setup orphans orphans && cp -a /e2e/work/orphans /project-orphans"]
ENTRYPOINT ["/bin/mur"]
CMD []
"#;

async fn docker(args: &[&str]) -> Result<String> {
    let out = Command::new("docker").args(args).output().await?;
    ensure!(
        out.status.success(),
        "docker {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Builds the image once per run (every scenario asks; docker caches the layers).
async fn image() -> Result<()> {
    static BUILT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    BUILT
        .get_or_try_init(|| async {
            let mut child = Command::new("docker")
                .args(["build", "-q", "-t", IMAGE, "-"])
                .env("DOCKER_BUILDKIT", "0")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()?;
            use tokio::io::AsyncWriteExt;
            let mut stdin = child.stdin.take().context("docker build's stdin")?;
            stdin.write_all(DOCKERFILE.as_bytes()).await?;
            drop(stdin);
            let out = child.wait_with_output().await?;
            ensure!(
                out.status.success(),
                "docker build {IMAGE}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Ok(())
        })
        .await
        .map(|_| ())
}

/// What the Job's container runs: its args, working folder and env.
struct Pod {
    args: Vec<String>,
    workdir: String,
    env: Vec<(String, String)>,
}

/// `mur kube job` run in the image's project, its container read back.
async fn job(project: &str, flags: &[&str]) -> Result<Pod> {
    let mut args = vec!["run", "--rm", "--network", "none", "-w", project, IMAGE];
    args.extend(["kube", "job", "--image", IMAGE]);
    args.extend(flags);
    let yaml = docker(&args).await?;
    let job = yaml.split("\n---\n").last().unwrap_or_default();
    let mut pod = Pod {
        args: Vec::new(),
        workdir: String::new(),
        env: Vec::new(),
    };
    let mut in_args = false;
    let mut name: Option<String> = None;
    for line in job.lines() {
        let t = line.trim();
        if t == "args:" {
            in_args = true;
            continue;
        }
        if in_args {
            match t.strip_prefix("- ") {
                Some(a) => pod.args.push(serde_json::from_str(a)?),
                None => in_args = false,
            }
        }
        if let Some(w) = t.strip_prefix("workingDir: ") {
            pod.workdir = serde_json::from_str(w)?;
        }
        if let Some(n) = t.strip_prefix("- name: ")
            && line.starts_with("        - name: ")
        {
            name = Some(n.to_string());
        }
        if let (Some(n), Some(v)) = (&name, t.strip_prefix("value: ")) {
            pod.env.push((n.clone(), serde_json::from_str(v)?));
            name = None;
        }
    }
    ensure!(
        !pod.args.is_empty() && !pod.workdir.is_empty(),
        "no container in:\n{yaml}"
    );
    Ok(pod)
}

/// A pod's container: detached, loopback only, a read-only root, `/tmp` a tmpfs,
/// HOME a host folder (the records volume), env as the kubelet sets it.
struct Container {
    id: String,
    home: PathBuf,
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = std::process::Command::new("docker")
            .args(["rm", "-f", &self.id])
            .output();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

async fn start(scenario: &str, pod: &Pod, extra_env: &[(String, String)]) -> Result<Container> {
    start_limited(scenario, pod, extra_env, None).await
}

/// [`start`], with `memory` the container's memory limit (`--memory`, no swap beyond
/// it), as a pod's `resources.limits.memory` sets it.
async fn start_limited(
    scenario: &str,
    pod: &Pod,
    extra_env: &[(String, String)],
    memory: Option<&str>,
) -> Result<Container> {
    let home = std::env::temp_dir().join(format!("mur-e2e-kube-{scenario}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home)?;
    let label = format!("dev.murmur.e2e={scenario}");
    let mut args: Vec<String> = [
        "run",
        "-d",
        "--network",
        "none",
        "--read-only",
        "--tmpfs",
        "/tmp",
        "--label",
        label.as_str(),
    ]
    .map(String::from)
    .to_vec();
    let home_in = pod
        .env
        .iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| v.clone())
        .context("the Job sets HOME")?;
    args.extend(["-v".into(), format!("{}:{home_in}", home.display())]);
    if let Some(memory) = memory {
        args.extend(["--memory", memory, "--memory-swap", memory].map(String::from));
    }
    for (k, v) in pod.env.iter().chain(extra_env) {
        args.extend(["-e".into(), format!("{k}={v}")]);
    }
    args.extend(["-w".into(), pod.workdir.clone(), IMAGE.into()]);
    args.extend(pod.args.iter().cloned());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let id = docker(&argv).await?.trim().to_string();
    Ok(Container { id, home })
}

impl Container {
    async fn state(&self) -> Result<(bool, i64)> {
        let out = docker(&[
            "inspect",
            "-f",
            "{{.State.Running}} {{.State.ExitCode}}",
            &self.id,
        ])
        .await?;
        let mut it = out.split_whitespace();
        Ok((
            it.next() == Some("true"),
            it.next().unwrap_or("-1").parse()?,
        ))
    }

    /// Every trace.jsonl in the records volume: (path, its complete lines parsed).
    fn traces(&self) -> Vec<(PathBuf, Vec<Value>, usize)> {
        let mut found = Vec::new();
        let mut dirs = vec![self.home.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.ends_with("trace.jsonl") {
                    let text = std::fs::read_to_string(&p).unwrap_or_default();
                    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                    let parsed: Vec<Value> = lines
                        .iter()
                        .filter_map(|l| serde_json::from_str(l).ok())
                        .collect();
                    let torn = lines.len() - parsed.len();
                    found.push((p, parsed, torn));
                }
            }
        }
        found
    }

    /// Waits until every member in `working` has a running task.
    async fn until_working(&self, members: usize) -> Result<()> {
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            let traces = self.traces();
            let busy = traces
                .iter()
                .any(|(_, r, _)| r.iter().any(|x| x["type"] == "a2a_task_received"));
            if traces.len() >= members && busy {
                return Ok(());
            }
            if Instant::now() > until {
                bail!(
                    "the formation never came up: {} traces; logs: {}",
                    traces.len(),
                    self.logs().await
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn logs(&self) -> String {
        let out = std::process::Command::new("docker")
            .args(["logs", "--tail", "30", &self.id])
            .output();
        out.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .unwrap_or_default()
    }

    async fn wait_exit(&self, limit: Duration) -> Result<(f64, i64)> {
        let t = Instant::now();
        loop {
            let (running, code) = self.state().await?;
            if !running {
                return Ok((t.elapsed().as_secs_f64(), code));
            }
            ensure!(t.elapsed() < limit, "still running after {limit:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn member_of(records: &[Value]) -> String {
    records
        .iter()
        .find(|r| r["type"] == "session_start")
        .and_then(|r| r["formation_member"].as_str())
        .unwrap_or("?")
        .to_string()
}

/// `docker stop -t 30` of a busy formation: SIGTERM to PID 1 winds every member down
/// (formation_ended, then session_end in every trace) and mur exits 0 (the wound-down
/// entry member's, docs/run.md) well before the 30 s.
pub async fn stop() -> Result<Measured> {
    image().await?;
    let pod = job(
        "/project",
        &["--task", "Work on this until you are stopped."],
    )
    .await?;
    let c = start("kube-stop", &pod, &[]).await?;
    c.until_working(3).await?;
    let sent = Instant::now();
    docker(&["stop", "-t", "30", &c.id]).await?;
    let took = sent.elapsed().as_secs_f64();
    let (_, code) = c.state().await?;
    ensure!(
        took < 30.0,
        "docker stop took {took:.1} s: the SIGKILL came"
    );
    ensure!(
        code == 0,
        "exit code {code}, not 0; logs: {}",
        c.logs().await
    );
    let traces = c.traces();
    ensure!(traces.len() == 3, "{} traces", traces.len());
    for (path, records, torn) in &traces {
        let who = member_of(records);
        ensure!(*torn == 0, "{who}: {torn} torn lines in {}", path.display());
        ensure!(
            records.iter().any(|r| r["type"] == "formation_ended"),
            "{who}: no formation_ended"
        );
        let end = records.last().context("empty trace")?;
        ensure!(end["type"] == "session_end", "{who}: ends {end}");
        let want = if who == "lead" {
            "formation_ended"
        } else {
            "ok"
        };
        ensure!(
            end["exit_status"] == want && end["exit_code"] == 0,
            "{who}: {end}"
        );
    }
    Ok(Measured {
        teardown: Some(took),
        note: format!(
            "docker stop -t 30 of a busy formation, mur PID 1: exit {code} after {took:.2} s, 3 traces end in session_end"
        ),
    })
}

/// `docker kill` (SIGKILL of PID 1, the grace run out): the container is gone at once
/// and the records on the volume are whole lines, each trace opened by session_start.
pub async fn kill() -> Result<Measured> {
    image().await?;
    let pod = job(
        "/project",
        &["--task", "Work on this until you are stopped."],
    )
    .await?;
    let c = start("kube-kill", &pod, &[]).await?;
    c.until_working(3).await?;
    docker(&["kill", &c.id]).await?;
    let (took, code) = c.wait_exit(Duration::from_secs(10)).await?;
    ensure!(code == 137, "exit code {code}, not 137");
    let traces = c.traces();
    ensure!(traces.len() == 3, "{} traces", traces.len());
    for (path, records, torn) in &traces {
        ensure!(*torn <= 1, "{torn} torn lines in {}", path.display());
        ensure!(
            records
                .first()
                .is_some_and(|r| r["type"] == "session_start"),
            "{} does not open with session_start",
            path.display()
        );
    }
    Ok(Measured {
        teardown: Some(took),
        note: "docker kill of PID 1: exit 137, 3 traces whole on the records volume".into(),
    })
}

/// An Indexed Job of 3: each index a container of its own, its task the ConfigMap's
/// key for its index (mounted as a file), `$(MUR_TASK_INDEX)` expanded as the kubelet
/// expands it. Each completes with 0 on its own task.
pub async fn indexed() -> Result<Measured> {
    image().await?;
    // The task files are read where `mur kube job` runs: the image's project has none,
    // so the Job is written from a copy of the roster on the host.
    let dir = std::env::temp_dir().join(format!("mur-e2e-kube-indexed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let tasks = ["Plan a picnic.", "Plan a hike.", "Plan a swim."];
    let pod = indexed_job(&dir, &tasks).await?;
    let mut done = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        let mount = dir.join(format!("tasks-{i}"));
        std::fs::create_dir_all(&mount)?;
        std::fs::write(mount.join(i.to_string()), task)?;
        let mut pod_i = Pod {
            args: pod
                .args
                .iter()
                .map(|a| a.replace("$(MUR_TASK_INDEX)", &i.to_string()))
                .collect(),
            workdir: pod.workdir.clone(),
            env: pod.env.clone(),
        };
        pod_i.env.push(("MUR_TASK_INDEX".into(), i.to_string()));
        let c = start_with_tasks(&format!("kube-indexed-{i}"), &pod_i, &mount).await?;
        done.push((c, *task));
    }
    for (c, task) in &done {
        let (_, code) = c.wait_exit(Duration::from_secs(120)).await?;
        ensure!(code == 0, "index exit {code}: {}", c.logs().await);
        let entry = c
            .traces()
            .into_iter()
            .find(|(_, r, _)| member_of(r) == "lead")
            .context("the entry member's trace")?;
        let text = entry.1.iter().map(|r| r.to_string()).collect::<String>();
        ensure!(
            text.contains(task),
            "the entry member's trace never names its task {task:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Measured {
        teardown: None,
        note: "an Indexed Job of 3 as 3 containers, each exit 0 on its own task".into(),
    })
}

async fn indexed_job(dir: &Path, tasks: &[&str]) -> Result<Pod> {
    // Written inside the image, from its trio project with a task list beside it.
    let mut script =
        String::from("set -e; mkdir -p /tmp/p && cp -a /project-trio/. /tmp/p/ && cd /tmp/p");
    for (i, t) in tasks.iter().enumerate() {
        script.push_str(&format!(
            " && printf '%s' '{t}' > t{i}.md && echo t{i}.md >> list.txt"
        ));
    }
    script.push_str(&format!(
        " && mur kube job --image {IMAGE} --tasks list.txt"
    ));
    let yaml = docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "--entrypoint",
        "/bin/sh",
        IMAGE,
        "-c",
        &script,
    ])
    .await?;
    std::fs::write(dir.join("jobs.yaml"), &yaml)?;
    let job = yaml.split("\n---\n").last().unwrap_or_default();
    let mut pod = Pod {
        args: Vec::new(),
        workdir: String::new(),
        env: Vec::new(),
    };
    let mut in_args = false;
    for line in job.lines() {
        let t = line.trim();
        if t == "args:" {
            in_args = true;
            continue;
        }
        if in_args {
            match t.strip_prefix("- ") {
                Some(a) => pod.args.push(serde_json::from_str(a)?),
                None => in_args = false,
            }
        }
    }
    // The image holds the trio project at /project-trio: the pod's working folder.
    pod.workdir = "/project-trio".into();
    pod.env.push(("HOME".into(), "/home/mur".into()));
    ensure!(job.contains("completionMode: Indexed"), "{yaml}");
    Ok(pod)
}

async fn start_with_tasks(scenario: &str, pod: &Pod, tasks: &Path) -> Result<Container> {
    let mut pod = Pod {
        args: pod.args.clone(),
        workdir: pod.workdir.clone(),
        env: pod.env.clone(),
    };
    // The ConfigMap volume, read only, where the Job mounts it.
    pod.env
        .push(("E2E_TASKS".into(), tasks.display().to_string()));
    let home = std::env::temp_dir().join(format!("mur-e2e-kube-{scenario}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home)?;
    let label = format!("dev.murmur.e2e={scenario}");
    let mut args: Vec<String> = [
        "run",
        "-d",
        "--network",
        "none",
        "--read-only",
        "--tmpfs",
        "/tmp",
        "--label",
        label.as_str(),
    ]
    .map(String::from)
    .to_vec();
    args.extend(["-v".into(), format!("{}:/home/mur", home.display())]);
    args.extend([
        "-v".into(),
        format!("{}:/var/run/mur-tasks:ro", tasks.display()),
    ]);
    for (k, v) in &pod.env {
        args.extend(["-e".into(), format!("{k}={v}")]);
    }
    args.extend(["-w".into(), pod.workdir.clone(), IMAGE.into()]);
    args.extend(pod.args.iter().cloned());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let id = docker(&argv).await?.trim().to_string();
    Ok(Container { id, home })
}

/// The zombies in a container: (pid, start time) of each process in state Z.
async fn zombies(id: &str) -> Result<Vec<(u32, u64)>> {
    let out = docker(&[
        "exec",
        id,
        "/bin/sh",
        "-c",
        "cat /proc/[0-9]*/stat 2>/dev/null; true",
    ])
    .await?;
    let mut found = Vec::new();
    for line in out.lines() {
        let Some(close) = line.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = line[close + 1..].split_whitespace().collect();
        if fields.first() == Some(&"Z")
            && let (Ok(pid), Some(Ok(start))) = (
                line.split_whitespace().next().unwrap_or("").parse::<u32>(),
                fields.get(19).map(|s| s.parse::<u64>()),
            )
        {
            found.push((pid, start));
        }
    }
    Ok(found)
}

/// An entry member that leaves an orphan every 100 ms, each dead 200 ms later, under
/// mur as PID 1: no zombie lasts longer than the session's stray reap (5 s) and a tick,
/// while it runs; `docker stop -t 30` then winds it down with exit 0.
pub async fn orphans() -> Result<Measured> {
    image().await?;
    let mut pod = job(
        "/project-orphans",
        &["--task", "Leave orphans until you are stopped."],
    )
    .await?;
    pod.workdir = "/project-orphans".into();
    let c = start("kube-orphans", &pod, &[]).await?;
    c.until_working(2).await?;
    let most = Duration::from_secs(7);
    let mut first: std::collections::BTreeMap<(u32, u64), Instant> = Default::default();
    let mut seen = 0;
    let mut longest = Duration::ZERO;
    let until = Instant::now() + Duration::from_secs(15);
    while Instant::now() < until {
        let now = Instant::now();
        let z = zombies(&c.id).await?;
        first.retain(|k, _| z.contains(k));
        for k in z {
            let at = *first.entry(k).or_insert_with(|| {
                seen += 1;
                now
            });
            longest = longest.max(now - at);
            ensure!(now - at <= most, "zombie {k:?} unreaped for {:?}", now - at);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ensure!(seen > 0, "the member made no zombie: nothing was proved");
    let sent = Instant::now();
    docker(&["stop", "-t", "30", &c.id]).await?;
    let took = sent.elapsed().as_secs_f64();
    let (_, code) = c.state().await?;
    ensure!(code == 0 && took < 30.0, "exit {code} after {took:.1} s");
    Ok(Measured {
        teardown: Some(took),
        note: format!(
            "{seen} zombies seen, none lasting over {longest:.1?}; docker stop: exit 0 after {took:.2} s"
        ),
    })
}

/// The container's memory limit in the OOM scenarios: room for the busy formation,
/// which the balloon then fills.
const OOM_LIMIT: &str = "256m";

/// The container's cgroup OOM-kill counter, read from the host (v1
/// `memory.oom_control`, v2 `memory.events`): no probe runs in a container whose
/// memory may be exhausted (e2e/README.md, "The OOM scenarios").
fn oom_kills(id: &str) -> Result<u64> {
    let candidates = [
        format!("/sys/fs/cgroup/memory/docker/{id}/memory.oom_control"),
        format!("/sys/fs/cgroup/system.slice/docker-{id}.scope/memory.events"),
        format!("/sys/fs/cgroup/docker/{id}/memory.events"),
    ];
    for path in &candidates {
        if let Ok(text) = std::fs::read_to_string(path) {
            let count = text
                .lines()
                .find_map(|l| l.strip_prefix("oom_kill "))
                .context("no oom_kill line")?;
            return Ok(count.trim().parse()?);
        }
    }
    bail!("no cgroup memory counters for {id} at {candidates:?}")
}

/// The highest [`oom_kills`] seen, read from the host every 5 ms from now until the
/// container's cgroup is gone (the engine removes it when the container dies, so a
/// count read after the end is none).
fn watch_oom_kills(id: String) -> tokio::task::JoinHandle<Option<u64>> {
    tokio::task::spawn_blocking(move || {
        let (mut seen, until) = (None, Instant::now() + Duration::from_secs(60));
        while Instant::now() < until {
            match oom_kills(&id) {
                Ok(k) => seen = seen.max(Some(k)),
                Err(_) if seen.is_some() => break,
                Err(_) => {}
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        seen
    })
}

/// Everything the container wrote on stderr (PID 1's, the launcher's), not only the
/// tail [`Container::logs`] gives.
fn stderr_of(id: &str) -> String {
    std::process::Command::new("docker")
        .args(["logs", id])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default()
}

/// The container's full id, its cgroup's name.
async fn full_id(id: &str) -> Result<String> {
    Ok(docker(&["inspect", "-f", "{{.Id}}", id])
        .await?
        .trim()
        .to_string())
}

/// Every `exited.jsonl` record in the records volume (docs/formation.md, "A member
/// that exits").
fn exited_records(home: &Path) -> Vec<Value> {
    let formations = home.join(".murmur/formations");
    std::fs::read_dir(formations)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("exited.jsonl")).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect::<Vec<Value>>()
        })
        .collect()
}

/// A pod's memory limit OOM-kills one member (`coder`, made the kernel's victim by
/// `MUR_TEST_MEMBER_BALLOON`): the launcher (PID 1) says so on stderr at once and in
/// the formation's records, the formation goes on, and `docker stop -t 30` then ends
/// it with the entry member's 0 (the exit-code contract: a peer's death does not
/// change it).
pub async fn oom_member() -> Result<Measured> {
    image().await?;
    let pod = job(
        "/project",
        &["--task", "Work on this until you are stopped."],
    )
    .await?;
    let balloon = [("MUR_TEST_MEMBER_BALLOON".to_string(), "coder:6".to_string())];
    let c = start_limited("kube-oom-member", &pod, &balloon, Some(OOM_LIMIT)).await?;
    let id = full_id(&c.id).await?;
    // Wait on the report, read from outside: nothing runs in the container meanwhile.
    let until = Instant::now() + Duration::from_secs(50);
    let said = "[coder] exited with status 137 (SIGKILL)";
    while !stderr_of(&c.id).contains(said) {
        ensure!(
            Instant::now() < until,
            "the launcher never said {said:?}; logs: {}",
            c.logs().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A new container's cgroup: its counter started at 0.
    let kills = oom_kills(&id)?;
    ensure!(
        kills == 1,
        "the cgroup counted {kills} OOM kills, not coder's one"
    );
    let (running, _) = c.state().await?;
    ensure!(
        running,
        "the formation ended with coder: {}",
        c.logs().await
    );
    let exited = exited_records(&c.home);
    ensure!(
        exited.len() == 1
            && exited[0]["member"] == "coder"
            && exited[0]["status"] == 137
            && exited[0]["signal"] == "SIGKILL",
        "exited.jsonl: {exited:?}"
    );
    let sent = Instant::now();
    docker(&["stop", "-t", "30", &c.id]).await?;
    let took = sent.elapsed().as_secs_f64();
    let (_, code) = c.state().await?;
    ensure!(
        took < 30.0,
        "docker stop took {took:.1} s: the SIGKILL came"
    );
    ensure!(
        code == 0,
        "exit code {code}, not 0; logs: {}",
        c.logs().await
    );
    for (path, records, torn) in &c.traces() {
        let who = member_of(records);
        let end = records.last().context("empty trace")?;
        if who == "coder" {
            // Killed: its trace stops where the kernel stopped it.
            ensure!(*torn <= 1, "coder: {torn} torn lines in {}", path.display());
            ensure!(end["type"] != "session_end", "coder ended itself: {end}");
        } else {
            ensure!(*torn == 0, "{who}: {torn} torn lines");
            ensure!(end["type"] == "session_end", "{who}: ends {end}");
        }
    }
    Ok(Measured {
        teardown: Some(took),
        note: format!(
            "OOM kill of coder ({OOM_LIMIT}, oom_kill +1): reported by PID 1, exited.jsonl 137/SIGKILL, formation went on; docker stop: exit 0 after {took:.2} s"
        ),
    })
}

/// A pod's memory limit OOM-kills the launcher, PID 1 (`MUR_TEST_LAUNCHER_BALLOON`):
/// the kernel then SIGKILLs every other process of the pod's PID namespace, so no
/// member winds down. The container exits 137 with `OOMKilled`, the contract's "ended
/// by signal N" (Count); the records on the volume are whole lines, each trace opened
/// by `session_start`.
pub async fn oom_launcher() -> Result<Measured> {
    image().await?;
    let pod = job(
        "/project",
        &["--task", "Work on this until you are stopped."],
    )
    .await?;
    let balloon = [("MUR_TEST_LAUNCHER_BALLOON".to_string(), "6".to_string())];
    let c = start_limited("kube-oom-launcher", &pod, &balloon, Some(OOM_LIMIT)).await?;
    let counted = watch_oom_kills(full_id(&c.id).await?);
    // Nothing is probed in the container meanwhile: the engine reports the end.
    let (took, code) = c.wait_exit(Duration::from_secs(50)).await?;
    ensure!(
        code == 137,
        "exit code {code}, not 137; logs: {}",
        c.logs().await
    );
    let oom = docker(&["inspect", "-f", "{{.State.OOMKilled}}", &c.id]).await?;
    ensure!(
        oom.trim() == "true",
        "the engine says OOMKilled {}",
        oom.trim()
    );
    // The last count before the cgroup went: the launcher's kill, and no other (the
    // kernel's SIGKILLs of the rest of the namespace are not OOM kills).
    let kills = counted.await?;
    ensure!(
        kills == Some(1),
        "the cgroup counted {kills:?} OOM kills, not the launcher's one"
    );
    let traces = c.traces();
    ensure!(traces.len() == 3, "{} traces", traces.len());
    for (path, records, torn) in &traces {
        ensure!(*torn <= 1, "{torn} torn lines in {}", path.display());
        ensure!(
            records
                .first()
                .is_some_and(|r| r["type"] == "session_start"),
            "{} does not open with session_start",
            path.display()
        );
    }
    // PID 1's death SIGKILLs the namespace a moment after its lifelines close: a
    // member rarely gets as far as its session_end. Said, not required.
    let ended = traces
        .iter()
        .filter(|(_, r, _)| r.iter().any(|x| x["type"] == "session_end"))
        .count();
    Ok(Measured {
        teardown: Some(took),
        note: format!(
            "OOM kill of PID 1 ({OOM_LIMIT}, oom_kill 1): exit 137, OOMKilled, 3 traces whole, {ended} ended in session_end"
        ),
    })
}
