//! `mur kube job`: a Kubernetes Job that runs the current project's formation in one
//! pod, mur as the container's PID 1 (docs/kubernetes.md). With `--tasks` an Indexed
//! Job, one formation per index on its own task, the tasks in a ConfigMap beside it.
//!
//! The manifest is written as text, not serialized, so it can carry the comments that
//! say where each number comes from; every string in it is a JSON string (valid YAML,
//! and nothing in a path or a task can break out of its scalar).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::catalogue::{E_KUB_001, E_KUB_002, E_KUB_003, E_KUB_004};
use crate::{Diagnostic, Result, exit, output, timing};

/// Where the project image holds the project (examples/kubernetes/Dockerfile).
pub const PROJECT_DIR: &str = "/project";
/// The release image's HOME (docker/Dockerfile): an emptyDir in the pod.
pub const HOME: &str = "/home/mur";
/// The release image's unprivileged user and group.
pub const UID: u32 = 65532;
/// Where an Indexed Job's tasks are mounted, one file per index.
pub const TASKS_DIR: &str = "/var/run/mur-tasks";
/// The env variable an index's pod reads its index into (the downward API).
pub const INDEX_ENV: &str = "MUR_TASK_INDEX";
/// Time to write records and exit after the last member was killed: the launcher's
/// stray wait (2 s), its sweep (2 s) and its stderr flush (2 s), rounded up.
pub const FLUSH_MARGIN: Duration = Duration::from_secs(10);
/// Kubernetes' limit on a ConfigMap (1 MiB), less room for its metadata.
const CONFIGMAP_LIMIT: usize = 1000 * 1024;
/// The most indexes written (each a pod, each a formation).
const MAX_INDEXES: usize = 10_000;

#[derive(Debug, Args)]
pub struct KubeArgs {
    #[command(subcommand)]
    pub command: KubeCommand,
}

#[derive(Debug, Subcommand)]
pub enum KubeCommand {
    /// Print a Kubernetes Job that runs the project's formation (`--tasks`: an Indexed Job).
    #[command(
        after_help = "Examples:\n  mur kube job --image registry.example/team:1 --task \"Plan a picnic.\" > job.yaml\n  mur kube job --image registry.example/team:1 --tasks tasks.txt > jobs.yaml"
    )]
    Job(JobArgs),
}

#[derive(Debug, Args)]
pub struct JobArgs {
    /// The project image (examples/kubernetes/Dockerfile): the release image with the project in /project.
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// The one task (text, or a file in the image's /project the pod reads).
    #[arg(long, conflicts_with = "tasks", required_unless_present = "tasks")]
    pub task: Option<String>,
    /// A file naming one task file per line (relative to it; blank and `#` lines skipped):
    /// an Indexed Job, index i running the formation on the i-th task.
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<PathBuf>,
    /// The Job's name (a DNS label); the project folder's name by default.
    #[arg(long)]
    pub name: Option<String>,
    /// terminationGracePeriodSeconds; at least the wind-down (25 s) plus 10 s to flush.
    #[arg(long, value_name = "SECONDS", default_value_t = default_grace())]
    pub grace: u64,
    /// The formation's `--deadline`, passed to `mur run`.
    #[arg(long, value_name = "SECONDS")]
    pub deadline: Option<u64>,
    /// The pod's CPU request.
    #[arg(long, default_value = "500m")]
    pub cpu: String,
    /// The pod's memory request and limit.
    #[arg(long, default_value = "512Mi")]
    pub memory: String,
    /// Retries of a failed pod (backoffLimit; per index with --tasks).
    #[arg(long, default_value_t = 2)]
    pub retries: u32,
    /// A PersistentVolumeClaim mounted on ~/.murmur/records, so the traces outlive the pod.
    #[arg(long, value_name = "CLAIM")]
    pub records_claim: Option<String>,
}

pub(crate) fn run(args: &KubeArgs) -> Result<i32> {
    match &args.command {
        KubeCommand::Job(job) => {
            let cwd = std::env::current_dir()
                .map_err(|e| Diagnostic::new(E_KUB_002, format!("no current folder: {e}")))?;
            output::stdout_text(&render(job, &cwd)?);
            Ok(exit::SUCCESS)
        }
    }
}

/// The grace `mur kube job` writes unless told: the member kill plus the flush margin.
pub const fn default_grace() -> u64 {
    timing::WIND_DOWN_KILL.as_secs() + FLUSH_MARGIN.as_secs()
}

/// The manifest for `args`, run from `cwd` (inside the project).
pub fn render(args: &JobArgs, cwd: &Path) -> Result<String> {
    let project = crate::paths::project_root(cwd);
    let roster =
        crate::roster::load(&crate::roster::resolve(&project)).map_err(Diagnostic::from)?;
    check_grace(args.grace)?;
    check_image(&args.image)?;
    check_quantity("--cpu", &args.cpu)?;
    check_quantity("--memory", &args.memory)?;
    let name = job_name(args.name.as_deref(), &project)?;
    if let Some(claim) = &args.records_claim {
        dns_label("--records-claim", claim, 253)?;
    }
    let members: Vec<String> = roster.members.iter().map(|m| m.name.to_string()).collect();
    let task = args.task.as_deref().map(|t| task_in_pod(t, cwd, &project));
    let tasks = match &args.tasks {
        Some(file) => Some(read_tasks(&cwd.join(file))?),
        None => None,
    };
    let mut out = String::new();
    if let Some(tasks) = &tasks {
        configmap(&mut out, &name, tasks);
        out.push_str("---\n");
    }
    job(
        &mut out,
        args,
        task.as_deref(),
        &name,
        &members,
        tasks.as_ref().map(Vec::len),
    );
    Ok(out)
}

/// `--task` as the pod must pass it: a file of the project (which the image holds at
/// `/project`, the pod's working folder) by its path from the project's root, so
/// the pod reads the same file; anything else as given (a text).
fn task_in_pod(task: &str, cwd: &Path, project: &Path) -> String {
    let path = cwd.join(task);
    match (path.canonicalize(), project.canonicalize()) {
        (Ok(file), Ok(root)) if file.is_file() => match file.strip_prefix(&root) {
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => task.to_string(),
        },
        _ => task.to_string(),
    }
}

/// E-KUB-001 unless the pod's grace covers the spec's wind-down (the member kill at
/// 25 s) and the flush after it: a shorter one lets the kubelet's SIGKILL cut records.
fn check_grace(grace: u64) -> Result<()> {
    let needed = default_grace();
    if grace < needed {
        return Err(Diagnostic::new(
            E_KUB_001,
            format!(
                "--grace {grace} is shorter than the formation's wind-down: members are killed {} s after the lifelines close, and the launcher needs {} s more to reap and write",
                timing::WIND_DOWN_KILL.as_secs(),
                FLUSH_MARGIN.as_secs()
            ),
        )
        .hint(format!("Give --grace {needed} or more (the default).")));
    }
    Ok(())
}

fn check_image(image: &str) -> Result<()> {
    let ok = !image.is_empty()
        && image.len() <= 4096
        && image
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "./:-_@".contains(c));
    if ok {
        return Ok(());
    }
    Err(Diagnostic::new(
        E_KUB_004,
        format!("--image {image:?} is not an image reference"),
    )
    .hint("Name the project image as `docker push` did: registry/name:tag or name@sha256:…."))
}

/// A Kubernetes quantity (`500m`, `1`, `512Mi`, `1G`): digits, an optional fraction,
/// an optional suffix from the API's list.
fn check_quantity(flag: &str, q: &str) -> Result<()> {
    const SUFFIXES: &[&str] = &[
        "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    let digits = q.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &q[digits.len()..];
    let mut parts = digits.splitn(2, '.');
    let whole = parts.next().unwrap_or("");
    let frac = parts.next();
    let numeric = !whole.is_empty()
        && whole.chars().all(|c| c.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()));
    if numeric && SUFFIXES.contains(&suffix) && q.len() <= 32 {
        return Ok(());
    }
    Err(Diagnostic::new(
        E_KUB_004,
        format!("{flag} {q:?} is not a Kubernetes quantity"),
    )
    .hint("Write it as Kubernetes does: 500m or 2 (CPU), 512Mi or 1Gi (memory)."))
}

/// A lowercase RFC 1123 label of at most `max` characters.
fn dns_label(what: &str, s: &str, max: usize) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= max
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if ok {
        return Ok(());
    }
    Err(Diagnostic::new(
        E_KUB_003,
        format!("{what} {s:?} is not a Kubernetes name: at most {max} lowercase letters, digits and `-`, starting and ending with a letter or digit"),
    )
    .hint("Give --name with such a name, such as `team-run`."))
}

/// `--name`, or the project folder's name made a label. 52 characters at most: an
/// Indexed Job's pods are named `<job>-<index>-<suffix>`, and their hostname is a
/// label of 63.
fn job_name(given: Option<&str>, project: &Path) -> Result<String> {
    const MAX: usize = 52;
    if let Some(name) = given {
        dns_label("--name", name, MAX)?;
        return Ok(name.to_string());
    }
    let folder = project
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut name: String = folder
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name.truncate(MAX);
    let name = name.trim_matches('-').to_string();
    dns_label("the project folder's name", &name, MAX).map(|()| name)
}

/// The task texts `file` names, each read now: E-KUB-002 for a list that does not
/// read, is empty, or names a file that does not, with its line.
fn read_tasks(file: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        Diagnostic::new(
            E_KUB_002,
            format!("--tasks {} cannot be read: {e}", file.display()),
        )
        .hint("Name a text file that lists one task file per line.")
    })?;
    let base = file.parent().unwrap_or(Path::new("."));
    let mut tasks = Vec::new();
    let mut total = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = crate::Location::new(file, i + 1, 1);
        let path = base.join(line);
        let task = std::fs::read_to_string(&path).map_err(|e| {
            Diagnostic::new(
                E_KUB_002,
                format!("task file {} cannot be read: {e}", path.display()),
            )
            .at(at.clone())
            .hint("Each line names a task file, relative to the list's folder.")
        })?;
        if task.trim().is_empty() {
            return Err(Diagnostic::new(
                E_KUB_002,
                format!("task file {} is empty", path.display()),
            )
            .at(at)
            .hint("Write the task in the file, or drop its line."));
        }
        total += task.len();
        tasks.push(task);
    }
    if tasks.is_empty() || tasks.len() > MAX_INDEXES || total > CONFIGMAP_LIMIT {
        return Err(Diagnostic::new(
            E_KUB_002,
            format!(
                "--tasks {} names {} tasks of {total} bytes: a Job takes 1 to {MAX_INDEXES}, at most {CONFIGMAP_LIMIT} bytes in all (one ConfigMap)",
                file.display(),
                tasks.len()
            ),
        )
        .hint("List one task file per line; split a larger set over several Jobs."));
    }
    Ok(tasks)
}

/// A JSON string: a YAML scalar whatever it holds.
fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn configmap(out: &mut String, name: &str, tasks: &[String]) {
    let _ = writeln!(
        out,
        "# The tasks of Job {name}, one key per index: index i reads {TASKS_DIR}/<i>."
    );
    out.push_str("apiVersion: v1\nkind: ConfigMap\nmetadata:\n");
    let _ = writeln!(out, "  name: {}", q(&format!("{name}-tasks")));
    out.push_str("  labels:\n    app.kubernetes.io/managed-by: mur\ndata:\n");
    for (i, task) in tasks.iter().enumerate() {
        let _ = writeln!(out, "  {}: {}", q(&i.to_string()), q(task));
    }
}

fn job(
    out: &mut String,
    args: &JobArgs,
    task: Option<&str>,
    name: &str,
    members: &[String],
    indexes: Option<usize>,
) {
    let grace = args.grace;
    let mut cmd: Vec<String> = ["run", "--roster"].map(String::from).to_vec();
    if let Some(d) = args.deadline {
        cmd.extend(["--deadline".to_string(), d.to_string()]);
    }
    cmd.push("--task".into());
    cmd.push(match (indexes, task) {
        (Some(_), _) => format!("{TASKS_DIR}/$({INDEX_ENV})"),
        (None, task) => task.unwrap_or_default().to_string(),
    });
    let fail_codes: Vec<String> = exit::fail_job_codes().iter().map(i32::to_string).collect();
    let _ = writeln!(
        out,
        "# mur kube job: the formation of members {} in one pod, mur as PID 1.",
        members.join(", ")
    );
    out.push_str("# Exit codes: docs/run.md, \"The exit-code contract\".\n");
    out.push_str("apiVersion: batch/v1\nkind: Job\nmetadata:\n");
    let _ = writeln!(out, "  name: {}", q(name));
    out.push_str("  labels:\n    app.kubernetes.io/managed-by: mur\nspec:\n");
    if let Some(n) = indexes {
        let _ = writeln!(
            out,
            "  # One formation per index, each on its own task.\n  completionMode: Indexed\n  completions: {n}\n  parallelism: {n}\n  backoffLimitPerIndex: {}",
            args.retries
        );
    } else {
        let _ = writeln!(
            out,
            "  completions: 1\n  parallelism: 1\n  backoffLimit: {}",
            args.retries
        );
    }
    let fail_action = if indexes.is_some() {
        "FailIndex"
    } else {
        "FailJob"
    };
    let _ = writeln!(
        out,
        "  podFailurePolicy:\n    rules:\n    # Preemption, eviction, a node drain: not the formation's fault, never counted.\n    - action: Ignore\n      onPodConditions:\n      - type: DisruptionTarget\n        status: \"True\"\n    # The command line is wrong (exit 2): every retry would end the same.\n    - action: {fail_action}\n      onExitCodes:\n        containerName: mur\n        operator: In\n        values: [{}]\n    # Anything else (1: task failed or refused; 128 + N: a signal) counts toward the retries.",
        fail_codes.join(", ")
    );
    out.push_str("  template:\n    metadata:\n      labels:\n        app.kubernetes.io/managed-by: mur\n    spec:\n      restartPolicy: Never\n");
    let _ = writeln!(
        out,
        "      # The kubelet's SIGTERM closes every member's lifeline: each exits by {} s,\n      # the launcher kills what is left at {} s, then reaps and writes for up to {} s.\n      terminationGracePeriodSeconds: {grace}",
        timing::WIND_DOWN_EXIT.as_secs(),
        timing::WIND_DOWN_KILL.as_secs(),
        FLUSH_MARGIN.as_secs()
    );
    let _ = writeln!(
        out,
        "      automountServiceAccountToken: false\n      enableServiceLinks: false\n      securityContext:\n        runAsNonRoot: true\n        runAsUser: {UID}\n        runAsGroup: {UID}\n        fsGroup: {UID}\n        seccompProfile:\n          type: RuntimeDefault"
    );
    out.push_str("      containers:\n      - name: mur\n");
    let _ = writeln!(out, "        image: {}", q(&args.image));
    out.push_str(
        "        # No command: the image's ENTRYPOINT is mur, so mur is PID 1.\n        args:\n",
    );
    for a in &cmd {
        let _ = writeln!(out, "        - {}", q(a));
    }
    let _ = writeln!(out, "        workingDir: {}", q(PROJECT_DIR));
    out.push_str("        env:\n");
    let _ = writeln!(out, "        - name: HOME\n          value: {}", q(HOME));
    if indexes.is_some() {
        let _ = writeln!(
            out,
            "        - name: {INDEX_ENV}\n          valueFrom:\n            fieldRef:\n              fieldPath: \"metadata.annotations['batch.kubernetes.io/job-completion-index']\""
        );
    }
    let _ = writeln!(
        out,
        "        resources:\n          requests:\n            cpu: {}\n            memory: {}\n          limits:\n            memory: {}",
        q(&args.cpu),
        q(&args.memory),
        q(&args.memory)
    );
    out.push_str("        # mur writes its verdict here (at most 4 KB); the log tail when it could not.\n        terminationMessagePath: /dev/termination-log\n        terminationMessagePolicy: FallbackToLogsOnError\n");
    out.push_str("        securityContext:\n          allowPrivilegeEscalation: false\n          readOnlyRootFilesystem: true\n          capabilities:\n            drop: [\"ALL\"]\n");
    out.push_str("        volumeMounts:\n");
    let _ = writeln!(
        out,
        "        - name: home\n          mountPath: {}",
        q(HOME)
    );
    out.push_str("        - name: tmp\n          mountPath: \"/tmp\"\n");
    if args.records_claim.is_some() {
        let _ = writeln!(
            out,
            "        - name: records\n          mountPath: {}",
            q(&format!("{HOME}/.murmur/records"))
        );
    }
    if indexes.is_some() {
        let _ = writeln!(
            out,
            "        - name: tasks\n          mountPath: {}\n          readOnly: true",
            q(TASKS_DIR)
        );
    }
    out.push_str("      volumes:\n      - name: home\n        emptyDir: {}\n      - name: tmp\n        emptyDir: {}\n");
    if let Some(claim) = &args.records_claim {
        let _ = writeln!(
            out,
            "      - name: records\n        persistentVolumeClaim:\n          claimName: {}",
            q(claim)
        );
    }
    if indexes.is_some() {
        let _ = writeln!(
            out,
            "      - name: tasks\n        configMap:\n          name: {}",
            q(&format!("{name}-tasks"))
        );
    }
}

pub mod verdict;

#[cfg(test)]
mod tests;
