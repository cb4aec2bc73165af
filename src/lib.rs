//! mur (murmur): packs, installs and runs capsules, and launches formations of them.
//!
//! The `mur` binary is a thin layer over this library: `cli` parses the command line
//! and each concern of the roster schema lives in the module named after it.

// The unit tests use only some of the dev-dependencies (the rest serve tests/ and benches/).
#![cfg_attr(test, allow(unused_crate_dependencies))]

/// The allocator of mur and of everything that links the library (tests, benches):
/// with glibc's malloc a task spent about a fifth of its CPU allocating
/// (docs/benchmarks.md). `no_thp`: without it idle RSS grew by 6 MiB of huge pages.
/// `v2`: mimalloc 2, whose first allocations cost a session's start-up 6% less CPU
/// than mimalloc 3's arena set-up, at the same throughput and RSS. The unit tests'
/// build (`cfg(test)`) links the library a second time, through the harness crate
/// mur-test, and that copy sets it: a binary has one.
#[cfg(not(test))]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod a2a;
pub mod a2a_client;
pub mod admission;
pub mod agent;
pub(crate) mod approval;
pub(crate) mod approve;
pub mod artifact;
pub mod call_member;
pub(crate) mod catalogue;
pub mod cgroup;
pub mod channel;
pub mod cli;
pub mod component;
pub mod confine;
pub mod credential;
pub mod delegation;
pub mod descendants;
pub(crate) mod diag;
pub(crate) mod doctor;
pub mod door;
pub mod env;
pub mod exit;
pub(crate) mod explain;
pub mod fence;
pub mod formation;
pub(crate) mod fsutil;
pub mod grant;
pub(crate) mod host;
pub(crate) mod ids;
pub mod kube;
pub mod lifeline;
pub(crate) mod lock;
pub mod manifest;
pub mod output;
pub mod pack;
pub(crate) mod paths;
pub(crate) mod preflight;
pub mod proc;
pub(crate) mod readiness;
pub(crate) mod records;
pub mod retention;
pub mod roster;
pub mod running;
pub(crate) mod scaffold;
pub(crate) mod session;
pub mod shell;
pub mod signals;
pub mod spawn;
pub mod store;
pub mod sync;
pub(crate) mod table;
pub(crate) mod testing;
pub mod timing;
pub(crate) mod tls;
pub mod trace;
pub mod virtual_address;
pub(crate) mod yaml;

pub use diag::{Diagnostic, Location, Result};
