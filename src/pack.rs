//! `mur pack`: a capsule source folder to `<name>-<version>.mur.zip`, byte for byte
//! deterministic. Entries are the folder's files only (no folder entries), sorted by
//! name, deflated at level 6, dated 1980-01-01 00:00:00, with mode 0644 (0755 when any
//! execute bit is set), made by "Unix", and with no extra fields or comments; so the
//! bytes depend on nothing but the files' names, contents and execute bits.

use std::io::Cursor;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use clap::Args;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, System, ZipWriter};

use crate::catalogue::{E_PAK_001, E_PAK_002, E_PAK_003, E_PAK_006};
use crate::diag::{Diagnostic, Result};
use crate::fsutil::{self, Durability};
use crate::manifest::{self, Manifest};
use crate::output;

mod archive;
mod components;

pub use archive::{Checked, LIMITS, Limits, check, read_manifest, unpack, unsafe_name};

/// Folder names never packed, at any depth: version control, mur's own state, build
/// output.
const SKIPPED_DIRS: &[&str] = &[".git", ".murmur", "target"];

#[derive(Debug, Args)]
pub struct PackArgs {
    /// The capsule source folder (murmur.yaml at its root).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Where to write the .mur.zip (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// An artifact packed in memory.
#[derive(Debug, Clone)]
pub struct Packed {
    pub manifest: Manifest,
    pub bytes: Vec<u8>,
    pub sha256: crate::ids::Sha256,
}

impl Packed {
    /// `<name>-<version>.mur.zip`
    pub fn file_name(&self) -> String {
        format!(
            "{}-{}{}",
            self.manifest.name,
            self.manifest.version,
            crate::artifact::EXTENSION
        )
    }
}

pub fn run(args: &PackArgs) -> Result<i32> {
    let packed = pack_dir(&args.dir)?;
    let out_dir = args.out.clone().unwrap_or_else(|| PathBuf::from("."));
    let path = out_dir.join(packed.file_name());
    let fault = |e: &dyn std::fmt::Display| {
        Diagnostic::new(E_PAK_003, format!("cannot write {}: {e}", path.display())).in_file(&path)
    };
    std::fs::create_dir_all(&out_dir).map_err(|e| fault(&e))?;
    // Written whole or not at all; a lost rename after a crash is a pack to run again.
    fsutil::write_atomic(&path, &packed.bytes, 0o644, Durability::File).map_err(|e| fault(&e))?;
    output::stdout_line(path.display());
    output::stdout_line(format_args!("sha256 {}", packed.sha256));
    Ok(0)
}

/// Packs a capsule source folder in memory. The result passes `archive::check`, so
/// `mur install` accepts whatever `mur pack` makes.
pub fn pack_dir(dir: &Path) -> Result<Packed> {
    let manifest_path = dir.join(manifest::FILE_NAME);
    if !dir.is_dir() || !manifest_path.is_file() {
        let what = if dir.is_dir() {
            format!(
                "{} has no {} at its root",
                dir.display(),
                manifest::FILE_NAME
            )
        } else {
            format!("{} is not a folder", dir.display())
        };
        return Err(Diagnostic::new(E_PAK_001, what).in_file(dir));
    }
    let manifest = manifest::load(&manifest_path)?;
    crate::artifact::artifact_path_or_refuse(
        Path::new(""),
        &format!("{}/{}", crate::artifact::LOCAL_SCOPE, manifest.name),
        &manifest.version,
    )
    .map_err(|d| d.in_file(&manifest_path))?;
    let root = dir
        .canonicalize()
        .map_err(|e| io_fault(dir, &e.to_string()))?;
    let mut files = Vec::new();
    walk(&root, &root, "", &mut vec![root.clone()], &mut files)?;
    files.sort_by(|a, b| a.name.cmp(&b.name));
    if files.len() > LIMITS.max_entries {
        return Err(Diagnostic::new(
            E_PAK_006,
            format!(
                "{} holds {} files, over the cap of {}",
                dir.display(),
                files.len(),
                LIMITS.max_entries
            ),
        )
        .in_file(dir));
    }
    let total: u64 = files.iter().map(|f| f.size).sum();
    if total > LIMITS.max_unpacked {
        return Err(Diagnostic::new(
            E_PAK_006,
            format!(
                "{} holds {total} bytes, over the cap of {} bytes",
                dir.display(),
                LIMITS.max_unpacked
            ),
        )
        .in_file(dir));
    }
    let bytes = write_zip(&files)?;
    // What install would refuse (a zip bomb of a source, a manifest that breaks
    // packed), pack refuses too.
    let shown = PathBuf::from(format!(
        "{}-{}{}",
        manifest.name,
        manifest.version,
        crate::artifact::EXTENSION
    ));
    let checked = check(&bytes, &shown)?;
    let sha256 = crate::ids::Sha256::of(&bytes);
    Ok(Packed {
        manifest: checked.manifest,
        bytes,
        sha256,
    })
}

struct SourceFile {
    /// The name inside the archive, `/`-separated.
    name: String,
    path: PathBuf,
    executable: bool,
    size: u64,
}

/// Collects the files under `dir` (canonical), following symlinks that stay inside
/// `root`. `open` holds the canonical folders being walked, to refuse loops.
fn walk(
    root: &Path,
    dir: &Path,
    prefix: &str,
    open: &mut Vec<PathBuf>,
    out: &mut Vec<SourceFile>,
) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_fault(dir, &e.to_string()))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_fault(dir, &e.to_string()))?;
        let path = entry.path();
        let Some(file_name) = entry.file_name().to_str().map(str::to_string) else {
            return Err(io_fault(&path, "its name is not UTF-8"));
        };
        let name = if prefix.is_empty() {
            file_name.clone()
        } else {
            format!("{prefix}/{file_name}")
        };
        let kind = entry
            .file_type()
            .map_err(|e| io_fault(&path, &e.to_string()))?;
        let link = kind.is_symlink();
        // Skipped before any symlink is followed: a `target` linked to a shared build
        // folder elsewhere is skipped, not refused.
        let skipped = file_name == ".git"
            || (SKIPPED_DIRS.contains(&file_name.as_str()) && (kind.is_dir() || link))
            || (file_name.ends_with(crate::artifact::EXTENSION) && (kind.is_file() || link));
        if skipped {
            continue;
        }
        // Resolve a symlink to what it names, which must be inside the folder.
        let real = if link {
            let target = path.canonicalize().map_err(|e| {
                Diagnostic::new(
                    E_PAK_002,
                    format!("the symlink {} points nowhere: {e}", path.display()),
                )
                .in_file(&path)
            })?;
            if !target.starts_with(root) {
                return Err(Diagnostic::new(
                    E_PAK_002,
                    format!(
                        "the symlink {} points outside the capsule, to {}",
                        path.display(),
                        target.display()
                    ),
                )
                .in_file(&path));
            }
            target
        } else {
            path.clone()
        };
        let meta = std::fs::metadata(&real).map_err(|e| io_fault(&path, &e.to_string()))?;
        if meta.is_dir() {
            if open.contains(&real) {
                return Err(Diagnostic::new(
                    E_PAK_002,
                    format!("the symlink {} makes a loop", path.display()),
                )
                .in_file(&path));
            }
            open.push(real.clone());
            walk(root, &real, &name, open, out)?;
            open.pop();
        } else if meta.is_file() {
            if let Some(why) = unsafe_name(&name) {
                return Err(io_fault(&path, &format!("an artifact cannot hold {why}")));
            }
            out.push(SourceFile {
                name,
                path: real,
                executable: meta.permissions().mode() & 0o111 != 0,
                size: meta.len(),
            });
        } else {
            return Err(io_fault(
                &path,
                "it is not a regular file or folder (a socket, a fifo or a device)",
            ));
        }
    }
    Ok(())
}

fn write_zip(files: &[SourceFile]) -> Result<Vec<u8>> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let base = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .compression_level(Some(6))
        .last_modified_time(DateTime::default())
        .system(System::Unix)
        .large_file(false);
    for file in files {
        let mode = if file.executable { 0o755 } else { 0o644 };
        let zip_fault = |e: &dyn std::fmt::Display| io_fault(&file.path, &e.to_string());
        zip.start_file(file.name.as_str(), base.unix_permissions(mode))
            .map_err(|e| zip_fault(&e))?;
        let mut source = std::fs::File::open(&file.path).map_err(|e| zip_fault(&e))?;
        std::io::copy(&mut source, &mut zip).map_err(|e| zip_fault(&e))?;
    }
    let cursor = zip
        .finish()
        .map_err(|e| io_fault(Path::new("."), &e.to_string()))?;
    Ok(cursor.into_inner())
}

fn io_fault(path: &Path, why: &str) -> Diagnostic {
    Diagnostic::new(E_PAK_003, format!("cannot pack {}: {why}", path.display())).in_file(path)
}

#[cfg(test)]
pub(crate) mod tests;
