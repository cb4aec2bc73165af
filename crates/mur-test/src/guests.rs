//! The WASM guests of components/ (docs/components.md), built once per test or bench
//! process by scripts/guests.sh (`cargo build --release --target wasm32-wasip2` in that
//! workspace), or once per run by nextest's setup script, which names their folder in
//! `MUR_GUESTS_DIR` (.config/nextest.toml). Shared by tests/it and benches/.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The folder of guests already built for this run (nextest's setup script sets it).
const GUESTS_DIR_ENV: &str = "MUR_GUESTS_DIR";

/// The built component `name` (its crate name, such as `tool-echo`).
pub fn guest(name: &str) -> PathBuf {
    let dir = built();
    let path = dir.join(format!("{}.wasm", name.replace('-', "_")));
    assert!(path.is_file(), "the guest build made no {}", path.display());
    path
}

fn built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        if let Some(dir) = std::env::var_os(GUESTS_DIR_ENV) {
            return PathBuf::from(dir);
        }
        match build() {
            Ok(dir) => dir,
            Err(e) => panic!("{e}"),
        }
    })
}

fn build() -> Result<PathBuf, String> {
    let root = crate::repo_root();
    let out = Command::new("bash")
        .arg(root.join("scripts/guests.sh"))
        .env_remove("NEXTEST_ENV")
        .output()
        .map_err(|e| format!("cannot run scripts/guests.sh to build the guests: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let hint =
            if err.contains("target may not be installed") || err.contains("can't find crate") {
                " (run `rustup target add wasm32-wasip2`)"
            } else {
                ""
            };
        return Err(format!(
            "building the guests in {} failed{hint}:\n{err}",
            root.join("components").display()
        ));
    }
    let dir = String::from_utf8_lossy(&out.stdout);
    match dir.lines().last() {
        Some(dir) if Path::new(dir).is_dir() => Ok(PathBuf::from(dir)),
        _ => Err(format!(
            "scripts/guests.sh named no folder of guests:\n{dir}{err}"
        )),
    }
}
