use std::io::Write;

use tokio::io::AsyncReadExt;

use super::*;

async fn read_all(pipe: &mut Pipe) -> String {
    let mut out = String::new();
    pipe.read_to_string(&mut out).await.unwrap();
    out
}

#[rstest::rstest]
#[tokio::test]
async fn a_child_gets_its_args_env_folder_and_descriptors(
    #[values(Via::VforkClone3, Via::ForkClone3, Via::Clone)] via: Via,
) {
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
    let mut child = spawn.start_with(None, via).unwrap().started().unwrap();
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
    #[values(Via::VforkClone3, Via::ForkClone3, Via::Clone)] via: Via,
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
        .start_with(None, via)
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

#[rstest::rstest]
#[tokio::test]
async fn a_program_that_cannot_run_is_an_error_not_a_child(
    #[values(Via::VforkClone3, Via::ForkClone3, Via::Clone)] via: Via,
) {
    let err = Spawn::new("/nonexistent/program")
        .start_with(None, via)
        .and_then(Starting::started)
        .unwrap_err();
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
async fn own_group_leads_a_group_and_start_kill_kills(
    #[values(Via::VforkClone3, Via::ForkClone3, Via::Clone)] via: Via,
) {
    let mut child = Spawn::new("/bin/sleep")
        .arg("60")
        .own_group()
        .start_with(None, via)
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
    #[values(Via::VforkClone3, Via::ForkClone3, Via::Clone)] via: Via,
) {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut child = Spawn::new("/bin/sh")
        .args(["-c", "echo written"])
        .own_session()
        .stdout_to(out.reopen().unwrap().into())
        .start_with(None, via)
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

/// The harness's and the shell's start: an environment of only what is set, a piped
/// stdin, and a subreaper that keeps what its children orphan.
#[rstest::rstest]
#[tokio::test]
async fn env_clear_stdin_piped_and_a_subreaper_that_adopts_orphans(
    #[values(Via::VforkClone3, Via::ForkClone3, Via::Clone)] via: Via,
) {
    use tokio::io::AsyncWriteExt;
    // The orphan's parent, read once the subshell that started it has exited.
    let script = "read line; echo \"$line $(env | sort | tr '\\n' ' ')\"; \
        p=$( (/bin/sleep 30 >/dev/null 2>&1 & echo $!) ); \
        read _ _ _ ppid _ < /proc/$p/stat; kill $p; [ \"$ppid\" = $$ ] && echo adopted";
    let mut child = Spawn::new("/bin/sh")
        .args(["-c", script])
        .env_clear()
        .env("ONLY", "this")
        .stdin_piped()
        .parent_death_signal()
        .child_subreaper()
        .own_group()
        .start_with(None, via)
        .unwrap()
        .started()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n").await.unwrap();
    drop(stdin);
    let out = read_all(child.stdout.as_mut().unwrap()).await;
    assert!(child.wait().await.unwrap().success(), "{out}");
    let mut lines = out.lines();
    let env = lines.next().unwrap();
    // sh itself sets PWD (and may set SHLVL, _); nothing of this process's own.
    assert!(
        env.starts_with("hello ") && env.contains("ONLY=this"),
        "{out}"
    );
    assert!(!env.contains("PATH=") && !env.contains("HOME="), "{out}");
    assert_eq!(lines.next(), Some("adopted"), "{out}");
}

/// The parent-death signal: a child whose spawning thread ends is SIGKILLed.
#[rstest::rstest]
#[test]
fn a_child_dies_with_the_thread_that_started_it(
    #[values(Via::VforkClone3, Via::ForkClone3, Via::Clone)] via: Via,
) {
    let pid = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let child = Spawn::new("/bin/sleep")
                .arg("60")
                .parent_death_signal()
                .start_with(None, via)
                .unwrap()
                .started()
                .unwrap();
            child.id().unwrap()
        })
    })
    .join()
    .unwrap();
    let status = wait_blocking(pid as i32).unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
}

#[test]
fn the_test_setting_names_the_fork_like_paths() {
    assert_eq!(Via::parse("fork-clone3"), Some(Via::ForkClone3));
    assert_eq!(Via::parse(" clone "), Some(Via::Clone));
    assert_eq!(Via::parse("vfork-clone3"), Some(Via::VforkClone3));
    for off in ["", "fork", "clone4"] {
        assert_eq!(Via::parse(off), None, "{off}");
    }
}

#[test]
fn a_program_is_found_as_a_shell_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    // A name with a `/` is taken from the folder, found or not.
    assert_eq!(
        find_program("./harness", here, "/bin"),
        Some(here.join("harness"))
    );
    // A bare name: the first executable of that name along the path.
    assert_eq!(
        find_program("sh", here, "/nonexistent:/bin:/usr/bin"),
        Some(std::path::PathBuf::from("/bin/sh"))
    );
    std::fs::write(here.join("not-executable"), "").unwrap();
    assert_eq!(find_program("not-executable", here, "."), None);
    assert_eq!(find_program("no-such-program", here, "/bin"), None);
    assert_eq!(find_program("", here, "/bin"), None);
}

/// Tier `netns` through each clone path: the child is in a network namespace of its
/// own (not mur's), maps its uid to itself, and what it starts shares the namespace.
#[rstest::rstest]
#[tokio::test]
async fn a_netns_child_has_a_namespace_of_its_own_on_every_clone_path(
    #[values(Via::VforkClone3, Via::ForkClone3, Via::Clone)] via: Via,
) {
    use tokio::io::AsyncReadExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in ["work", "home/.murmur"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let files = crate::manifest::Files::default();
    let plan = crate::confine::Plan::new(&crate::confine::Inputs {
        workdir: &root.join("work"),
        session_dirs: vec![],
        capsule_read: vec![],
        files: &files,
        user_home: &root.join("home"),
        murmur_home: &root.join("home/.murmur"),
        network: vec![],
    })
    .unwrap();
    let proxy = crate::confine::proxy::Proxy::start(vec![], std::sync::Arc::new(|_: &_| {}))
        .await
        .unwrap();
    let prepared = plan
        .prepare_for(&proxy, crate::confine::net::Tier::Netns)
        .unwrap();
    assert_eq!(prepared.tier(), crate::confine::net::Tier::Netns);
    let mut spawn = Spawn::new("/bin/sh");
    spawn
        .args([
            "-c",
            "readlink /proc/self/ns/net; sh -c 'readlink /proc/self/ns/net'; cat /proc/self/uid_map",
        ])
        .confine(std::sync::Arc::new(prepared));
    let mut child = spawn.start_with(None, via).unwrap().started().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    assert!(child.wait().await.unwrap().success(), "{out}");
    let ours = std::fs::read_link("/proc/self/ns/net").unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_ne!(lines[0], ours.to_str().unwrap(), "a namespace of its own");
    assert_eq!(lines[0], lines[1], "what it starts shares it");
    let uid = rustix::process::getuid().as_raw();
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        [uid.to_string(), uid.to_string(), "1".into()],
        "the uid maps to itself"
    );
}
