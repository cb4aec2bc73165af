//! Lays out the release binary's code for a fast, small start: the functions in
//! link/symbol-order/<target>.txt (written by `just symbol-order`) go first in `.text`,
//! side by side, so a start maps a few hundred KiB of code instead of pages from all
//! over the binary (docs/benchmarks.md, "The code layout").
//!
//! Only where a linker takes `--symbol-ordering-file`: a tiny program is linked with
//! the flags first, and a build whose linker refuses them links as before instead of
//! failing. rustc links x86_64 gnu with its own lld, which takes the flag. Other
//! targets (musl) link through the system `cc` and GNU ld, which does not; for them
//! rustc's lld is tried through `cc`, as rustc itself calls it for gnu.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=link/symbol-order");
    println!("cargo:rerun-if-changed=build.rs");
    // Debug builds are for tests: their symbols are not the release's anyway.
    if env::var("PROFILE").as_deref() != Ok("release") {
        return;
    }
    let target = cargo("TARGET");
    let order = Path::new(&cargo("CARGO_MANIFEST_DIR"))
        .join("link/symbol-order")
        .join(format!("{target}.txt"));
    if !order.is_file() {
        return;
    }
    let ordering = vec![
        format!("-Wl,--symbol-ordering-file={}", order.display()),
        // Names the file lists that this build lacks (another version of a crate)
        // are skipped; the rest still count.
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    let mut with_lld = vec!["-fuse-ld=lld".to_string()];
    if let Some(gcc_ld) = rustc_gcc_ld() {
        with_lld.push(format!("-B{}", gcc_ld.display()));
    }
    with_lld.extend(ordering.iter().cloned());
    for args in [ordering, with_lld] {
        if links_with(&target, &args) {
            for arg in args {
                println!("cargo:rustc-link-arg-bin=mur={arg}");
            }
            return;
        }
    }
}

fn cargo(var: &str) -> String {
    env::var(var).unwrap_or_else(|_| panic!("cargo sets {var} for build scripts"))
}

/// The folder of rustc's `ld.lld` for a `cc` driver (`-B`), in the toolchain.
fn rustc_gcc_ld() -> Option<PathBuf> {
    let out = Command::new(cargo("RUSTC"))
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    let dir = sysroot
        .join("lib/rustlib")
        .join(cargo("HOST"))
        .join("bin/gcc-ld");
    dir.join("ld.lld").is_file().then_some(dir)
}

/// Whether rustc, as cargo runs it for this target, links a program with `args`.
fn links_with(target: &str, args: &[String]) -> bool {
    let mut rustc = Command::new(cargo("RUSTC"));
    rustc
        .args(["--crate-name", "order_probe", "--crate-type", "bin"])
        .args(["--target", target])
        .arg("-o")
        .arg(PathBuf::from(cargo("OUT_DIR")).join("order_probe"))
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
