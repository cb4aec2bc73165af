//! Running a capsule's WASM components: its `tools[]`, `hooks[]` and `agent.driver`
//! (docs/components.md).
//!
//! ```text
//! session start: Catalog::open   read, check (core module? world?) and hash each file
//! first task:    Host::tools     schemas (from the on-disk cache, else one instantiation)
//! a call:        load once       compiled component: ~/.murmur/cache/components/, else compile
//!                InstancePre     a fresh Store per call, WASI from the grants, bounds
//! ```
//!
//! Components are WASI 0.2 components of the worlds in wit/capsule.wit. Each call runs
//! in a store of its own: environment only from `capabilities.env.allow`, files only
//! the work folder (".") and the session's tmp/ ("/tmp"), network only through
//! wasi:http to hosts `capabilities.network.allow` reaches, no sockets; in a formation,
//! `murmur:message/send` to the members it may call (`message`); CPU bounded per
//! call ([`crate::timing::COMPONENT_CALL`]), memory per instance ([`MEMORY_LIMIT`]),
//! and what it makes the host hold per instance, with the session's write quota
//! (`bounds`).

mod bounds;
pub mod check;
mod driver;
mod engine;
mod hooks;
mod message;
mod state;
mod tool;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;
use wasmtime::Store;

pub use bounds::{
    BODY_LIMIT, CREATE_COST, FIELD_LIMIT, FILE_LIMIT, Quota, TABLE_LIMIT, WRITE_QUOTA,
};
pub use check::World;
pub use driver::WasmDriver;
pub use engine::{Source, WASMTIME_VERSION, cache_dir};
pub use hooks::Pending;
pub use state::MEMORY_LIMIT;
pub use tool::WasmTool;

use crate::call_member::Trust;
use crate::catalogue::{E_CMP_003, E_MAN_007};
use crate::diag::Diagnostic;
use crate::manifest::{self, HookEvent, Manifest};
use state::State;

/// What the capsule's components may use: exactly its grants.
#[derive(Debug, Clone)]
pub struct Grants {
    /// `capabilities.env.allow` names set in mur's environment, with their values,
    /// as `grant::env` passes them to a component.
    pub env: Vec<(String, String)>,
    /// The session's work folder: the component's ".".
    pub workdir: PathBuf,
    /// The session's tmp/: the component's "/tmp".
    pub tmp: Option<PathBuf>,
    /// `capabilities.network.allow`.
    pub network: Arc<Vec<String>>,
    /// In a formation, the members this one may call: `MURMUR_FORMATION_PEERS` and
    /// their virtual addresses (`http://<member>.formation.invalid`).
    pub peers: Option<Arc<crate::call_member::Peers>>,
}

impl Grants {
    pub fn of(m: &Manifest, workdir: &Path, tmp: Option<PathBuf>) -> Grants {
        let env = crate::grant::env(
            crate::grant::Executor::Component,
            &m.capabilities.env.allow,
            &m.credentials(),
            None,
            &crate::grant::mur_vars(),
        );
        Grants {
            env,
            workdir: workdir.to_path_buf(),
            tmp,
            network: Arc::new(m.capabilities.network.allow.clone()),
            peers: None,
        }
    }

    /// With the member's callees (see [`Grants::peers`]).
    pub fn with_peers(mut self, peers: Option<Arc<crate::call_member::Peers>>) -> Grants {
        self.peers = peers;
        self
    }
}

/// One component file of the capsule, checked at start; hashed and compiled on first use.
pub struct Artifact {
    /// As murmur.yaml names it.
    pub rel: String,
    path: PathBuf,
    world: World,
    bytes: Vec<u8>,
    /// Computed when first needed (the cache key), not at session start.
    sha256: std::sync::OnceLock<String>,
    loaded: OnceCell<Result<Loaded, String>>,
}

enum Loaded {
    Tool(tool::Pre<State>),
    Hook(hooks::Pre<State>),
    Driver(driver::Pre<State>),
}

impl Artifact {
    /// Reads and checks `rel` in `root` for `world`. A file the capsule does not hold
    /// is E-MAN-007, a core module E-CMP-001, another world E-CMP-002.
    pub fn open(root: &Path, rel: &str, world: World) -> Result<Artifact, Diagnostic> {
        let path = root.join(rel);
        let bytes = std::fs::read(&path).map_err(|e| {
            Diagnostic::new(
                E_MAN_007,
                format!("`{rel}` names a file the capsule does not hold: {e}"),
            )
            .in_file(&path)
        })?;
        check::check(&bytes, &path, world)?;
        Ok(Artifact {
            rel: rel.to_string(),
            sha256: std::sync::OnceLock::new(),
            path,
            world,
            bytes,
            loaded: OnceCell::new(),
        })
    }

    /// The sha256 of the file's bytes, hex.
    pub fn sha256(&self) -> &str {
        self.sha256
            .get_or_init(|| hex::encode(Sha256::digest(&self.bytes)))
    }

    async fn loaded(&self, cache: &Path) -> Result<&Loaded, String> {
        let loaded = self
            .loaded
            .get_or_init(|| async {
                // Compiling is CPU work of up to seconds: off the session's thread, and
                // finished (its cache entry written) even when the call is abandoned.
                let (bytes, sha256, dir) = (
                    self.bytes.clone(),
                    self.sha256().to_string(),
                    cache.to_path_buf(),
                );
                let compiled =
                    tokio::task::spawn_blocking(move || engine::load(&bytes, &sha256, &dir))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r);
                let (component, _) = compiled.map_err(|e| {
                    format!(
                        "{E_CMP_003}: {} cannot be compiled: {e}",
                        self.path.display()
                    )
                })?;
                let linked = |e: wasmtime::Error| {
                    format!(
                        "{E_CMP_003}: {} cannot be linked: {e:#}",
                        self.path.display()
                    )
                };
                let pre = engine::linker()
                    .instantiate_pre(&component)
                    .map_err(linked)?;
                Ok(match self.world {
                    World::Tool => Loaded::Tool(tool::Pre::new(pre).map_err(linked)?),
                    World::Hook => Loaded::Hook(hooks::Pre::new(pre).map_err(linked)?),
                    World::Driver => Loaded::Driver(driver::Pre::new(pre).map_err(linked)?),
                })
            })
            .await;
        loaded.as_ref().map_err(Clone::clone)
    }
}

/// The capsule's components as its manifest declares them, read at session start.
pub struct Catalog {
    tools: Vec<(manifest::Tool, Arc<Artifact>)>,
    hooks: Vec<(manifest::Hook, Arc<Artifact>)>,
    /// `agent.driver` of `transport: http`.
    driver: Option<Arc<Artifact>>,
}

impl Catalog {
    /// Reads and checks every tool, hook and driver file (compiling nothing).
    pub fn open(root: &Path, m: &Manifest) -> Result<Catalog, Diagnostic> {
        let mut seen: Vec<(String, World, Arc<Artifact>)> = Vec::new();
        let mut get = |rel: &str, world: World| -> Result<Arc<Artifact>, Diagnostic> {
            if let Some((_, _, a)) = seen.iter().find(|(r, w, _)| r == rel && *w == world) {
                return Ok(a.clone());
            }
            let a = Arc::new(Artifact::open(root, rel, world)?);
            seen.push((rel.to_string(), world, a.clone()));
            Ok(a)
        };
        let mut tools = Vec::new();
        for t in &m.tools {
            tools.push((t.clone(), get(&t.path, World::Tool)?));
        }
        let mut hooks = Vec::new();
        for h in &m.hooks {
            hooks.push((h.clone(), get(&h.path, World::Hook)?));
        }
        let driver = match &m.agent.transport {
            manifest::Transport::Http(h) => match &h.driver {
                Some(rel) => Some(get(rel, World::Driver)?),
                None => None,
            },
            _ => None,
        };
        Ok(Catalog {
            tools,
            hooks,
            driver,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.hooks.is_empty() && self.driver.is_none()
    }
}

/// A session's components with its grants: what tasks and the session call.
pub struct Host {
    catalog: Catalog,
    grants: Grants,
    cache: PathBuf,
    limit: Duration,
    pending: Pending,
    /// The session's write quota, shared by every call ([`WRITE_QUOTA`]).
    quota: Arc<Quota>,
    /// Where the member_call records of the hooks' murmur:message/send calls go.
    trace: Option<Arc<crate::trace::TraceWriter>>,
}

impl Host {
    pub fn new(catalog: Catalog, grants: Grants) -> Arc<Host> {
        Arc::new(Host {
            catalog,
            grants,
            cache: cache_dir(),
            limit: crate::timing::scaled(crate::timing::COMPONENT_CALL),
            pending: Pending::default(),
            quota: Arc::default(),
            trace: None,
        })
    }

    /// Records the hooks' murmur:message/send calls in `trace` (a tool's go in its
    /// task's [`crate::call_member::Calls`]).
    pub fn with_trace(mut self: Arc<Self>, trace: Arc<crate::trace::TraceWriter>) -> Arc<Self> {
        if let Some(h) = Arc::get_mut(&mut self) {
            h.trace = Some(trace);
        }
        self
    }

    /// Uses `cache` for compiled components instead of `~/.murmur/cache/components/`.
    pub fn with_cache(mut self: Arc<Self>, cache: PathBuf) -> Arc<Self> {
        if let Some(h) = Arc::get_mut(&mut self) {
            h.cache = cache;
        }
        self
    }

    /// Whether any hook listens for `event`.
    pub fn hooks_on(&self, event: HookEvent) -> bool {
        self.catalog.hooks.iter().any(|(h, _)| h.event == event)
    }

    /// A fresh store for one call, made for a task of `trust` (the stamp on a request
    /// to a virtual member address), its deadline armed. `sender`: the task's calls,
    /// for murmur:message/send.
    fn store(&self, trust: Trust, sender: Option<message::Sender>) -> Result<Store<State>, String> {
        self.store_limited(trust, self.limit, sender)
    }

    /// [`Host::store`] bounded by `limit` instead of the per-call bound (a driver's
    /// turn takes `agent.timeout`).
    fn store_limited(
        &self,
        trust: Trust,
        limit: Duration,
        sender: Option<message::Sender>,
    ) -> Result<Store<State>, String> {
        let state = State::new(&self.grants, limit, trust, sender, self.quota.clone())?;
        let mut store = Store::new(engine::engine(), state);
        store.limiter(|s| s.limiter());
        store.set_epoch_deadline(1);
        // Every tick: yield to the runtime (the session's other work goes on), and trap
        // once the call's time is up.
        store.epoch_deadline_callback(|ctx| {
            if std::time::Instant::now() >= ctx.data().deadline {
                Ok(wasmtime::UpdateDeadline::Interrupt)
            } else {
                Ok(wasmtime::UpdateDeadline::Yield(1))
            }
        });
        Ok(store)
    }

    /// Runs `call` (one call of `what`) under the wall-clock bound, mapping a trap, the
    /// time limit and the memory limit to a message naming `what` and the limit.
    async fn bounded<R>(
        &self,
        what: &str,
        store: &mut Store<State>,
        call: impl AsyncFnOnce(&mut Store<State>) -> wasmtime::Result<R>,
    ) -> Result<R, String> {
        self.bounded_by(self.limit, what, store, call).await
    }

    /// [`Host::bounded`] with the bound `bound`.
    async fn bounded_by<R>(
        &self,
        bound: Duration,
        what: &str,
        store: &mut Store<State>,
        call: impl AsyncFnOnce(&mut Store<State>) -> wasmtime::Result<R>,
    ) -> Result<R, String> {
        let _ticking = engine::Ticking::start();
        store.data_mut().deadline = std::time::Instant::now() + bound;
        // The epoch traps a spinning guest at the deadline; the timeout also ends one
        // waiting on the host (the network), a few ticks later.
        let ran = tokio::time::timeout(bound + engine::TICK * 5, call(store)).await;
        let limit = format!(
            "{what} ran past its time limit of {} (the CPU and wall-clock bound of one call)",
            humantime::format_duration(bound)
        );
        match ran {
            Err(_) => Err(limit),
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                if let Some(said) = store.data().bound_hit() {
                    return Err(format!("{what} {said}"));
                }
                let cause = e.root_cause().to_string();
                if cause.contains(FIELDS_TOO_BIG) {
                    return Err(format!(
                        "{what} reached its limit of {} KiB for one set of HTTP fields \
                         (headers or trailers)",
                        FIELD_LIMIT >> 10
                    ));
                }
                if cause.contains(TABLE_FULL) {
                    return Err(format!(
                        "{what} reached its limit of {TABLE_LIMIT} resources held at once \
                         (files, streams, pollables, HTTP fields and requests)"
                    ));
                }
                if let Some(wanted) = store.data().memory_hit() {
                    return Err(format!(
                        "{what} exceeded its memory limit of {} MiB (it asked for {} MiB)",
                        MEMORY_LIMIT >> 20,
                        wanted >> 20
                    ));
                }
                if matches!(
                    e.downcast_ref::<wasmtime::Trap>(),
                    Some(wasmtime::Trap::Interrupt)
                ) {
                    return Err(limit);
                }
                Err(format!("{what} trapped: {}", root_cause(&e)))
            }
        }
    }
}

/// How wasmtime's ResourceTableError::Full reads (its Display), once the table is at
/// [`TABLE_LIMIT`].
const TABLE_FULL: &str = "resource table has no free keys";
/// How wasmtime-wasi-http's FieldMapError::TotalSizeTooBig reads: a fields resource
/// past [`FIELD_LIMIT`] (it traps).
const FIELDS_TOO_BIG: &str = "total size of fields exceeds limit";

/// A wasmtime error's root cause (not the "error while executing at wasm backtrace"
/// wrapper), its first line and its trap, short enough for a model to read.
fn root_cause(e: &wasmtime::Error) -> String {
    let text = e.root_cause().to_string();
    let mut text: String = text.lines().next().unwrap_or("").to_string();
    if text.len() > 400 {
        text.truncate(text.floor_char_boundary(400));
    }
    text
}
