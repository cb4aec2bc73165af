//! The WASM guests of components/ (docs/components.md), built once per test or bench
//! run: `cargo build --release --target wasm32-wasip2` in that workspace. Shared by
//! tests/it and benches/components.rs (`#[path]`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The built component `name` (its crate name, such as `tool-echo`).
pub fn guest(name: &str) -> PathBuf {
    let dir = built();
    let path = dir.join(format!("{}.wasm", name.replace('-', "_")));
    assert!(path.is_file(), "the guest build made no {}", path.display());
    path
}

fn built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| match build() {
        Ok(dir) => dir,
        Err(e) => panic!("{e}"),
    })
}

fn build() -> Result<PathBuf, String> {
    const TARGET: &str = "wasm32-wasip2";
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("components");
    let target_dir = root.join("target");
    if let Ok(out) = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        && out.status.success()
        && !String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.trim() == TARGET)
    {
        return Err(format!(
            "the tests build WASM components for {TARGET}, which is not installed: \
             run `rustup target add {TARGET}`, then the tests again"
        ));
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--release", "--quiet", "--target", TARGET])
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .map_err(|e| format!("cannot run cargo to build the guests: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let hint =
            if err.contains("target may not be installed") || err.contains("can't find crate") {
                format!(" (run `rustup target add {TARGET}`)")
            } else {
                String::new()
            };
        return Err(format!(
            "building the guests in {} failed{hint}:\n{err}",
            root.display()
        ));
    }
    Ok(target_dir.join(TARGET).join("release"))
}
