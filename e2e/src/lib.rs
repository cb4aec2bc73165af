//! The hermetic e2e harness (run with `just e2e`); plain `cargo test` does not build it.
