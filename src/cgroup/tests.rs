use super::*;

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
