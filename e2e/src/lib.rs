//! The hermetic e2e harness: whole formations in Linux containers, with real
//! SIGKILLs, a real OOM kill and the spec's real time limits. Run with `just e2e`
//! (see e2e/README.md); plain `cargo test` does not build it.

pub mod container;
pub mod formation;
pub mod procs;
pub mod report;
pub mod scenarios;
pub mod traces;
