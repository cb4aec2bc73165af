//! Bounds on what a component makes the host hold (docs/components.md, "Limits"):
//! resource-table entries, open descriptors, wasi:http fields and bodies per instance,
//! and the session's write quota on its work folder and tmp/.
//!
//! wasmtime bounds the table (`ResourceTable::set_max_capacity`) and each fields
//! resource (`WasiHttpCtx::set_field_size_limit`). Descriptors and written bytes have
//! no knob in wasmtime-wasi 48, so [`add_to_linker`] shadows the few
//! wasi:filesystem functions that open or write, counts, and calls wasmtime-wasi's own
//! implementation; file output streams are wrapped by [`Metered`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynOutputStream, FsResult, OutputStream, Pollable, StreamError};

/// What the counting functions need of a store's state: its table and its counts,
/// beside wasmtime-wasi's filesystem view. The state implements it, so this module
/// knows nothing of that state (as wasmtime's own WASI contexts do).
pub(super) trait Counts: WasiFilesystemView + Send + 'static {
    fn counted(&mut self) -> (&mut ResourceTable, &mut Counted);
}

/// Resource-table entries one instance may hold at once (files, streams, pollables,
/// fields, requests...). wasmtime's default is 1,000,000.
pub const TABLE_LIMIT: usize = 1024;
/// Files and folders one instance may hold open through wasi:filesystem at once.
pub const FILE_LIMIT: usize = 128;
/// The in-memory size of one wasi:http fields resource (wasmtime's measure: names,
/// values and bookkeeping); with [`TABLE_LIMIT`], at most 32 MiB of fields.
pub const FIELD_LIMIT: usize = 32 << 10;
/// Bytes of one request body a component sends, and of one response body it reads.
pub const BODY_LIMIT: usize = 16 << 20;
/// Bytes a session's components may write to its work folder and tmp/ (all calls of
/// the session together); each file or folder created counts [`CREATE_COST`].
pub const WRITE_QUOTA: u64 = 1 << 30;
/// What creating a file, folder or link costs against [`WRITE_QUOTA`] (a disk block).
pub const CREATE_COST: u64 = 4096;

/// The first limit an instance hit, said as the error names it; shared with the
/// streams it opened.
pub(super) type Hit = Arc<OnceLock<String>>;

/// A session's write budget: shared by every call of its components.
#[derive(Debug)]
pub struct Quota {
    used: AtomicU64,
    limit: u64,
}

impl Default for Quota {
    /// [`WRITE_QUOTA`] (or the test setting `MUR_TEST_WRITE_QUOTA`).
    fn default() -> Self {
        Quota::new(crate::testing::write_quota(WRITE_QUOTA))
    }
}

impl Quota {
    pub fn new(limit: u64) -> Quota {
        Quota {
            used: AtomicU64::new(0),
            limit,
        }
    }

    /// Takes `n` bytes from the budget, or says which limit refused them (and takes
    /// nothing).
    fn charge(&self, n: u64, hit: &Hit) -> wasmtime::Result<()> {
        let ok = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|t| *t <= self.limit)
            });
        if ok.is_ok() {
            return Ok(());
        }
        let said = format!(
            "reached the session's write quota of {} MiB (work folder and /tmp together)",
            self.limit >> 20
        );
        let _ = hit.set(said.clone());
        wasmtime::bail!("{said}")
    }
}

/// What the shadowing functions need of the store's state.
pub(super) struct Counted {
    pub quota: Arc<Quota>,
    pub hit: Hit,
    /// Table indexes of the descriptors `open-at` made (some may be closed since).
    open: Vec<u32>,
}

impl Counted {
    pub(super) fn new(quota: Arc<Quota>) -> Counted {
        Counted {
            quota,
            hit: Hit::default(),
            open: Vec::new(),
        }
    }
}

const TYPES: &str = "wasi:filesystem/types@0.2.12";

fn fs_result<T>(r: FsResult<T>) -> wasmtime::Result<Result<T, ErrorCode>> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(e) => e.downcast().map(Err),
    }
}

/// Shadows wasi:filesystem's open-at, write, write-via-stream, append-via-stream and
/// set-size on `linker` (where WASI p2 is linked already) with counting versions.
pub(super) fn add_to_linker<T: Counts>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store,
         (fd, path_flags, path, oflags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                let (table, counted) = state.counted();
                counted
                    .open
                    .retain(|&rep| table.get(&Resource::<Descriptor>::new_own(rep)).is_ok());
                counted.open.sort_unstable();
                counted.open.dedup();
                if counted.open.len() >= FILE_LIMIT {
                    let said = format!("reached its limit of {FILE_LIMIT} open files and folders");
                    let _ = counted.hit.set(said.clone());
                    wasmtime::bail!("{said}");
                }
                if oflags.contains(OpenFlags::CREATE) {
                    counted.quota.charge(CREATE_COST, &counted.hit)?;
                }
                let opened = state
                    .filesystem()
                    .open_at(fd, path_flags, path, oflags, flags)
                    .await;
                if let Ok(new) = &opened {
                    state.counted().1.open.push(new.rep());
                }
                Ok((fs_result(opened)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.write",
        |mut store, (fd, buf, offset): (Resource<Descriptor>, Vec<u8>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                let counted = state.counted().1;
                counted.quota.charge(buf.len() as u64, &counted.hit)?;
                let wrote = state.filesystem().write(fd, buf, offset).await;
                Ok((fs_result(wrote)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-size",
        |mut store, (fd, size): (Resource<Descriptor>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                // A sparse file costs no disk, but whoever reads it pays for its size.
                let counted = state.counted().1;
                counted.quota.charge(size, &counted.hit)?;
                let set = state.filesystem().set_size(fd, size).await;
                Ok((fs_result(set)?,))
            })
        },
    )?;
    for append in [false, true] {
        let name = if append {
            "[method]descriptor.append-via-stream"
        } else {
            "[method]descriptor.write-via-stream"
        };
        let wrap = move |state: &mut T, fd: Resource<Descriptor>, offset: u64| {
            let mut fs = state.filesystem();
            let made = if append {
                fs.append_via_stream(fd)
            } else {
                fs.write_via_stream(fd, offset)
            };
            let stream = match made {
                Ok(s) => s,
                Err(e) => return fs_result(Err(e)),
            };
            let (table, counted) = state.counted();
            let inner = table.delete(stream)?;
            let metered: DynOutputStream = Box::new(Metered {
                inner,
                quota: counted.quota.clone(),
                hit: counted.hit.clone(),
            });
            Ok(Ok(table.push(metered)?))
        };
        if append {
            types.func_wrap(name, move |mut store, (fd,): (Resource<Descriptor>,)| {
                Ok((wrap(store.data_mut(), fd, 0)?,))
            })?;
        } else {
            types.func_wrap(
                name,
                move |mut store, (fd, offset): (Resource<Descriptor>, u64)| {
                    Ok((wrap(store.data_mut(), fd, offset)?,))
                },
            )?;
        }
    }
    linker.allow_shadowing(false);
    Ok(())
}

/// A file's output stream that charges what goes through it to the session's quota;
/// past it, the call traps.
struct Metered {
    inner: DynOutputStream,
    quota: Arc<Quota>,
    hit: Hit,
}

impl Metered {
    fn charge(&self, n: usize) -> Result<(), StreamError> {
        self.quota
            .charge(n as u64, &self.hit)
            .map_err(StreamError::Trap)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Metered {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for Metered {
    fn write(&mut self, bytes: bytes::Bytes) -> Result<(), StreamError> {
        self.charge(bytes.len())?;
        self.inner.write(bytes)
    }
    fn flush(&mut self) -> Result<(), StreamError> {
        self.inner.flush()
    }
    fn check_write(&mut self) -> Result<usize, StreamError> {
        self.inner.check_write()
    }
    fn write_zeroes(&mut self, n: usize) -> Result<(), StreamError> {
        self.charge(n)?;
        self.inner.write_zeroes(n)
    }
    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}
