//! Every file and folder mur makes under ~/.murmur is owner-only: folders 0700,
//! files 0600 (an executable of an unpacked capsule 0700). One world uses every
//! feature that writes there: install into both stores, pack, lock, a formation with
//! a peer (formation folder, marker, peer folder, running records, traces), and a lone
//! `mur run --task`; the walk happens while the formation runs and after it ends.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The one clean-environment mur (crates/mur-test), with this world's HOME.
fn mur(home: &Path, cwd: &Path) -> Command {
    let mut cmd = crate::support::mur();
    cmd.env("HOME", home).current_dir(cwd).stdin(Stdio::null());
    cmd
}

fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Each path under `root` whose mode is not owner-only, with its mode.
fn not_owner_only(root: &Path) -> Vec<(PathBuf, u32)> {
    let mut wrong = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        let executable_file = meta.is_file() && mode & 0o100 != 0;
        let expected = if meta.is_dir() || executable_file {
            0o700
        } else {
            0o600
        };
        if mode != expected {
            wrong.push((p.clone(), mode));
        }
        if meta.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    wrong.sort();
    wrong
}

fn kinds_under(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        if let Ok(entries) = std::fs::read_dir(&p) {
            for e in entries {
                let path = e.unwrap().path();
                names.push(path.file_name().unwrap().to_string_lossy().into_owned());
                stack.push(path);
            }
        }
    }
    names
}

#[test]
fn everything_under_dot_murmur_is_owner_only() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    ok(mur(&home, &root).args(["new", "--roster", "team"]));
    let project = root.join("team");
    // An executable file in a capsule, so the unpacked copy holds one.
    let script = project.join("helper/run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    ok(mur(&home, &project).args(["install", "lead", "helper"]));
    ok(mur(&home, &project).args(["install", "--global", "lead"]));
    ok(mur(&home, &project.join("lead")).arg("pack"));
    ok(mur(&home, &project).arg("lock"));
    ok(mur(&home, &project).args(["run", "--roster", "--task", "Say hello."]));

    // While a formation runs: its running records and tokens are there too.
    let mut launcher = crate::support::KillOnDrop::pid(
        mur(&home, &project)
            .args(["run", "--roster"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let running = home.join(".murmur/running");
    let until = Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(&running).map(|d| d.count()).unwrap_or(0) < 2 {
        assert!(Instant::now() < until, "no running records appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    let live = not_owner_only(&home.join(".murmur"));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(launcher.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    launcher.wait().unwrap();
    assert!(live.is_empty(), "not owner-only while running: {live:#?}");

    // A lone session with a task, of a capsule from the global store.
    let helper = std::fs::read_to_string(project.join("helper/murmur.yaml")).unwrap();
    let field = |key: &str| {
        helper
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap()
            .trim()
            .to_string()
    };
    let (name, version) = (field("name:"), field("version:"));
    ok(mur(&home, &project).args([
        "run",
        "--capsule",
        &format!("local/{name}"),
        "--capsule-version",
        &version,
        "--task",
        "Say hello.",
    ]));

    let murmur = home.join(".murmur");
    let seen = kinds_under(&murmur);
    for expected in [
        "artifacts",
        "cache",
        "records",
        "running",
        "formations",
        "formation.json",
        "trace.jsonl",
        "MURMUR.md",
        "result.txt",
        "run.sh",
    ] {
        assert!(
            seen.iter().any(|s| s == expected),
            "the run made no {expected}: {seen:?}"
        );
    }
    let after = not_owner_only(&murmur);
    assert!(after.is_empty(), "not owner-only: {after:#?}");
    // The project store is owner-only as well.
    let project_store = not_owner_only(&project.join(".murmur"));
    assert!(
        project_store.is_empty(),
        "not owner-only: {project_store:#?}"
    );
}

/// Issue 43 item 9: a formation whose entry member runs a native harness that
/// delegates and runs a shell command; then every file under ~/.murmur is 0600 and
/// every folder 0700 (logs/harness.log and logs/delegate-*.log were 0644).
#[test]
#[allow(unsafe_code, reason = "a pre_exec hook that sets the child's umask")]
fn a_formation_with_a_harness_a_delegation_and_a_shell_call_leaves_everything_owner_only() {
    let w = crate::support::World::new();
    w.install("kid", "", None);
    // In the work folder: a confined harness writes nowhere else.
    let out = w.proj.display();
    let harness = format!(
        "IFS= read -r task\n\
         echo 'a line of the harness on stderr' >&2\n\
         echo '{{\"type\":\"tool_call\",\"id\":\"s1\",\"name\":\"shell\",\"arguments\":{{\"command\":\"echo made > \\\"$TMPDIR/by-shell\\\"\"}}}}'\n\
         IFS= read -r result\nprintf '%s\\n' \"$result\" > '{out}/shell.json'\n\
         echo '{{\"type\":\"tool_call\",\"id\":\"d1\",\"name\":\"delegate\",\"arguments\":{{\"capsule\":\"local/kid\",\"version\":\"1.0.0\",\"task\":\"Say hello.\"}}}}'\n\
         IFS= read -r result\nprintf '%s\\n' \"$result\" > '{out}/delegate.json'\n\
         echo '{{\"type\":\"message\",\"text\":\"waiting\"}}'\n\
         IFS= read -r reply\nprintf '%s\\n' \"$reply\" > '{out}/reply.json'\n\
         echo '{{\"type\":\"message\",\"text\":\"done\"}}'\n"
    );
    w.install(
        "boss",
        "capabilities:\n  shell: {}\n  spawn:\n    allow: [local/kid]\n",
        Some(&harness),
    );
    std::fs::write(
        w.proj.join("roster.yaml"),
        "roster_version: 1\nmembers:\n  - name: boss\n    capsule: local/boss\n    version: 1.0.0\n    entry: true\n",
    )
    .unwrap();
    // A common umask, so a file made with the default mode would show as 0644.
    let mut run = w.mur();
    run.args(["run", "--roster", "--task", "go"]);
    // SAFETY: umask is async-signal-safe and the closure touches nothing else.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut run, || {
            libc::umask(0o022);
            Ok(())
        });
    }
    ok(&mut run);
    let read = |name: &str| std::fs::read_to_string(w.proj.join(name)).unwrap();
    assert!(
        read("shell.json").contains("\"is_error\":false"),
        "{}",
        read("shell.json")
    );
    assert!(
        read("delegate.json").contains("\"is_error\":false"),
        "{}",
        read("delegate.json")
    );
    assert!(
        read("reply.json").contains("(completed)"),
        "{}",
        read("reply.json")
    );
    let murmur = w.home.join(".murmur");
    let seen = kinds_under(&murmur);
    for expected in [
        "harness.log",
        "runtime",
        "by-shell",
        "trace.jsonl",
        "result.txt",
    ] {
        assert!(
            seen.iter().any(|s| s == expected),
            "no {expected}: {seen:?}"
        );
    }
    assert!(
        seen.iter()
            .any(|s| s.starts_with("delegate-") && s.ends_with(".log")),
        "no delegate log: {seen:?}"
    );
    // The shell command's own file is the command's (the umask gave it 0644), not
    // mur's: the one exception, and it shows the umask did bind.
    let all = not_owner_only(&murmur);
    assert!(
        all.iter()
            .any(|(p, m)| p.ends_with("by-shell") && *m == 0o644),
        "{all:#?}"
    );
    let wrong: Vec<_> = all
        .into_iter()
        .filter(|(p, _)| !p.ends_with("by-shell"))
        .collect();
    assert!(wrong.is_empty(), "not owner-only: {wrong:#?}");
}
