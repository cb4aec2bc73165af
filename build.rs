//! Lays out the release binary's code for a fast, small start: the functions in
//! link/symbol-order.txt (written by `just symbol-order`) go first in `.text`, side by
//! side, so a start maps a few hundred KiB of code instead of pages from all over the
//! binary (docs/benchmarks.md, "Where a session's start-up goes").
//!
//! Only where the linker takes `--symbol-ordering-file` (lld, which rustc uses on
//! x86_64 Linux; mold): a tiny program is linked with the flag first, so a linker
//! without it (GNU ld) builds mur as before instead of failing.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ORDER: &str = "link/symbol-order.txt";

fn main() {
    println!("cargo:rerun-if-changed={ORDER}");
    println!("cargo:rerun-if-changed=build.rs");
    // Debug builds are for tests: their symbols are not the release's anyway.
    if env::var("PROFILE").as_deref() != Ok("release") {
        return;
    }
    let order = Path::new(&env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it")).join(ORDER);
    if !order.is_file() {
        return;
    }
    let args = [
        format!("-Wl,--symbol-ordering-file={}", order.display()),
        // Names the file lists that this build lacks (another version of a crate)
        // are skipped; the rest still count.
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    if links_with(&args) {
        for arg in args {
            println!("cargo:rustc-link-arg-bin=mur={arg}");
        }
    }
}

/// Whether rustc, as cargo runs it for this target, links a program with `args`.
fn links_with(args: &[String]) -> bool {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets it"));
    let mut rustc = Command::new(env::var_os("RUSTC").expect("cargo sets it"));
    rustc
        .args(["--crate-name", "order_probe", "--crate-type", "bin"])
        .arg("--target")
        .arg(env::var("TARGET").expect("cargo sets it"))
        .arg("-o")
        .arg(out.join("order_probe"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // The same linker and flags as mur's own link.
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        rustc.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    }
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        let mut flag = OsString::from("linker=");
        flag.push(linker);
        rustc.arg("-C").arg(flag);
    }
    for arg in args {
        rustc.arg("-C").arg(format!("link-arg={arg}"));
    }
    rustc.arg("-");
    let Ok(mut child) = rustc.spawn() else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        let _ = stdin.write_all(b"fn main() {}\n");
    }
    child.wait().is_ok_and(|status| status.success())
}
