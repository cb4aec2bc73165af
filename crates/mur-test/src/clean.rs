//! The real `mur` with none of the caller's own `MURMUR_*` or `MUR_TEST_*` variables: a
//! test or bench run inside a formation member must not become one, and a developer's
//! test settings must not leak in. Nor with cargo's `LD_LIBRARY_PATH` (`as_installed`).
//! Benches use it as it is: they measure the spec's real limits and so add no time scale.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The `mur` cargo built for this test or bench binary. `env!("CARGO_BIN_EXE_mur")` is
/// set only when cargo compiles mur's own tests and benches, not this crate, so it is
/// read where it is also set at run time (nextest sets it), else found where cargo puts
/// it: beside the folder of the running test binary (`target/<profile>/deps/it-…` has
/// `target/<profile>/mur`).
pub fn mur_built() -> &'static PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        if let Some(bin) = std::env::var_os("CARGO_BIN_EXE_mur") {
            return PathBuf::from(bin);
        }
        let exe = std::env::current_exe().expect("the running test binary's path");
        let mut dir = exe.parent().expect("a folder").to_path_buf();
        if dir.ends_with("deps") {
            dir.pop();
        }
        let bin = dir.join("mur");
        assert!(
            bin.is_file(),
            "no mur binary at {} (cargo builds it for mur's own tests and benches; set CARGO_BIN_EXE_mur to name another)",
            bin.display()
        );
        bin
    })
}

/// The `mur` to run: cargo's, or in a bench the one `MUR_BENCH_BIN` names. `just bench`
/// names `cargo build --release`'s, the build `cargo install` gives: the one `cargo
/// bench` builds has the dev-dependencies' features as well (the whole `regex-automata`),
/// so its code and its symbols differ (docs/benchmarks.md). Tests run cargo's: they are
/// told apart by the profile, since cargo builds benches with `cfg(test)` too (a gate
/// on it had every bench run cargo's build until 2026-12-06).
pub fn mur_bin() -> OsString {
    if !cfg!(debug_assertions)
        && let Some(bin) = std::env::var_os("MUR_BENCH_BIN")
    {
        return bin;
    }
    mur_built().into()
}

pub fn clean_mur() -> Command {
    let mut cmd = Command::new(mur_bin());
    as_installed(&mut cmd);
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        // Nor a developer's collector (live trace export, docs/trace.md).
        if text.starts_with("MURMUR_")
            || text.starts_with("MUR_TEST_")
            || text.starts_with("OTEL_EXPORTER_OTLP_")
        {
            cmd.env_remove(&name);
        }
    }
    cmd
}

/// Without what cargo adds for its test and bench runs: `LD_LIBRARY_PATH` naming every
/// build output folder, which the dynamic loader then searches for each library before
/// the system's (some 180 failed opens per start of `mur`). A program started from here
/// loads as it would for a user; benches start every peer so.
pub fn as_installed(cmd: &mut Command) -> &mut Command {
    cmd.env_remove("LD_LIBRARY_PATH")
}
