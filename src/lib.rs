//! mur (murmur): packs, installs and runs capsules, and launches formations of them.
//!
//! The `mur` binary is a thin layer over this library: `cli` parses the command line
//! and each concern of the roster schema lives in the module named after it.

pub mod agent;
pub mod catalogue;
pub mod cli;
pub mod diag;
pub mod explain;
pub mod paths;
pub mod records;
pub mod running;
pub mod trace;
pub mod yaml;

pub use diag::{Diagnostic, Location, Result};
