//! Reading artifacts: the checks every `.mur.zip` passes before it is installed or
//! unpacked (a zip that reads, no path out of the archive, size caps, a root
//! murmur.yaml that parses), the packed manifest, and safe unpacking.

use std::collections::HashSet;
use std::io::{self, Cursor, Read, Seek};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use zip::{CompressionMethod, ZipArchive};

use crate::catalogue::{E_PAK_003, E_PAK_004, E_PAK_005, E_PAK_006, E_PAK_007, E_PAK_008};
use crate::diag::{Diagnostic, Location, Result};
use crate::manifest::{self, Manifest};
use crate::yaml;

/// Caps on what an archive may unpack to. See docs/store.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Total unpacked bytes.
    pub max_unpacked: u64,
    pub max_entries: usize,
    /// Largest unpacked/packed ratio of one entry over `ratio_floor` unpacked bytes.
    pub max_ratio: u64,
    pub ratio_floor: u64,
}

pub const LIMITS: Limits = Limits {
    max_unpacked: 256 << 20,
    max_entries: 10_000,
    max_ratio: 200,
    ratio_floor: 1 << 20,
};

/// An archive that passed every check.
#[derive(Debug, Clone)]
pub struct Checked {
    pub manifest: Manifest,
    /// The files it holds, in archive order, with their unpacked sizes.
    pub files: Vec<(String, u64)>,
}

/// Checks an artifact's bytes; `shown` names it in messages (its path).
pub fn check(bytes: &[u8], shown: &Path) -> Result<Checked> {
    check_with(bytes, shown, &LIMITS)
}

pub(crate) fn check_with(bytes: &[u8], shown: &Path, limits: &Limits) -> Result<Checked> {
    let mut archive = open(Cursor::new(bytes), shown)?;
    let files = scan(&mut archive, shown, limits)?;
    // Duplicate names, local headers that disagree with the central directory,
    // overlapping entries: an archive that reads differently in different tools.
    archive
        .validate_header_consistency()
        .map_err(|e| corrupt(shown, &e))?;
    // Reading every entry checks its CRC and that it holds no more than it declares.
    let mut buf = vec![0u8; 64 * 1024];
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| corrupt(shown, &e))?;
        if entry.is_dir() {
            continue;
        }
        let declared = entry.size();
        let name = entry.name().map(|n| n.into_owned()).unwrap_or_default();
        let mut read = 0u64;
        loop {
            let n = entry.read(&mut buf).map_err(|e| corrupt(shown, &e))?;
            if n == 0 {
                break;
            }
            read += n as u64;
            if read > declared {
                return Err(too_large(
                    shown,
                    format!("`{name}` unpacks to more than the {declared} bytes it declares"),
                ));
            }
        }
        if read != declared {
            return Err(corrupt(
                shown,
                &format!("`{name}` holds {read} bytes, not the {declared} it declares"),
            ));
        }
    }
    let manifest = packed_manifest(&mut archive, shown).map_err(|e| {
        if !e.code.as_str().starts_with("E-MAN-") {
            return e;
        }
        let mut d = Diagnostic::new(
            E_PAK_008,
            format!(
                "the packed murmur.yaml does not parse: {}: {}",
                e.code, e.message
            ),
        )
        .hint(e.hint_text().to_string());
        d = match (&e.location, &e.file) {
            (Some(loc), _) => d.at(loc.clone()),
            (None, Some(f)) => d.in_file(f),
            _ => d.in_file(shown),
        };
        d
    })?;
    super::components::check_named(&mut archive, &manifest, shown)?;
    Ok(Checked { manifest, files })
}

/// The packed murmur.yaml of an artifact, parsed strictly (E-MAN-* naming
/// "<zip>!murmur.yaml"). Archive faults are E-PAK-*.
pub fn read_manifest(zip: &Path) -> Result<Manifest> {
    let file = std::fs::File::open(zip).map_err(|e| corrupt(zip, &e))?;
    let mut archive = open(io::BufReader::new(file), zip)?;
    packed_manifest(&mut archive, zip)
}

/// Unpacks an artifact into `dest` safely (no zip-slip, size caps). `dest` must be
/// missing or an empty folder; it appears whole or not at all (the files are written
/// to a sibling temporary folder that is renamed into place).
pub fn unpack(zip: &Path, dest: &Path) -> Result<()> {
    let bytes = std::fs::read(zip).map_err(|e| corrupt(zip, &e))?;
    check(&bytes, zip)?;
    let io_fault = |path: &Path, e: &dyn std::fmt::Display| {
        Diagnostic::new(
            E_PAK_003,
            format!("cannot unpack into {}: {e}", path.display()),
        )
        .in_file(zip)
    };
    match std::fs::read_dir(dest) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(io_fault(dest, &"the folder is not empty"));
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_fault(dest, &e)),
    }
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| io_fault(&parent, &e))?;
    let staging = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempdir_in(&parent)
        .map_err(|e| io_fault(&parent, &e))?;
    let mut archive = open(Cursor::new(&bytes[..]), zip)?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| corrupt(zip, &e))?;
        let name = entry.name().map_err(|e| corrupt(zip, &e))?.into_owned();
        let target = staging.path().join(name.trim_end_matches('/'));
        // Owner-only: the unpacked copy lives under ~/.murmur/cache (docs/store.md).
        let make_dir = |p: &Path| {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(p)
        };
        if entry.is_dir() {
            make_dir(&target).map_err(|e| io_fault(&target, &e))?;
            continue;
        }
        if let Some(p) = target.parent() {
            make_dir(p).map_err(|e| io_fault(p, &e))?;
        }
        let mode = if entry.unix_mode().unwrap_or(0) & 0o111 != 0 {
            0o700
        } else {
            0o600
        };
        let mut out = std::fs::File::create(&target).map_err(|e| io_fault(&target, &e))?;
        io::copy(&mut entry, &mut out).map_err(|e| io_fault(&target, &e))?;
        out.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| io_fault(&target, &e))?;
    }
    if dest.exists() {
        std::fs::remove_dir(dest).map_err(|e| io_fault(dest, &e))?;
    }
    std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o700))
        .map_err(|e| io_fault(staging.path(), &e))?;
    let staged = staging.keep();
    std::fs::rename(&staged, dest).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        io_fault(dest, &e)
    })?;
    Ok(())
}

/// Why an entry name could let an unpacked file land outside its folder, if it could.
pub fn unsafe_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("an empty name");
    }
    if name.contains('\0') {
        return Some("a NUL byte");
    }
    if name.contains('\\') {
        return Some("a backslash");
    }
    if name.starts_with('/') {
        return Some("an absolute path");
    }
    let b = name.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Some("a drive letter");
    }
    let body = name.strip_suffix('/').unwrap_or(name);
    for part in body.split('/') {
        match part {
            "" => return Some("an empty path component"),
            "." | ".." => return Some("a `.` or `..` component"),
            _ => {}
        }
    }
    None
}

fn open<R: Read + Seek>(reader: R, shown: &Path) -> Result<ZipArchive<R>> {
    ZipArchive::new(reader).map_err(|e| corrupt(shown, &e))
}

/// Every entry's name, kind and declared size, against the caps.
fn scan<R: Read + Seek>(
    archive: &mut ZipArchive<R>,
    shown: &Path,
    limits: &Limits,
) -> Result<Vec<(String, u64)>> {
    if archive.len() > limits.max_entries {
        return Err(too_large(
            shown,
            format!(
                "it holds {} entries, over the cap of {}",
                archive.len(),
                limits.max_entries
            ),
        ));
    }
    let mut names = HashSet::new();
    let mut files = Vec::new();
    let mut total = 0u64;
    for i in 0..archive.len() {
        let entry = archive.by_index_raw(i).map_err(|e| corrupt(shown, &e))?;
        let Ok(name) = std::str::from_utf8(entry.name_raw()).map(str::to_string) else {
            return Err(escape(shown, "an entry name is not UTF-8".into()));
        };
        if let Some(why) = unsafe_name(&name) {
            return Err(escape(shown, format!("the entry `{name}` has {why}")));
        }
        if entry.is_symlink() {
            return Err(escape(shown, format!("the entry `{name}` is a symlink")));
        }
        if entry.encrypted() {
            return Err(corrupt(shown, &format!("the entry `{name}` is encrypted")));
        }
        if !matches!(
            entry.compression(),
            CompressionMethod::Stored | CompressionMethod::Deflated
        ) {
            return Err(corrupt(
                shown,
                &format!(
                    "the entry `{name}` uses {:?}; artifacts use deflate",
                    entry.compression()
                ),
            ));
        }
        if !names.insert(name.trim_end_matches('/').to_string()) {
            return Err(corrupt(shown, &format!("the name `{name}` appears twice")));
        }
        if entry.is_dir() {
            continue;
        }
        let size = entry.size();
        let packed = entry.compressed_size().max(1);
        if size > limits.ratio_floor && size / packed > limits.max_ratio {
            return Err(too_large(
                shown,
                format!(
                    "`{name}` expands {}-fold ({packed} bytes to {size}), over the cap of {}",
                    size / packed,
                    limits.max_ratio
                ),
            ));
        }
        total = total.saturating_add(size);
        if total > limits.max_unpacked {
            return Err(too_large(
                shown,
                format!(
                    "it unpacks to more than the cap of {} bytes",
                    limits.max_unpacked
                ),
            ));
        }
        files.push((name, size));
    }
    // A name that is a file and also a folder of another entry cannot be unpacked.
    let file_names: HashSet<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    for (name, _) in &files {
        let mut parent = name.as_str();
        while let Some((dir, _)) = parent.rsplit_once('/') {
            if file_names.contains(dir) {
                return Err(corrupt(
                    shown,
                    &format!("`{dir}` is both a file and the folder of `{name}`"),
                ));
            }
            parent = dir;
        }
    }
    Ok(files)
}

/// The root murmur.yaml, parsed with the manifest rules (E-MAN-*) as "<zip>!murmur.yaml".
fn packed_manifest<R: Read + Seek>(archive: &mut ZipArchive<R>, shown: &Path) -> Result<Manifest> {
    let mut entry = match archive.by_name(manifest::FILE_NAME) {
        Ok(entry) if entry.is_file() => entry,
        Ok(_) | Err(zip::result::ZipError::FileNotFound) => {
            return Err(Diagnostic::new(
                E_PAK_007,
                format!(
                    "{} has no {} at its root",
                    shown.display(),
                    manifest::FILE_NAME
                ),
            )
            .in_file(shown));
        }
        Err(e) => return Err(corrupt(shown, &e)),
    };
    let inner = PathBuf::from(format!("{}!{}", shown.display(), manifest::FILE_NAME));
    if entry.size() > yaml::MAX_DOCUMENT_BYTES as u64 {
        return Err(too_large(
            shown,
            format!(
                "its {} is over {} bytes",
                manifest::FILE_NAME,
                yaml::MAX_DOCUMENT_BYTES
            ),
        ));
    }
    let mut raw = Vec::new();
    (&mut entry)
        .take(yaml::MAX_DOCUMENT_BYTES as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(|e| corrupt(shown, &e))?;
    let text = String::from_utf8(raw).map_err(|_| {
        Diagnostic::new(
            crate::catalogue::E_MAN_001,
            format!("{} is not UTF-8 text", inner.display()),
        )
        .at(Location::new(&inner, 1, 1))
    })?;
    manifest::parse(&text, &inner)
}

fn corrupt(shown: &Path, e: &dyn std::fmt::Display) -> Diagnostic {
    Diagnostic::new(
        E_PAK_004,
        format!("{} is not a valid artifact: {e}", shown.display()),
    )
    .in_file(shown)
}

fn escape(shown: &Path, why: String) -> Diagnostic {
    Diagnostic::new(
        E_PAK_005,
        format!("{} would write outside its folder: {why}", shown.display()),
    )
    .in_file(shown)
}

fn too_large(shown: &Path, why: String) -> Diagnostic {
    Diagnostic::new(
        E_PAK_006,
        format!("{} is too large: {why}", shown.display()),
    )
    .in_file(shown)
}
