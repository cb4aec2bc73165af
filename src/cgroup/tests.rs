use std::os::fd::AsFd;

use super::*;
use crate::spawn::Via;

const HYBRID: &str = "\
25 1 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
35 25 0:30 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw
36 25 0:31 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer
92 77 0:38 /docker/abc /sys/fs/cgroup/x\\040y rw - cgroup2 cgroup2 rw
93 77 0:38 /docker/abc /mnt/cg rw - cgroup2 cgroup2 rw
";

#[test]
fn cgroup2_mounts_are_read_from_mountinfo() {
    assert_eq!(
        cgroup2_mounts(HYBRID),
        vec![
            ("/".to_string(), PathBuf::from("/sys/fs/cgroup/unified")),
            ("/docker/abc".to_string(), PathBuf::from("/mnt/cg")),
        ]
    );
}

#[test]
fn a_cgroup_path_resolves_below_its_mount_s_root_only() {
    let point = Path::new("/mnt/cg");
    assert_eq!(
        resolve("/", point, "/a/b"),
        Some(PathBuf::from("/mnt/cg/a/b"))
    );
    assert_eq!(resolve("/", point, "/"), Some(PathBuf::from("/mnt/cg")));
    assert_eq!(
        resolve("/docker/abc", point, "/docker/abc/murmur-frm_1"),
        Some(PathBuf::from("/mnt/cg/murmur-frm_1"))
    );
    assert_eq!(
        resolve("/docker/abc", point, "/docker/abc"),
        Some(PathBuf::from("/mnt/cg"))
    );
    assert_eq!(resolve("/docker/abc", point, "/docker/abcd"), None);
    assert_eq!(resolve("/docker/abc", point, "/other"), None);
}

#[test]
fn the_watcher_refuses_a_cgroup_not_named_for_a_formation() {
    let dir = tempfile::tempdir().unwrap();
    let args = WatchArgs {
        launcher: format!("{}:1", std::process::id()),
        cgroup: dir.path().to_path_buf(),
    };
    let err = watch(&args).unwrap_err();
    assert!(err.to_string().contains("E-RUN-008"), "{err}");
}

/// Into a fresh cgroup v2 below this process's own, where one is writable (root here).
#[tokio::test]
#[allow(clippy::print_stderr)] // a skip says so
async fn a_child_starts_inside_the_cgroup_it_is_given() {
    let Some(own) = own_dir() else {
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
    for via in [Via::VforkClone3, Via::ForkClone3, Via::Clone] {
        let mut child = crate::spawn::Spawn::new("/bin/cat")
            .arg("/proc/self/cgroup")
            .start_with(Some(fd.as_fd()), via)
            .unwrap()
            .started()
            .unwrap();
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(child.stdout.as_mut().unwrap(), &mut out)
            .await
            .unwrap();
        assert!(child.wait().await.unwrap().success());
        let line = out.lines().find(|l| l.starts_with("0::")).unwrap();
        assert!(line.ends_with(&format!("/{name}")), "{via:?}: {out}");
    }
    std::fs::remove_dir(&dir).unwrap();
}
