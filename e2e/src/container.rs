//! One scenario's container: the locally built image, tini as PID 1 running a long
//! sleep, a label for cleanup, and `docker exec` for everything else.
//!
//! Formations are started with `docker exec`, never as PID 1 and never as a child of
//! PID 1's program (tini): when PID 1 of a PID namespace dies the kernel SIGKILLs the
//! whole namespace, and tini exits (taking the container with it) as soon as its child
//! does. Either way every member would vanish and a teardown test would pass without
//! proving anything (e2e/README.md).

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use futures_util::StreamExt;
use testcontainers::bollard::Docker;
use testcontainers::bollard::container::LogOutput;
use testcontainers::bollard::exec::{StartExecOptions, StartExecResults};
use testcontainers::bollard::models::{ExecConfig, HostConfigCgroupnsModeEnum};
use testcontainers::bollard::query_parameters::{ListContainersOptions, RemoveContainerOptions};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

/// The image `just e2e-image` builds (docker/e2e.Dockerfile). Never pulled.
pub const IMAGE: &str = "mur-e2e";
pub const TAG: &str = "local";
/// Every container the suite starts carries this label, so stale ones can be removed.
pub const LABEL: &str = "dev.murmur.e2e";

/// Removes every container carrying the suite's label, running or not. Run at the
/// start (a runner killed earlier leaves its containers behind) and at the end.
pub async fn remove_stale() -> Result<usize> {
    let docker = Docker::connect_with_local_defaults().context("connecting to Docker")?;
    let filters = HashMap::from([("label".to_string(), vec![LABEL.to_string()])]);
    let found = docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(filters),
            ..Default::default()
        }))
        .await
        .context("listing the suite's containers")?;
    let mut removed = 0;
    for c in found {
        let Some(id) = c.id else { continue };
        let options = RemoveContainerOptions {
            force: true,
            ..Default::default()
        };
        if docker.remove_container(&id, Some(options)).await.is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// Fails with a clear message when the image has not been built.
pub async fn check_image() -> Result<()> {
    let docker = Docker::connect_with_local_defaults().context("connecting to Docker")?;
    docker
        .inspect_image(&format!("{IMAGE}:{TAG}"))
        .await
        .map(|_| ())
        .map_err(|e| anyhow!("image {IMAGE}:{TAG} not found ({e}); build it with `just e2e-image`"))
}

/// What a finished command in the container printed and returned.
#[derive(Debug, Clone)]
pub struct Output {
    pub code: i64,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(self) -> Result<Output> {
        if self.code == 0 {
            Ok(self)
        } else {
            bail!(
                "exit {}: {}{}",
                self.code,
                self.stdout.trim(),
                self.stderr.trim()
            )
        }
    }
}

/// A running scenario container. Dropping it removes it.
pub struct Sandbox {
    pub scenario: String,
    container: ContainerAsync<GenericImage>,
    // Execs go straight to the engine: testcontainers' ExecResult is not Sync, and
    // its exit-code wait polls every 500 ms.
    docker: Docker,
    /// PID 1's long sleep, found when nothing else ran yet. The leftover scan leaves
    /// out this one pid only: an orphan running the same command is still seen.
    pub keeper: u32,
}

/// How a scenario's container is configured.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// A memory limit in bytes (swap held to the same, so there is none).
    pub memory: Option<i64>,
    /// The host's cgroup v2 hierarchy, mounted writable where mur looks for it
    /// ([`writable_cgroup2`]); Docker gives a container none by default.
    pub cgroup2: bool,
}

/// How a container is given a writable cgroup v2, on this host: on a hybrid host
/// (cgroup v1 controllers, an empty v2 hierarchy at `/sys/fs/cgroup/unified`), that
/// hierarchy bound at the same place (the container's processes are in its
/// `/docker/<id>` there too); on a unified host, the host's cgroup namespace and
/// `/sys/fs/cgroup` bound writable. `None` on a host with no cgroup v2.
pub fn writable_cgroup2() -> Option<(&'static str, bool)> {
    let v2 = |dir: &str| {
        std::path::Path::new(dir)
            .join("cgroup.controllers")
            .is_file()
    };
    if v2("/sys/fs/cgroup/unified") {
        Some(("/sys/fs/cgroup/unified:/sys/fs/cgroup/unified:rw", false))
    } else if v2("/sys/fs/cgroup") {
        Some(("/sys/fs/cgroup:/sys/fs/cgroup:rw", true))
    } else {
        None
    }
}

impl Sandbox {
    pub async fn start(scenario: &str, config: Config) -> Result<Sandbox> {
        let memory = config.memory;
        let cgroup2 = if config.cgroup2 {
            Some(writable_cgroup2().context("this host has no cgroup v2 to give the container")?)
        } else {
            None
        };
        let request = GenericImage::new(IMAGE, TAG)
            .with_label(LABEL, scenario)
            .with_container_name(format!(
                "mur-e2e-{scenario}-{}",
                std::process::id() // several runs never collide on a name
            ))
            // No network but loopback: members' doors are on 127.0.0.1.
            .with_network("none")
            .with_host_config_modifier(move |hc| {
                hc.init = Some(false); // tini is the image's own PID 1
                if let Some(bytes) = memory {
                    hc.memory = Some(bytes);
                    hc.memory_swap = Some(bytes);
                }
                if let Some((bind, host_ns)) = cgroup2 {
                    hc.binds = Some(vec![bind.to_string()]);
                    if host_ns {
                        hc.cgroupns_mode = Some(HostConfigCgroupnsModeEnum::HOST);
                    }
                }
            });
        let container = request
            .start()
            .await
            .with_context(|| format!("starting the container for {scenario}"))?;
        let mut sandbox = Sandbox {
            scenario: scenario.to_string(),
            container,
            docker: Docker::connect_with_local_defaults().context("connecting to Docker")?,
            keeper: 0,
        };
        // tini forks the keeper as the container starts: a first scan can come before it.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let scan = sandbox
                .exec(vec!["/e2e/bin/scan".into()], &[])
                .await?
                .ok()?;
            let keeper = scan
                .stdout
                .lines()
                .filter_map(|l| l.strip_prefix("proc "))
                .find_map(|l| {
                    let f: Vec<&str> = l.splitn(6, ' ').collect();
                    (f.get(1) == Some(&"1")
                        && f.get(5).map(|c| c.trim()) == Some("sleep 2147483647"))
                    .then(|| f[0].parse().ok())
                    .flatten()
                });
            match keeper {
                Some(pid) => {
                    sandbox.keeper = pid;
                    break;
                }
                None if std::time::Instant::now() >= until => {
                    anyhow::bail!("no `sleep 2147483647` under PID 1: {}", scan.stdout)
                }
                None => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        }
        Ok(sandbox)
    }

    pub fn id(&self) -> &str {
        self.container.id()
    }

    /// Runs a read-only probe (a scan, a file read): like `exec`, but a probe that was
    /// itself SIGKILLed (137) is run again, up to 5 times. Under a memory limit the OOM
    /// killer can take a probe while the launcher it chose is still releasing its
    /// memory; members are checked through their traces, never through this.
    pub async fn probe(&self, cmd: Vec<String>) -> Result<Output> {
        let mut tries = 0;
        loop {
            let out = self.exec(cmd.clone(), &[]).await?;
            tries += 1;
            if out.code != 137 || tries == 5 {
                return Ok(out);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `probe` of `sh -c script`.
    pub async fn probe_sh(&self, script: &str) -> Result<Output> {
        self.probe(vec!["sh".into(), "-c".into(), script.into()])
            .await
    }

    /// Runs `sh -c script` and waits for it to finish.
    pub async fn sh(&self, script: &str) -> Result<Output> {
        self.exec(vec!["sh".into(), "-c".into(), script.into()], &[])
            .await
    }

    /// Runs a command with extra environment variables and waits for it to finish.
    pub async fn exec(&self, cmd: Vec<String>, env: &[(&str, &str)]) -> Result<Output> {
        let id = self.create_exec(&cmd, env, true).await?;
        let started = self
            .docker
            .start_exec(&id, None::<StartExecOptions>)
            .await
            .with_context(|| format!("docker exec {cmd:?}"))?;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        if let StartExecResults::Attached { mut output, .. } = started {
            while let Some(frame) = output.next().await {
                match frame.with_context(|| format!("docker exec {cmd:?}"))? {
                    LogOutput::StdOut { message } => stdout.extend_from_slice(&message),
                    LogOutput::StdErr { message } => stderr.extend_from_slice(&message),
                    _ => {}
                }
            }
        }
        // The stream ends as the process does; its exit code follows a moment later.
        let code = loop {
            if let Some(code) = exit_code(&self.docker, &id).await? {
                break code;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        Ok(Output {
            code,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    }

    /// Starts a long-running command with `docker exec` and returns at once. The
    /// command must send its output to files: nothing reads the exec's streams.
    pub async fn spawn(&self, cmd: Vec<String>, env: &[(&str, &str)]) -> Result<Spawned> {
        let id = self.create_exec(&cmd, env, false).await?;
        self.docker
            .start_exec(
                &id,
                Some(StartExecOptions {
                    detach: true,
                    ..Default::default()
                }),
            )
            .await
            .with_context(|| format!("docker exec -d {cmd:?}"))?;
        Ok(Spawned {
            docker: self.docker.clone(),
            id,
        })
    }

    async fn create_exec(
        &self,
        cmd: &[String],
        env: &[(&str, &str)],
        attach: bool,
    ) -> Result<String> {
        let config = ExecConfig {
            attach_stdout: Some(attach),
            attach_stderr: Some(attach),
            cmd: Some(cmd.to_vec()),
            env: Some(env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            ..Default::default()
        };
        Ok(self
            .docker
            .create_exec(self.container.id(), config)
            .await
            .with_context(|| format!("docker exec {cmd:?}"))?
            .id)
    }

    /// The container's own output (tini's), for a failure report.
    pub async fn logs(&self) -> String {
        let out = self.container.stdout_to_vec().await.unwrap_or_default();
        let err = self.container.stderr_to_vec().await.unwrap_or_default();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&err)
        )
    }
}

/// A command started with [`Sandbox::spawn`].
pub struct Spawned {
    docker: Docker,
    id: String,
}

impl Spawned {
    /// Its exit status, once it has ended (128 + the signal when a signal ended it).
    pub async fn exit_code(&self) -> Result<Option<i64>> {
        exit_code(&self.docker, &self.id).await
    }
}

async fn exit_code(docker: &Docker, exec: &str) -> Result<Option<i64>> {
    let inspect = docker
        .inspect_exec(exec)
        .await
        .context("inspecting an exec")?;
    Ok(if inspect.running == Some(true) {
        None
    } else {
        inspect.exit_code
    })
}
