use std::io::Write;

use tokio::io::AsyncReadExt;

use super::*;

async fn read_all(pipe: &mut Pipe) -> String {
    let mut out = String::new();
    pipe.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn a_child_gets_its_args_env_folder_and_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let (r, mut w) = std::io::pipe().unwrap();
    w.write_all(b"handed over").unwrap();
    drop(w);
    let mut spawn = Spawn::new("/bin/sh");
    spawn
        .args([
            "-c",
            "echo \"$1 $SPAWN_TEST $(pwd)\"; cat <&5; echo err >&2; exit 3",
            "sh",
            "one",
        ])
        .env("SPAWN_TEST", "set")
        .env_remove("HOME")
        .current_dir(dir.path())
        .stderr(Stderr::Piped)
        .fd(r.into(), 5);
    let mut child = spawn.spawn(None).unwrap();
    let out = read_all(child.stdout.as_mut().unwrap()).await;
    let err = read_all(child.stderr.as_mut().unwrap()).await;
    let status = child.wait().await.unwrap();
    let here = dir.path().canonicalize().unwrap();
    assert_eq!(out, format!("one set {}\nhanded over", here.display()));
    assert_eq!(err, "err\n");
    assert_eq!(status.code(), Some(3));
    assert_eq!(child.id(), None, "reaped: no pid any more");
    assert_eq!(
        child.wait().await.unwrap().code(),
        Some(3),
        "the status stays"
    );
}

/// The `Sig…` line `field` of a /proc status text, as a mask.
fn sig_mask(status: &str, field: &str) -> u64 {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field} in {status}"));
    u64::from_str_radix(line.trim(), 16).unwrap()
}

/// The vfork-like clone blocks every signal in the spawning thread while it clones, so
/// no handler runs in the child on the parent's memory: the child still starts with
/// none blocked and SIGPIPE not ignored, and the thread gets its own mask back.
#[rstest::rstest]
#[tokio::test(flavor = "current_thread")]
async fn a_child_starts_with_no_signal_blocked_and_the_parent_keeps_its_mask(
    #[values(true, false)] clone3: bool,
) {
    let thread_mask = || {
        sig_mask(
            &std::fs::read_to_string("/proc/thread-self/status").unwrap(),
            "SigBlk:",
        )
    };
    let before = thread_mask();
    let mut child = Spawn::new("/bin/cat")
        .arg("/proc/self/status")
        .start_with(None, clone3)
        .unwrap()
        .started()
        .unwrap();
    assert_eq!(
        thread_mask(),
        before,
        "the spawning thread's mask is restored"
    );
    let status = read_all(child.stdout.as_mut().unwrap()).await;
    assert!(child.wait().await.unwrap().success());
    assert_eq!(sig_mask(&status, "SigBlk:"), 0, "{status}");
    let sigpipe = 1u64 << (libc::SIGPIPE - 1);
    assert_eq!(sig_mask(&status, "SigIgn:") & sigpipe, 0, "{status}");
}

#[tokio::test]
async fn a_program_that_cannot_run_is_an_error_not_a_child() {
    let err = Spawn::new("/nonexistent/program").spawn(None).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    let err = Spawn::new("sh").spawn(None).unwrap_err();
    assert!(err.to_string().contains("as a path"), "{err}");
    let err = Spawn::new("/bin/true")
        .fd(std::fs::File::open("/dev/null").unwrap().into(), 1)
        .spawn(None)
        .unwrap_err();
    assert!(err.to_string().contains("outside 3..=9"), "{err}");
}

#[rstest::rstest]
#[tokio::test]
async fn own_group_leads_a_group_and_start_kill_kills(#[values(true, false)] clone3: bool) {
    let mut child = Spawn::new("/bin/sleep")
        .arg("60")
        .own_group()
        .start_with(None, clone3)
        .unwrap()
        .started()
        .unwrap();
    let pid = child.id().unwrap() as i32;
    assert_eq!(
        nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid)))
            .unwrap()
            .as_raw(),
        pid
    );
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
}

/// The watcher's start: a session of its own, and stdout into a file, not a pipe.
#[rstest::rstest]
#[tokio::test]
async fn own_session_leads_a_session_and_stdout_to_writes_the_file(
    #[values(true, false)] clone3: bool,
) {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut child = Spawn::new("/bin/sh")
        .args(["-c", "echo written"])
        .own_session()
        .stdout_to(out.reopen().unwrap().into())
        .start_with(None, clone3)
        .unwrap()
        .started()
        .unwrap();
    assert!(child.stdout.is_none(), "no pipe when stdout goes to a file");
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    let session = nix::unistd::getsid(Some(pid));
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(0));
    // Read before the wait: until it is reaped, even an exited child keeps its session.
    assert_eq!(session.map(|s| s.as_raw()), Ok(pid.as_raw()));
    assert_eq!(std::fs::read_to_string(out.path()).unwrap(), "written\n");
}

/// Into a fresh cgroup v2 below this process's own, where one is writable (root here).
#[tokio::test]
#[allow(clippy::print_stderr)] // a skip says so

async fn a_child_starts_inside_the_cgroup_it_is_given() {
    let Some(own) = crate::cgroup::own_dir() else {
        eprintln!("SKIPPED: no cgroup v2 here");
        return;
    };
    let dir = own.join(format!("spawn-test-{}", std::process::id()));
    if std::fs::create_dir(&dir).is_err() {
        eprintln!("SKIPPED: no writable cgroup v2 here");
        return;
    }
    let fd = std::fs::File::open(&dir).unwrap();
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    // By clone3 into it, and by clone and a move (where seccomp refuses clone3).
    for clone3 in [true, false] {
        let mut child = Spawn::new("/bin/cat")
            .arg("/proc/self/cgroup")
            .start_with(Some(fd.as_fd()), clone3)
            .unwrap()
            .started()
            .unwrap();
        let out = read_all(child.stdout.as_mut().unwrap()).await;
        assert!(child.wait().await.unwrap().success());
        let line = out.lines().find(|l| l.starts_with("0::")).unwrap();
        assert!(
            line.ends_with(&format!("/{name}")),
            "clone3 {clone3}: {out}"
        );
    }
    std::fs::remove_dir(&dir).unwrap();
}
