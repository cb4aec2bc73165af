//! mur (murmur): packs, installs and runs capsules, and launches formations of them.
//!
//! The `mur` binary is a thin layer over this library: `cli` parses the command line
//! and each concern of the roster schema lives in the module named after it.

pub mod a2a;
pub mod admission;
pub mod agent;
pub mod call_member;
pub mod catalogue;
pub mod channel;
pub mod cli;
pub mod credential;
pub mod diag;
pub mod doctor;
pub mod door;
pub mod env;
pub mod explain;
pub mod formation;
pub mod fsutil;
pub mod host;
pub mod ids;
pub mod lifeline;
pub mod lock;
pub mod manifest;
pub mod output;
pub mod pack;
pub mod paths;
pub mod proc;
pub mod readiness;
pub mod records;
pub mod retention;
pub mod roster;
pub mod running;
pub mod scaffold;
pub mod session;
pub mod signals;
pub mod store;
pub mod sync;
pub mod testing;
pub mod timing;
pub mod trace;
pub mod yaml;

pub use diag::{Diagnostic, Location, Result};
