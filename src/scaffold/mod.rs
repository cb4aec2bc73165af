//! `mur new`: scaffolds a capsule's source folder, or with `--roster` a two-member
//! formation with a source folder for each member, that mur accepts as written.
//!
//! The folder is built in a temporary folder beside the target and renamed into
//! place, so a failure leaves nothing behind and an existing path is never touched.

mod templates;

use std::path::{Path, PathBuf};

use clap::Args;

use crate::catalogue::{E_NEW_001, E_NEW_002, E_NEW_003};
use crate::diag::{Diagnostic, Result};
use crate::output;

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The name of the capsule (or roster), and of the folder created for it in the
    /// current folder: a lowercase letter, then up to 31 lowercase letters, digits or `-`.
    pub name: String,
    /// Write a two-member roster (`lead` calls `helper`) with a source folder for each
    /// member, instead of a single capsule.
    #[arg(long)]
    pub roster: bool,
}

pub(crate) fn run(args: &NewArgs) -> Result<i32> {
    let cwd = std::env::current_dir().map_err(|e| {
        Diagnostic::new(E_NEW_003, format!("cannot read the current folder: {e}"))
            .hint("Run `mur new` from a folder that exists and that you can write to.")
    })?;
    let target = create(&cwd, &args.name, args.roster)?;
    // What mur new wrote is approved as written (docs/approval.md): the README's first
    // launch needs no `mur approve`, and edits before the first run need none either.
    crate::approve::record_new(&target)?;
    let shown = target
        .file_name()
        .map(Path::new)
        .unwrap_or(&target)
        .display();
    if args.roster {
        output::stdout_line(format_args!(
            "Created the roster `{name}` in {shown}/: roster.yaml, and the members' source folders lead/ and helper/.\n\
             Next:\n  cd {shown}\n  mur install lead helper\n  mur run --roster --task \"Say hello\"",
            name = args.name
        ));
    } else {
        output::stdout_line(format_args!(
            "Created the capsule `{name}` in {shown}/: murmur.yaml and INSTRUCTIONS.md.\n\
             Next:\n  cd {shown}\n  mur run --task \"Say hello\"",
            name = args.name
        ));
    }
    Ok(0)
}

/// Writes the scaffold for `name` as `<parent>/<name>/` and returns that path.
pub(crate) fn create(parent: &Path, name: &str, roster: bool) -> Result<PathBuf> {
    check_name(name)?;
    let target = parent.join(name);
    if target.symlink_metadata().is_ok() {
        return Err(exists(&target));
    }
    let files = if roster {
        templates::roster(name)
    } else {
        templates::capsule(name)
    };
    let cannot = |what: &str, path: &Path, e: std::io::Error| {
        Diagnostic::new(
            E_NEW_003,
            format!("cannot {what} {}: {e}", path.display()),
        )
        .in_file(path)
        .hint("Check that the folder is writable and the disk is not full; nothing was left behind.")
    };
    // Hidden, and beside the target so the final rename stays on one filesystem.
    let prefix = format!(".{name}.new-");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    // A temporary folder is owner-only; the scaffold gets the mode of a plain mkdir
    // (0777 less the umask), as the user expects of a folder they asked for.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o777));
    let tmp = builder
        .tempdir_in(parent)
        .map_err(|e| cannot("create a folder in", parent, e))?;
    for (rel, text) in &files {
        let path = tmp.path().join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| cannot("create", dir, e))?;
        }
        std::fs::write(&path, text).map_err(|e| cannot("write", &path, e))?;
    }
    rename_no_replace(tmp.path(), &target).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            exists(&target)
        } else {
            cannot("create", &target, e)
        }
    })?;
    // The folder now lives at `target`; nothing is left to clean up.
    let _ = tmp.keep();
    Ok(target)
}

fn check_name(name: &str) -> Result<()> {
    if crate::ids::is_name(name, 32) {
        return Ok(());
    }
    Err(Diagnostic::new(
        E_NEW_001,
        format!("`{name}` is not a name `mur new` can use: it must match ^[a-z][a-z0-9-]{{0,31}}$"),
    )
    .hint("Start with a lowercase letter, then use up to 31 lowercase letters, digits or `-`, such as `my-agent`."))
}

fn exists(target: &Path) -> Diagnostic {
    Diagnostic::new(
        E_NEW_002,
        format!("{} already exists; nothing was written", target.display()),
    )
    .in_file(target)
    .hint("Choose another name, or move the existing folder away first.")
}

/// Renames `from` to `to`, failing with AlreadyExists if `to` exists, even when it
/// appeared after our check.
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
        match renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_NOREPLACE) {
            Ok(()) => return Ok(()),
            // Filesystems without RENAME_NOREPLACE fall back to check-then-rename.
            Err(nix::errno::Errno::EINVAL) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if to.symlink_metadata().is_ok() {
        return Err(std::io::ErrorKind::AlreadyExists.into());
    }
    std::fs::rename(from, to)
}

#[cfg(test)]
mod tests;
