//! Replacing a file whole: the bytes go to a temporary file in the same folder (so
//! the same file system), `.<random>.partial`, which is then renamed over the target.
//! A reader sees the old file or the new one, never a mix; a kill leaves at most the
//! dot-named temporary file.
//!
//! How much survives a crash of the machine is the caller's choice, stated at the call
//! ([`Durability`]): records that the session's flusher makes durable later need less
//! than murmur.lock or an installed capsule.

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

    #[test]
    fn a_missing_folder_is_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/f");
        let e = write_atomic(&path, b"x", 0o600, Durability::Data).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(!path.exists());
    }
}
