//! Packing and archive checks. Helpers here are shared with the store and lock tests.

use std::io::Write;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use rstest::rstest;
use zip::write::SimpleFileOptions;

use super::archive::check_with;
use super::*;
use crate::catalogue::{self, Code};

// The harness's capsule and zip makers: bytes and files only, no type of this build.
use mur_test::{manifest_text, patch, write_capsule, zip_of};

/// The bytes of a capsule packed from a fresh folder.
pub(crate) fn packed(name: &str, version: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    write_capsule(dir.path(), name, version);
    pack_dir(dir.path()).unwrap().bytes
}

fn names(bytes: &[u8]) -> Vec<String> {
    let archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    archive
        .file_names()
        .map(|n| n.unwrap().into_owned())
        .collect()
}

fn code_of(result: Result<impl std::fmt::Debug>) -> Code {
    result.expect_err("expected a refusal").code
}

#[test]
fn packs_sorted_files_with_fixed_modes_and_times() {
    let dir = tempfile::tempdir().unwrap();
    write_capsule(dir.path(), "coder", "1.2.0");
    let p = pack_dir(dir.path()).unwrap();
    assert_eq!(p.file_name(), "coder-1.2.0.mur.zip");
    assert_eq!(p.sha256, crate::ids::Sha256::of(&p.bytes));
    let mut archive = zip::ZipArchive::new(Cursor::new(&p.bytes[..])).unwrap();
    let mut seen = Vec::new();
    for i in 0..archive.len() {
        let f = archive.by_index(i).unwrap();
        assert_eq!(f.last_modified(), Some(DateTime::default()));
        assert_eq!(f.extra_data().map(|d| d.len()).unwrap_or(0), 0);
        seen.push((
            f.name().unwrap().into_owned(),
            f.unix_mode().unwrap() & 0o777,
        ));
    }
    assert_eq!(
        seen,
        [
            ("docs/notes.md".to_string(), 0o644),
            ("murmur.yaml".to_string(), 0o644),
            ("run.sh".to_string(), 0o755),
        ]
    );
}

#[test]
fn same_files_give_the_same_bytes_whatever_the_mtime_and_modes() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    write_capsule(a.path(), "coder", "1.2.0");
    write_capsule(b.path(), "coder", "1.2.0");
    // b: as a umask of 077 and another checkout time would leave it.
    for (file, mode) in [
        ("murmur.yaml", 0o600),
        ("docs/notes.md", 0o600),
        ("run.sh", 0o700),
    ] {
        let path = b.path().join(file);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    std::fs::set_permissions(
        b.path().join("docs"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    assert_eq!(
        pack_dir(a.path()).unwrap().sha256,
        pack_dir(b.path()).unwrap().sha256
    );
}

/// Pins the exact bytes: a zip crate upgrade that changes them changes every
/// artifact's sha256, which must be a conscious decision.
#[test]
fn golden_sha256() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("murmur.yaml"),
        manifest_text("golden", "1.0.0"),
    )
    .unwrap();
    std::fs::write(dir.path().join("b.txt"), "bee\n".repeat(100)).unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    assert_eq!(
        pack_dir(dir.path()).unwrap().sha256,
        "9f7de2652d9dc149052a9a7f268777c716d69359af4d779af88464f6166e0ee8"
    );
}

#[test]
fn skips_vcs_state_build_output_and_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    write_capsule(dir.path(), "coder", "1.2.0");
    for d in [
        ".git/objects",
        ".murmur/artifacts",
        "target/debug",
        "tools/t/target",
    ] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
        std::fs::write(dir.path().join(d).join("junk"), "x").unwrap();
    }
    std::fs::write(dir.path().join("coder-1.1.0.mur.zip"), "old").unwrap();
    // Links out of the folder under skipped names are skipped, not refused.
    let elsewhere = tempfile::tempdir().unwrap();
    symlink(elsewhere.path(), dir.path().join("docs/target")).unwrap();
    symlink(
        elsewhere.path().join("x.mur.zip"),
        dir.path().join("x.mur.zip"),
    )
    .unwrap();
    std::fs::write(dir.path().join("tools/t/lib.rs"), "//").unwrap();
    std::fs::write(dir.path().join("tools/target"), "a file named target stays").unwrap();
    let p = pack_dir(dir.path()).unwrap();
    assert_eq!(
        names(&p.bytes),
        [
            "docs/notes.md",
            "murmur.yaml",
            "run.sh",
            "tools/t/lib.rs",
            "tools/target"
        ]
    );
}

#[test]
fn follows_symlinks_that_stay_inside() {
    let dir = tempfile::tempdir().unwrap();
    write_capsule(dir.path(), "coder", "1.2.0");
    symlink("docs/notes.md", dir.path().join("NOTES.md")).unwrap();
    symlink("docs", dir.path().join("more")).unwrap();
    let p = pack_dir(dir.path()).unwrap();
    assert_eq!(
        names(&p.bytes),
        [
            "NOTES.md",
            "docs/notes.md",
            "more/notes.md",
            "murmur.yaml",
            "run.sh"
        ]
    );
}

#[rstest]
#[case::symlink_out_of_the_folder("escape", catalogue::E_PAK_002)]
#[case::dangling_symlink("dangling", catalogue::E_PAK_002)]
#[case::symlink_loop("loop", catalogue::E_PAK_002)]
#[case::fifo("fifo", catalogue::E_PAK_003)]
#[case::backslash_in_a_name("backslash", catalogue::E_PAK_003)]
#[case::no_manifest("no-manifest", catalogue::E_PAK_001)]
#[case::not_a_folder("not-a-folder", catalogue::E_PAK_001)]
#[case::manifest_does_not_parse("bad-manifest", catalogue::E_MAN_001)]
#[case::version_not_exact("bad-version", catalogue::E_MAN_005)]
#[case::zip_bomb_source("bomb", catalogue::E_PAK_006)]
fn pack_faults(#[case] fault: &str, #[case] code: Code) {
    let outside = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cap");
    write_capsule(&dir, "coder", "1.2.0");
    let mut target = dir.clone();
    match fault {
        "escape" => {
            std::fs::write(outside.path().join("secret"), "s").unwrap();
            symlink(outside.path().join("secret"), dir.join("secret")).unwrap();
        }
        "dangling" => symlink("nowhere", dir.join("gone")).unwrap(),
        "loop" => symlink("..", dir.join("docs/up")).unwrap(),
        "fifo" => nix::unistd::mkfifo(&dir.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap(),
        "backslash" => std::fs::write(dir.join("a\\b"), "x").unwrap(),
        "no-manifest" => std::fs::remove_file(dir.join("murmur.yaml")).unwrap(),
        "not-a-folder" => target = dir.join("run.sh"),
        "bad-manifest" => std::fs::write(dir.join("murmur.yaml"), "name: [coder\n").unwrap(),
        "bad-version" => {
            std::fs::write(dir.join("murmur.yaml"), manifest_text("coder", "1/2")).unwrap()
        }
        "bomb" => std::fs::write(dir.join("zeros.bin"), vec![0u8; 4 << 20]).unwrap(),
        other => unreachable!("{other}"),
    }
    let err = pack_dir(&target).expect_err("expected a refusal");
    assert_eq!(err.code, code, "{err}");
    assert!(err.file.is_some(), "{err}");
}

#[rstest]
#[case::not_a_zip(b"this is not a zip".to_vec(), catalogue::E_PAK_004)]
#[case::truncated({ let b = packed("coder", "1.2.0"); b[..b.len() / 2].to_vec() }, catalogue::E_PAK_004)]
#[case::bad_crc(patch(zip_of(&[("murmur.yaml", manifest_text("coder", "1.2.0").as_bytes())]), b"A test", b"B test"), catalogue::E_PAK_004)]
#[case::duplicate_names(patch(zip_of(&[("murmur.yaml", manifest_text("c", "1").as_bytes()), ("xa", b"1"), ("xb", b"2")]), b"xb", b"xa"), catalogue::E_PAK_004)]
#[case::file_and_folder(zip_of(&[("murmur.yaml", manifest_text("c", "1").as_bytes()), ("a", b"1"), ("a/b", b"2")]), catalogue::E_PAK_004)]
#[case::parent_dir(patch(zip_of(&[("murmur.yaml", manifest_text("c", "1").as_bytes()), ("xx/evil", b"1")]), b"xx/evil", b"../evil"), catalogue::E_PAK_005)]
#[case::absolute_path(patch(zip_of(&[("murmur.yaml", manifest_text("c", "1").as_bytes()), ("xetc/passwd", b"1")]), b"xetc/passwd", b"/etc/passwd"), catalogue::E_PAK_005)]
#[case::backslash(zip_of(&[("murmur.yaml", manifest_text("c", "1").as_bytes()), ("..\\evil", b"1")]), catalogue::E_PAK_005)]
#[case::drive_letter(zip_of(&[("murmur.yaml", manifest_text("c", "1").as_bytes()), ("C:evil", b"1")]), catalogue::E_PAK_005)]
#[case::symlink_entry(symlink_zip(), catalogue::E_PAK_005)]
#[case::ratio_bomb(deflated_zeros(4 << 20), catalogue::E_PAK_006)]
#[case::no_manifest(zip_of(&[("readme.md", b"hi")]), catalogue::E_PAK_007)]
#[case::manifest_not_at_root(zip_of(&[("cap/murmur.yaml", manifest_text("c", "1").as_bytes())]), catalogue::E_PAK_007)]
#[case::manifest_does_not_parse(zip_of(&[("murmur.yaml", b"name: [c\n")]), catalogue::E_PAK_008)]
fn archive_faults(#[case] bytes: Vec<u8>, #[case] code: Code) {
    let err = check(&bytes, Path::new("x.mur.zip")).expect_err("expected a refusal");
    assert_eq!(err.code, code, "{err}");
    assert!(err.file.is_some(), "{err}");
    assert!(!catalogue::lookup(code.as_str()).unwrap().hint.is_empty());
}

fn symlink_zip() -> Vec<u8> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default();
    zip.start_file("murmur.yaml", options).unwrap();
    zip.write_all(manifest_text("c", "1").as_bytes()).unwrap();
    zip.add_symlink("link", "/etc/passwd", options).unwrap();
    zip.finish().unwrap().into_inner()
}

fn deflated_zeros(size: usize) -> Vec<u8> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    zip.start_file("murmur.yaml", options).unwrap();
    zip.write_all(manifest_text("c", "1").as_bytes()).unwrap();
    zip.start_file("zeros.bin", options).unwrap();
    zip.write_all(&vec![0u8; size]).unwrap();
    zip.finish().unwrap().into_inner()
}

#[test]
fn caps_total_size_entries_and_lying_headers() {
    let small = Limits {
        max_unpacked: 1000,
        max_entries: 3,
        max_ratio: 200,
        ratio_floor: 1 << 20,
    };
    let m = manifest_text("c", "1");
    let big = zip_of(&[("murmur.yaml", m.as_bytes()), ("big", &[7u8; 2000])]);
    assert_eq!(
        code_of(check_with(&big, Path::new("x"), &small)),
        catalogue::E_PAK_006
    );
    let many = zip_of(&[
        ("murmur.yaml", m.as_bytes()),
        ("a", b"1"),
        ("b", b"2"),
        ("c", b"3"),
    ]);
    assert_eq!(
        code_of(check_with(&many, Path::new("x"), &small)),
        catalogue::E_PAK_006
    );
    // A header that claims 1 GiB unpacked: refused before anything is read.
    let data = [9u8; 300];
    let mut lying = zip_of(&[("murmur.yaml", m.as_bytes()), ("d", &data)]);
    let size = 300u32.to_le_bytes();
    let huge = (1u32 << 30).to_le_bytes();
    lying = patch(
        lying,
        &[&size[..], &size[..]].concat(),
        &[&size[..], &huge[..]].concat(),
    );
    assert_eq!(code_of(check(&lying, Path::new("x"))), catalogue::E_PAK_006);
}

#[test]
fn a_packed_artifact_passes_and_its_manifest_reads() {
    let bytes = packed("coder", "1.2.0");
    let checked = check(&bytes, Path::new("x")).unwrap();
    assert_eq!(checked.manifest.name, "coder");
    assert_eq!(checked.files.len(), 3);
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("coder-1.2.0.mur.zip");
    std::fs::write(&zip, &bytes).unwrap();
    let m = read_manifest(&zip).unwrap();
    assert_eq!((m.name.as_str(), m.version.as_str()), ("coder", "1.2.0"));
}

#[test]
fn read_manifest_names_the_packed_file() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("bad.mur.zip");
    std::fs::write(&zip, zip_of(&[("murmur.yaml", b"name: [c\n")])).unwrap();
    let err = read_manifest(&zip).unwrap_err();
    assert!(err.code.as_str().starts_with("E-MAN-"), "{err}");
    let loc = err.location.as_ref().expect("a line and column");
    assert!(
        loc.file
            .to_string_lossy()
            .ends_with("bad.mur.zip!murmur.yaml"),
        "{err}"
    );
    std::fs::write(&zip, b"garbage").unwrap();
    assert_eq!(read_manifest(&zip).unwrap_err().code, catalogue::E_PAK_004);
}

#[test]
fn unpacks_whole_with_modes() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("a.mur.zip");
    std::fs::write(&zip, packed("coder", "1.2.0")).unwrap();
    let dest = dir.path().join("out");
    unpack(&zip, &dest).unwrap();
    assert_eq!(
        std::fs::read_to_string(dest.join("docs/notes.md")).unwrap(),
        "# Notes\n"
    );
    let mode = |p: &str| {
        std::fs::metadata(dest.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!((mode("run.sh"), mode("murmur.yaml")), (0o700, 0o600));
    assert_eq!((mode("."), mode("docs")), (0o700, 0o700));
    // A folder that is not empty is refused, and left alone.
    let err = unpack(&zip, &dest).unwrap_err();
    assert_eq!(err.code, catalogue::E_PAK_003);
    // An empty folder is filled.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    unpack(&zip, &empty).unwrap();
    assert!(empty.join("murmur.yaml").is_file());
}

#[test]
fn a_refused_unpack_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("evil.mur.zip");
    let evil = patch(
        zip_of(&[
            ("murmur.yaml", manifest_text("c", "1").as_bytes()),
            ("xx/evil", b"1"),
        ]),
        b"xx/evil",
        b"../evil",
    );
    std::fs::write(&zip, evil).unwrap();
    let dest = dir.path().join("out");
    assert_eq!(unpack(&zip, &dest).unwrap_err().code, catalogue::E_PAK_005);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "only the zip itself: {left:?}");
}

#[test]
fn unsafe_names() {
    for bad in [
        "", "/a", "../a", "a/../b", "a//b", "./a", "a\\b", "C:a", "a\0b",
    ] {
        assert!(unsafe_name(bad).is_some(), "{bad:?}");
    }
    for good in ["a", "a/b", "a/b/", ".hidden", "a..b", "murmur.yaml"] {
        assert!(unsafe_name(good).is_none(), "{good:?}");
    }
}
