//! `mur pack`, `mur install` and `mur ls`, run as the real binary with HOME in a
//! temporary folder.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::*;
use rstest::rstest;

#[test]
fn pack_writes_name_version_zip_and_prints_path_and_sha256() {
    let w = World::new();
    write_capsule(&w.path("src"), "coder", "1.2.0");
    let o = w.mur_in(&w.path("src")).arg("pack").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let zip = w.path("src/coder-1.2.0.mur.zip");
    let text = stdout(&o);
    assert!(text.contains("coder-1.2.0.mur.zip"), "{text}");
    let sha = text
        .lines()
        .find_map(|l| l.strip_prefix("sha256 "))
        .unwrap();
    let bytes = std::fs::read(&zip).unwrap();
    assert_eq!(sha, sha256_hex(&bytes));
    // Packing again skips the artifact it wrote and gives the same bytes.
    let again = pack(&w, &w.path("src"), &w.path("src"));
    assert_eq!(again, sha);
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// Two copies of one source made with different umasks and mtimes, in different
/// folders, pack to the same sha256.
#[test]
fn pack_is_deterministic_across_copies_umask_and_mtime() {
    let w = World::new();
    write_capsule(&w.path("a"), "coder", "1.2.0");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(
            "umask 077 && mkdir -p other/place && cp -R a other/place/b \
             && find other/place/b -exec touch -d '2001-02-03 04:05:06' {} +",
        )
        .current_dir(w.dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let b = w.path("other/place/b");
    let mode = std::fs::metadata(b.join("murmur.yaml"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the copy really has other modes");
    let sha_a = pack(&w, &w.path("a"), &w.path("out-a"));
    let sha_b = pack(&w, &b, &w.path("out-b"));
    assert_eq!(sha_a, sha_b);
    assert_eq!(
        std::fs::read(w.path("out-a/coder-1.2.0.mur.zip")).unwrap(),
        std::fs::read(w.path("out-b/coder-1.2.0.mur.zip")).unwrap()
    );
}

#[test]
fn install_from_a_zip_or_a_folder_gives_the_same_artifact() {
    let w = World::new();
    write_capsule(&w.path("src"), "coder", "1.2.0");
    let sha = pack(&w, &w.path("src"), &w.path("out"));
    let o = w
        .mur()
        .args(["install"])
        .arg(w.path("out/coder-1.2.0.mur.zip"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let stored = w.proj.join(".murmur/artifacts/local/coder/1.2.0.mur.zip");
    assert_eq!(
        stdout(&o),
        format!(
            "installed local/coder 1.2.0 into the project store: {}\n  sha256 {sha}\n",
            stored.display()
        )
    );
    assert_eq!(sha256_hex(&std::fs::read(&stored).unwrap()), sha);
    // The folder packs in memory to the same bytes: a no-op that says so.
    let o = w.mur().arg("install").arg(w.path("src")).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "local/coder 1.2.0 is already installed in the project store with the same bytes \
             (sha256 {sha}); nothing to do\n"
        )
    );
}

#[test]
fn install_several_then_ls_lists_project_store_first() {
    let w = World::new();
    for (name, version) in [("zed", "1.0.0"), ("alpha", "0.2.0")] {
        write_capsule(&w.path(name), name, version);
    }
    write_capsule(&w.path("g"), "coder", "1.2.0");
    let o = w
        .mur()
        .arg("install")
        .arg(w.path("zed"))
        .arg(w.path("alpha"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = w
        .mur()
        .args(["install", "--global"])
        .arg(w.path("g"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        w.home
            .join(".murmur/artifacts/local/coder/1.2.0.mur.zip")
            .is_file()
    );
    let o = w.mur().args(["ls", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let items: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let rows: Vec<String> = items
        .iter()
        .map(|i| format!("{} {} {}", i["store"], i["name"], i["version"]).replace('"', ""))
        .collect();
    assert_eq!(
        rows,
        [
            "project local/alpha 0.2.0",
            "project local/zed 1.0.0",
            "global local/coder 1.2.0"
        ]
    );
    for i in &items {
        let bytes = std::fs::read(i["path"].as_str().unwrap()).unwrap();
        assert_eq!(i["sha256"].as_str().unwrap(), sha256_hex(&bytes));
    }
    let o = w.mur().arg("ls").output().unwrap();
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("STORE"), "{text}");
    assert!(
        lines[1].starts_with("project") && lines[1].contains("local/alpha"),
        "{text}"
    );
    assert!(
        lines[3].starts_with("global") && lines[3].contains("local/coder"),
        "{text}"
    );
}

#[test]
fn other_bytes_are_refused_naming_both_sha256s_unless_forced() {
    let w = World::new();
    write_capsule(&w.path("src"), "coder", "1.2.0");
    w.mur().arg("install").arg(w.path("src")).assert().success();
    let first = w.stores_snapshot();
    std::fs::write(w.path("src/docs/notes.md"), "changed\n").unwrap();
    let new_sha = pack(&w, &w.path("src"), &w.path("out"));
    let o = w.mur().arg("install").arg(w.path("src")).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("error[E-STO-003]"), "{err}");
    let old_sha = sha256_hex(&first.iter().find(|(p, _)| p.is_file()).unwrap().1);
    assert!(err.contains(&old_sha) && err.contains(&new_sha), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(w.stores_snapshot(), first);
    let o = w
        .mur()
        .args(["install", "--force"])
        .arg(w.path("src"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("was {old_sha}")),
        "{}",
        stdout(&o)
    );
    let stored = w.proj.join(".murmur/artifacts/local/coder/1.2.0.mur.zip");
    assert_eq!(sha256_hex(&std::fs::read(stored).unwrap()), new_sha);
}

/// What a killed install leaves behind (a dot-named partial file) is never listed or
/// found, and a new install goes through.
#[test]
fn a_leftover_temporary_file_is_ignored() {
    let w = World::new();
    let dir = w.proj.join(".murmur/artifacts/local/coder");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(".tmpXyZ123.partial"), b"PK\x03\x04 half").unwrap();
    let o = w.mur().args(["ls", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "[]");
    write_capsule(&w.path("src"), "coder", "1.2.0");
    w.mur().arg("install").arg(w.path("src")).assert().success();
    let o = w.mur().args(["ls", "--json"]).output().unwrap();
    let items: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(items.len(), 1, "{items:?}");
}

/// One case per way an install can fail. Each names its code, and leaves both stores
/// exactly as they were.
#[rstest]
#[case::corrupt_zip("corrupt", "E-PAK-004")]
#[case::truncated_zip("truncated", "E-PAK-004")]
#[case::zip_slip_parent("slip-parent", "E-PAK-005")]
#[case::zip_slip_absolute("slip-absolute", "E-PAK-005")]
#[case::zip_bomb("bomb", "E-PAK-006")]
#[case::no_root_manifest("no-manifest", "E-PAK-007")]
#[case::packed_manifest_does_not_parse("bad-manifest", "E-PAK-008")]
#[case::no_such_path("missing-path", "E-PAK-001")]
#[case::folder_without_manifest("not-a-capsule", "E-PAK-001")]
#[case::global_store_missing("no-home", "E-STO-001")]
#[case::store_path_is_a_file("store-is-a-file", "E-STO-001")]
#[case::read_only_store("read-only", "E-STO-002")]
#[case::other_bytes_installed("conflict", "E-STO-003")]
#[case::second_of_several_is_corrupt("second-corrupt", "E-PAK-004")]
fn install_faults(#[case] fault: &str, #[case] code: &str) {
    let w = World::new();
    write_capsule(&w.path("good"), "coder", "1.2.0");
    let file = w.path("it.mur.zip");
    let good_zip = {
        pack(&w, &w.path("good"), &w.path("packed"));
        std::fs::read(w.path("packed/coder-1.2.0.mur.zip")).unwrap()
    };
    let mut args: Vec<std::path::PathBuf> = vec![file.clone()];
    let mut global = false;
    let mut unprivileged = false;
    match fault {
        "corrupt" => std::fs::write(&file, b"PK\x03\x04 not really a zip").unwrap(),
        "truncated" => std::fs::write(&file, &good_zip[..good_zip.len() - 30]).unwrap(),
        "slip-parent" => std::fs::write(&file, zip_with_entry_named("../../evil.sh")).unwrap(),
        "slip-absolute" => std::fs::write(&file, zip_with_entry_named("/tmp/evil.sh")).unwrap(),
        "bomb" => std::fs::write(&file, zip_bomb()).unwrap(),
        "no-manifest" => std::fs::write(&file, zip_of(&[("readme.md", b"hi")])).unwrap(),
        "bad-manifest" => {
            std::fs::write(&file, zip_of(&[("murmur.yaml", b"name: [coder\n")])).unwrap()
        }
        "missing-path" => args = vec![w.path("nowhere.mur.zip")],
        "not-a-capsule" => args = vec![w.path("packed")],
        "no-home" => {
            std::fs::write(&file, &good_zip).unwrap();
            std::fs::remove_dir(&w.home).unwrap();
            global = true;
        }
        "store-is-a-file" => {
            std::fs::write(&file, &good_zip).unwrap();
            std::fs::write(w.proj.join(".murmur"), b"not a folder").unwrap();
        }
        "read-only" => {
            std::fs::write(&file, &good_zip).unwrap();
            let store = w.proj.join(".murmur/artifacts");
            std::fs::create_dir_all(&store).unwrap();
            unprivileged = true;
        }
        "conflict" => {
            w.mur()
                .arg("install")
                .arg(w.path("good"))
                .assert()
                .success();
            std::fs::write(w.path("good/docs/notes.md"), "other\n").unwrap();
            args = vec![w.path("good")];
        }
        "second-corrupt" => {
            std::fs::write(&file, b"garbage").unwrap();
            args = vec![w.path("good"), file.clone()];
        }
        other => unreachable!("{other}"),
    }
    let before = w.stores_snapshot();
    let mut cmd = if unprivileged {
        let c = w.mur_unprivileged();
        // After the chown: the store itself is read-only for its owner too.
        let store = w.proj.join(".murmur/artifacts");
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o555)).unwrap();
        c
    } else {
        w.mur()
    };
    cmd.arg("install");
    if global {
        cmd.arg("--global");
    }
    let o = cmd.args(&args).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("error[{code}]")), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(w.stores_snapshot(), before, "the stores changed: {err}");
    assert!(!w.path("evil.sh").exists() && !Path::new("/tmp/evil.sh").exists());
    if fault == "no-home" {
        assert!(!w.home.exists(), "HOME was made");
    }
}

#[test]
fn pack_refuses_a_symlink_out_of_the_capsule_and_writes_nothing() {
    let w = World::new();
    write_capsule(&w.path("src"), "coder", "1.2.0");
    std::fs::write(w.path("secret.txt"), "s3cret").unwrap();
    std::os::unix::fs::symlink(w.path("secret.txt"), w.path("src/docs/secret.txt")).unwrap();
    let o = w
        .mur()
        .arg("pack")
        .arg(w.path("src"))
        .arg("--out")
        .arg(w.path("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("error[E-PAK-002]"), "{err}");
    assert!(err.contains("docs/secret.txt"), "{err}");
    assert!(!w.path("out").exists());
}

#[test]
fn ls_refuses_an_unreadable_store() {
    let w = World::new();
    write_capsule(&w.path("src"), "coder", "1.2.0");
    w.mur().arg("install").arg(w.path("src")).assert().success();
    let mut cmd = w.mur_unprivileged();
    std::fs::set_permissions(
        w.proj.join(".murmur/artifacts"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let o = cmd.arg("ls").output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("error[E-STO-001]"), "{}", stderr(&o));
}

/// A real kill in the middle of an install: with RLIMIT_FSIZE below the artifact's
/// size, the kernel kills `mur` (SIGXFSZ) while it writes the temporary file. The
/// store then holds no artifact, only the dot-named leftover, which `ls` ignores, and
/// the next install goes through.
#[test]
#[allow(unsafe_code, reason = "a pre_exec hook that lowers the child's limits")]
fn an_install_killed_while_writing_leaves_no_artifact() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let w = World::new();
    write_capsule(&w.path("src"), "coder", "1.2.0");
    // 256 KiB that deflate cannot shrink.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..256 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(w.path("src/noise.bin"), noise).unwrap();
    let mut cmd = w.mur();
    cmd.arg("install").arg(w.path("src"));
    // SAFETY: only async-signal-safe calls (setrlimit) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let fsize = libc::rlimit {
                rlim_cur: 64 * 1024,
                rlim_max: 64 * 1024,
            };
            let core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &fsize) != 0
                || libc::setrlimit(libc::RLIMIT_CORE, &core) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let status = cmd.status().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGXFSZ), "{status:?}");
    let dir = w.proj.join(".murmur/artifacts/local/coder");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].starts_with('.') && left[0].ends_with(".partial"),
        "{left:?}"
    );
    let o = w.mur().args(["ls", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "[]");
    let o = w.mur().arg("install").arg(w.path("src")).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.join("1.2.0.mur.zip").is_file());
}
