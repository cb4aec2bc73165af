//! Links the release binary for a fast, small start (docs/benchmarks.md):
//!
//! - Code layout: the functions in link/symbol-order/<target>.txt (written by `just
//!   symbol-order`) go first in `.text`, side by side, so a start maps a few hundred
//!   KiB of code instead of pages from all over the binary ("The code layout").
//! - RELR relocations (`-z pack-relative-relocs`): the loader reads a few KiB at
//!   start instead of 0.85 MiB ("Relocations").
//!
//! Each only where it works: a tiny program is linked with the flags first (and run,
//! for RELR, which the target's libc must load), and a build where the probe fails
//! links as before instead of failing. rustc links x86_64 gnu with its own lld, which
//! takes `--symbol-ordering-file`. Other targets (musl) link through the system `cc`
//! and GNU ld, which does not; for them rustc's lld is tried through `cc`, as rustc
//! itself calls it for gnu.

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
    let mut chosen = ordering_args(&target);
    // RELR: the binary's 56,000 relative relocations as a bitmap of a few KiB instead
    // of 0.85 MiB of 24-byte entries, which the loader reads at every start
    // (docs/benchmarks.md, "Relocations"). glibc loads it from 2.36 on, musl from
    // 1.2.4; the probe is run, so a libc too old to load it is found here.
    let mut relr = chosen.clone();
    relr.push("-Wl,-z,pack-relative-relocs".to_string());
    if probe(&target, &relr, Probe::Run) {
        chosen = relr;
    }
    for arg in chosen {
        println!("cargo:rustc-link-arg-bin=mur={arg}");
    }
}

/// The linker arguments that lay out `.text` by this target's list, or none.
fn ordering_args(target: &str) -> Vec<String> {
    let order = Path::new(&cargo("CARGO_MANIFEST_DIR"))
        .join("link/symbol-order")
        .join(format!("{target}.txt"));
    if !order.is_file() {
        return Vec::new();
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
    [ordering, with_lld]
        .into_iter()
        .find(|args| probe(target, args, Probe::Link))
        .unwrap_or_default()
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

#[derive(PartialEq)]
enum Probe {
    /// The program links.
    Link,
    /// The program links and runs: only for a target this machine runs (the host's
    /// architecture); a cross build never takes what needs this.
    Run,
}

/// Whether rustc, as cargo runs it for this target, links a program with `args`
/// (and, for `kind` `Probe::Run`, whether the program then runs).
fn probe(target: &str, args: &[String], kind: Probe) -> bool {
    let host_arch = cargo("HOST").split('-').next().map(str::to_string);
    if kind == Probe::Run && host_arch != env::var("CARGO_CFG_TARGET_ARCH").ok() {
        return false;
    }
    let program = PathBuf::from(cargo("OUT_DIR")).join("link_probe");
    let mut rustc = Command::new(cargo("RUSTC"));
    rustc
        .args(["--crate-name", "link_probe", "--crate-type", "bin"])
        .args(["--target", target])
        .arg("-o")
        .arg(&program)
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
    if !child.wait().is_ok_and(|status| status.success()) {
        return false;
    }
    kind == Probe::Link
        || Command::new(&program)
            .status()
            .is_ok_and(|status| status.success())
}
