//! `mur cache prune`: removes from `~/.murmur/cache/` what no installed capsule and
//! no live session uses (docs/store.md, "The cache"). The cache only grows otherwise:
//! each artifact ever run leaves its unpacked copy (`<sha256>/`), and each component
//! ever called its compiled form (`components/<sha256>-wasmtime-<v>-<engine>.cwasm`).
//!
//! Kept: the unpacked copy of every artifact in the global store, in the current
//! project's store and in the store of every project the records name (a session
//! recorded there), and of the artifact every live session runs (its session_start's
//! sha256, which `mur sync` may have replaced in the store meanwhile); and each
//! compiled component of this wasmtime whose file a kept copy holds. Everything else
//! that mur names there goes; a name mur never makes is left alone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::capsule::cache_root;
use crate::diag::Result;
use crate::records::{self, Records};
use crate::running::RunningDir;
use crate::store::{StoreKind, Stores};
use crate::{output, paths, trace};

// `mur cache …`
#[derive(Debug, Clone, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub command: CacheCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum CacheCommand {
    /// Remove from ~/.murmur/cache/ what no installed capsule and no live session uses.
    #[command(after_help = "Examples:\n  mur cache prune\n  mur cache prune --dry-run")]
    Prune {
        /// Say what would be removed, and remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// `mur cache prune`: one line per entry removed on stdout, then a summary.
pub(crate) fn run(args: &CacheArgs) -> Result<i32> {
    let CacheCommand::Prune { dry_run } = args.command;
    let root = cache_root();
    let used = used_artifacts()?;
    let mut kept = 0usize;
    let mut gone: Vec<(PathBuf, u64)> = Vec::new();
    let mut components: BTreeSet<String> = BTreeSet::new();
    for (name, path) in entries(&root, |t| t.is_dir()) {
        if !is_sha256(&name) {
            continue;
        }
        if used.contains(&name) {
            kept += 1;
            components.extend(wasm_sha256s(&path));
        } else {
            gone.push((path.clone(), size(&path)));
        }
    }
    let compiled = crate::component::cache_dir();
    let this_wasmtime = format!("-wasmtime-{}-", crate::component::WASMTIME_VERSION);
    for (name, path) in entries(&compiled, |t| t.is_file()) {
        let Some(stem) = name.strip_suffix(".cwasm") else {
            continue;
        };
        let Some((sha, rest)) = stem.split_once("-wasmtime-") else {
            continue;
        };
        if !is_sha256(sha) || rest.is_empty() {
            continue;
        }
        if components.contains(sha) && stem.contains(&this_wasmtime) {
            kept += 1;
        } else {
            gone.push((path.clone(), size(&path)));
        }
    }
    let verb = if dry_run { "would remove" } else { "removed" };
    let mut freed = 0u64;
    for (path, bytes) in &gone {
        if !dry_run {
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
            if let Err(e) = removed {
                tracing::warn!("cannot remove {}: {e}", path.display());
                continue;
            }
        }
        freed += bytes;
        output::stdout_line(format_args!("{verb} {}", path.display()));
    }
    output::stdout_line(format_args!(
        "{verb} {} {} ({}); kept {kept} in use",
        gone.len(),
        if gone.len() == 1 { "entry" } else { "entries" },
        mib(freed)
    ));
    Ok(0)
}

/// The sha256 of every artifact a store holds that some project uses, and of every
/// live session's. A store that cannot be read is an error: what it holds is unknown.
fn used_artifacts() -> Result<BTreeSet<String>> {
    let mut projects: BTreeSet<PathBuf> = BTreeSet::new();
    if let Ok(cwd) = std::env::current_dir() {
        projects.insert(paths::project_root(&cwd));
    }
    let root = paths::records_root();
    for r in records::find_sessions(&root) {
        // `<records>/<work folder without its leading />/<ses_id>/`
        if let Some(rel) = r.dir.parent().and_then(|p| p.strip_prefix(&root).ok()) {
            projects.insert(paths::project_root(&Path::new("/").join(rel)));
        }
    }
    let mut used = BTreeSet::new();
    let global = Stores::of(Path::new("/"));
    for i in global.list_store(StoreKind::Global)? {
        used.insert(i.sha256.to_string());
    }
    for project in &projects {
        for i in Stores::of(project).list_store(StoreKind::Project)? {
            used.insert(i.sha256.to_string());
        }
    }
    for live in RunningDir::default().list()? {
        if let Some(sha) = running_sha256(&Records::open(live.records_dir)) {
            used.insert(sha);
        }
    }
    Ok(used)
}

/// The artifact a session runs, from its trace's first record (`session_start`).
fn running_sha256(r: &Records) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(r.trace_path()).ok()?;
    let first = std::io::BufReader::new(file).lines().next()?.ok()?;
    match serde_json::from_str::<trace::Record>(&first).ok()?.event {
        trace::Event::SessionStart { capsule, .. } => capsule.sha256,
        _ => None,
    }
}

/// The entries of `dir` whose type (not followed through a symlink) passes `keep`.
fn entries(dir: &Path, keep: impl Fn(&std::fs::FileType) -> bool) -> Vec<(String, PathBuf)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, PathBuf)> = read
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| keep(&t)))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    found.sort();
    found
}

fn is_sha256(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The sha256 of each `.wasm` file under `dir`: the keys of its compiled components.
fn wasm_sha256s(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for (name, path) in entries(&dir, |t| t.is_dir() || t.is_file()) {
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".wasm")
                && let Ok(sha) = crate::store::sha256_file(&path)
            {
                found.push(sha.to_string());
            }
        }
    }
    found
}

/// The bytes of the files under `path` (a file's own, for a file).
fn size(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    entries(path, |t| t.is_dir() || t.is_file())
        .iter()
        .map(|(_, p)| size(p))
        .sum()
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
