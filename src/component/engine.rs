//! The one wasmtime `Engine` of the process, its epoch ticker, its linker, and the
//! on-disk cache of compiled components.

#![allow(
    unsafe_code,
    reason = "deserializing a compiled component from the cache"
)]

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine};

use super::state::State;

/// The wasmtime version in use (pinned in Cargo.toml): part of the cache key.
pub const WASMTIME_VERSION: &str = "48.0.8";

/// How often the epoch advances while a call runs: the granularity of the CPU bound.
pub(super) const TICK: Duration = Duration::from_millis(10);

struct Shared {
    engine: Engine,
    linker: Linker<State>,
    /// Calls running now; the ticker sleeps (parked) while there are none.
    running: Arc<AtomicUsize>,
    ticker: Thread,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        // Plain Config::new() cannot fail to build an engine on a supported host.
        let engine = Engine::new(&config).expect("a wasmtime engine with the default config");
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("WASI p2 links");
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .expect("wasi:http links");
        super::message::add_to_linker(&mut linker, |s: &mut State| &mut s.message)
            .expect("murmur:message/send links");
        super::bounds::add_to_linker(&mut linker).expect("the counted wasi:filesystem links");
        let running = Arc::new(AtomicUsize::new(0));
        let (e, r) = (engine.clone(), running.clone());
        let ticker = std::thread::Builder::new()
            .name("mur-epoch".into())
            .spawn(move || {
                loop {
                    if r.load(Ordering::Acquire) == 0 {
                        std::thread::park();
                        continue;
                    }
                    std::thread::sleep(TICK);
                    e.increment_epoch();
                }
            })
            .expect("the epoch thread starts")
            .thread()
            .clone();
        Shared {
            engine,
            linker,
            running,
            ticker,
        }
    })
}

pub(super) fn engine() -> &'static Engine {
    &shared().engine
}

pub(super) fn linker() -> &'static Linker<State> {
    &shared().linker
}

/// Keeps the epoch ticking while it lives: one per running call.
pub(super) struct Ticking(());

impl Ticking {
    pub(super) fn start() -> Ticking {
        let s = shared();
        s.running.fetch_add(1, Ordering::AcqRel);
        s.ticker.unpark();
        Ticking(())
    }
}

impl Drop for Ticking {
    fn drop(&mut self) {
        shared().running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `~/.murmur/cache/components/`: compiled components, one file each.
pub fn cache_dir() -> PathBuf {
    crate::paths::murmur_home().join("cache").join("components")
}

/// The cache file of the component whose bytes hash to `sha256`: keyed by that hash,
/// the wasmtime version and the engine's compatibility hash (its settings and CPU
/// features), so a file from another wasmtime or setting is never read.
pub(super) fn cache_path(dir: &Path, sha256: &str) -> PathBuf {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine().precompile_compatibility_hash().hash(&mut h);
    dir.join(format!(
        "{sha256}-wasmtime-{WASMTIME_VERSION}-{:016x}.cwasm",
        h.finish()
    ))
}

/// Where a component came from, for benches and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Compiled,
    Cache,
}

/// The compiled component of `bytes`: from the cache file when it holds an intact
/// entry, else compiled (and the entry written). A cache file is `sha256(payload)`
/// (32 bytes) then wasmtime's serialized component; one that is short, damaged or from
/// another engine is ignored and replaced.
pub(super) fn load(bytes: &[u8], sha256: &str, dir: &Path) -> Result<(Component, Source), String> {
    let path = cache_path(dir, sha256);
    if let Some(component) = from_cache(&path) {
        return Ok((component, Source::Cache));
    }
    let component = Component::new(engine(), bytes).map_err(|e| format!("{e:#}"))?;
    if let Ok(payload) = component.serialize() {
        // A cache that cannot be written only costs the next session a compile.
        let _ = write_entry(dir, &path, &payload);
    }
    Ok((component, Source::Compiled))
}

fn from_cache(path: &Path) -> Option<Component> {
    let file = std::fs::read(path).ok()?;
    if file.len() < 32 {
        return None;
    }
    let (sum, payload) = file.split_at(32);
    if Sha256::digest(payload).as_slice() != sum {
        return None;
    }
    // SAFETY: the payload is byte for byte what Component::serialize wrote into our
    // owner-only cache (its checksum matches), and wasmtime checks its version and
    // settings against the engine before using it.
    unsafe { Component::deserialize(engine(), payload) }.ok()
}

fn write_entry(dir: &Path, path: &Path, payload: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".cwasm-")
        .tempfile_in(dir)?;
    tmp.write_all(&Sha256::digest(payload))?;
    tmp.write_all(payload)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
