//! Replacing a file whole: the bytes go to a temporary file in the same folder (so
//! the same file system), `.<random>.partial`, which is then renamed over the target.
//! A reader sees the old file or the new one, never a mix; a kill leaves at most the
//! dot-named temporary file.
//!
//! How much survives a crash of the machine is the caller's choice, stated at the call
//! ([`Durability`]): records that the session's flusher makes durable later need less
//! than murmur.lock or an installed capsule.
//!
//! Files mur opens by name to write in place (logs, a delegated task) go through
//! [`open_private`]: never through a symlink, never a FIFO or device, always 0600.
//! docs/design/writes.md lists every write mur makes where a capsule can reach.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::catalogue::Code;
use crate::diag::Diagnostic;

/// What is on disk once a write returns, should the machine crash right after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Nothing is synced: the rename still makes the write atomic for a reader, but a
    /// crash of the machine may leave the old file, an empty one or none. For what
    /// describes a live process (`~/.murmur/running/`: meaningless once the machine
    /// restarts) and for what another thread syncs later (MURMUR.md, by the records'
    /// flusher). It keeps a sync off a session's start-up.
    Unsynced,
    /// The bytes are synced (`fdatasync`) before the rename; the rename itself may be
    /// lost, leaving the old file. For records the session rewrites.
    Data,
    /// The file, bytes and metadata (its mode), is synced before the rename (`fsync`);
    /// the rename may be lost. For files a user can simply make again (`mur pack`).
    File,
    /// [`Durability::File`], then the folder is synced after the rename, so the new
    /// name survives too. For what other commands rely on (murmur.lock, the store).
    Folder,
}

/// Writes `bytes` to `path` atomically with permissions `mode`, replacing any file
/// there.
pub(crate) fn write_atomic(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    durability: Durability,
) -> io::Result<()> {
    write(path, bytes, mode, durability, true).map(|_| ())
}

/// [`write_atomic`] that never replaces a file: `Ok(false)` when `path` exists
/// (`renameat2(RENAME_NOREPLACE)` or link+unlink), and nothing was written.
pub(crate) fn create_atomic(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    durability: Durability,
) -> io::Result<bool> {
    write(path, bytes, mode, durability, false)
}

/// How [`open_private`] treats a file already at the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Open {
    /// Refuse it (`O_EXCL`): the file is new, or the open fails with `AlreadyExists`.
    New,
    /// Append to it (a log kept across a `--resume`).
    Append,
}

/// Opens `path` for writing, owner-only (0600, whatever the umask, an older file's
/// mode too), without following a symlink at its last component (`O_NOFOLLOW`),
/// and only when it is a regular file: a FIFO or device planted at the name is
/// refused (`O_NONBLOCK` keeps a FIFO without a reader from blocking the open).
/// The folder itself must be mur's own (see docs/design/writes.md): this guards the
/// name, not the folders above it.
pub(crate) fn open_private(path: &Path, how: Open) -> io::Result<std::fs::File> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options
        .mode(0o600)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32);
    match how {
        Open::New => options.write(true).create_new(true),
        Open::Append => options.append(true).create(true),
    };
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    // Back to blocking writes; and the mode exactly, not narrowed by the umask nor
    // left wide on an older file.
    let keep = match how {
        Open::New => OFlags::empty(),
        Open::Append => OFlags::APPEND,
    };
    rustix::fs::fcntl_setfl(&file, keep)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

/// Makes `dir` (one level: its parent exists) as a folder of mur's own, 0700; an
/// existing one is kept when it is a real folder (not a symlink) and set to 0700.
pub(crate) fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if !std::fs::symlink_metadata(dir)?.is_dir() {
                return Err(io::Error::other(format!(
                    "{} is not a folder",
                    dir.display()
                )));
            }
        }
        Err(e) => return Err(e),
    }
    // The umask may have narrowed it; never widened, so set it exactly.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// The error a failed write reports: `code`, "cannot write <path>: <why>", the file.
pub(crate) fn write_failed(code: Code, path: &Path, e: &dyn std::fmt::Display) -> Diagnostic {
    Diagnostic::new(code, format!("cannot write {}: {e}", path.display())).in_file(path)
}

fn write(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    durability: Durability,
    replace: bool,
) -> io::Result<bool> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".")
        .suffix(".partial")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    // The umask may have narrowed the mode the file was created with.
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    match durability {
        Durability::Unsynced => {}
        Durability::Data => tmp.as_file().sync_data()?,
        Durability::File | Durability::Folder => tmp.as_file().sync_all()?,
    }
    if replace {
        tmp.persist(path).map_err(|e| e.error)?;
    } else {
        match tmp.persist_noclobber(path) {
            Ok(_) => {}
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(e.error),
        }
    }
    if durability == Durability::Folder {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".partial"))
            .collect()
    }

    #[test]
    fn every_durability_replaces_whole_with_the_mode_asked_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for (durability, mode) in [
            (Durability::Unsynced, 0o600),
            (Durability::Data, 0o600),
            (Durability::File, 0o644),
            (Durability::Folder, 0o640),
        ] {
            let path = dir.path().join(format!("{durability:?}"));
            std::fs::write(&path, b"an older and much longer text").unwrap();
            write_atomic(&path, b"new", mode, durability).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"new");
            assert_eq!(mode_of(&path), mode, "{durability:?}");
        }
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn create_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        assert!(create_atomic(&path, b"first", 0o644, Durability::Folder).unwrap());
        assert!(!create_atomic(&path, b"second", 0o644, Durability::Folder).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    /// What a capsule plants at a name mur is about to open: a symlink to a file
    /// outside, a dangling one, a FIFO. None is followed, created through or waited on.
    #[test]
    fn open_private_follows_no_symlink_and_opens_only_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"precious").unwrap();
        let dangling = dir.path().join("made-through-a-link");
        for how in [Open::New, Open::Append] {
            let link = dir.path().join(format!("link-{how:?}"));
            std::os::unix::fs::symlink(&target, &link).unwrap();
            assert!(open_private(&link, how).is_err(), "{how:?}");
            let link = dir.path().join(format!("dangling-{how:?}"));
            std::os::unix::fs::symlink(&dangling, &link).unwrap();
            assert!(open_private(&link, how).is_err(), "{how:?}");
            let fifo = dir.path().join(format!("fifo-{how:?}"));
            nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
            assert!(open_private(&fifo, how).is_err(), "{how:?}");
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        assert!(!dangling.exists());
    }

    #[test]
    fn open_private_is_0600_new_refuses_an_old_file_and_append_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, b"old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = open_private(&path, Open::New).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        open_private(&path, Open::Append)
            .unwrap()
            .write_all(b"new\n")
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"old\nnew\n");
        assert_eq!(mode_of(&path), 0o600);
        let fresh = dir.path().join("fresh");
        open_private(&fresh, Open::New)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        assert_eq!(mode_of(&fresh), 0o600);
    }

    #[test]
    fn private_dir_refuses_a_symlink_and_tightens_an_old_folder() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        assert!(private_dir(&link).is_err());
        let old = dir.path().join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&old).unwrap();
        assert_eq!(mode_of(&old), 0o700);
        private_dir(&dir.path().join("new")).unwrap();
        assert_eq!(mode_of(&dir.path().join("new")), 0o700);
    }

    #[test]
    fn a_missing_folder_is_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/f");
        let e = write_atomic(&path, b"x", 0o600, Durability::Data).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(!path.exists());
    }
}
