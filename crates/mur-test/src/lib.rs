//! The one harness of mur's tests (as uv's `uv-test`), shared by tests/it (as
//! `support`), benches/ and e2e/: a `World` (a temporary HOME and project, and the real
//! `mur` run in them with a clean environment), plus one submodule per kind of
//! fixture: `session` (sessions as real processes, a launcher's side of a formation),
//! `door` (a real door on 127.0.0.1), `call_member` (doors running the agent loop),
//! `fake` (stand-in members for the launcher), `guests` (the WASM components),
//! `otel` (the OpenTelemetry checker), `clean` (the `mur` binary with a clean
//! environment) and `measure` (what the benchmarks measure with).

pub mod call_member;
pub mod clean;
pub mod door;
pub mod fake;
pub mod guests;
pub mod measure;
pub mod otel;
pub mod session;

use std::io::{Cursor, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub use assert_cmd::prelude::*;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// The repository's root (this crate is crates/mur-test): fixtures, scripts and the
/// WASM guests' workspace are found from it.
pub fn repo_root() -> &'static Path {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir.parent().and_then(Path::parent).unwrap()
}

/// The one scale every `mur` the tests start puts on the spec's waits
/// (`MUR_TEST_TIME_SCALE`, src/timing.rs): 20 s become 1 s, 25 s become 1.25 s.
pub const TIME_SCALE: &str = "0.05";

/// Runs `cmd` to its end and asserts it succeeded, showing its stderr when not.
pub fn ok(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The real `mur` with a clean environment (`clean::clean_mur`: no `MURMUR_*`, no
/// `MUR_TEST_*` of the test's own), then the one time scale.
pub fn mur() -> Command {
    let mut cmd = clean::clean_mur();
    cmd.env("MUR_TEST_TIME_SCALE", TIME_SCALE);
    cmd
}

/// A temporary folder holding `home/` (HOME) and `proj/` (the current folder).
pub struct World {
    pub dir: tempfile::TempDir,
    /// `dir`, canonical (members and records name real paths).
    pub root: PathBuf,
    pub home: PathBuf,
    pub proj: PathBuf,
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl World {
    /// Starts `mur run --roster --json` in `project` and returns it with its readiness
    /// object (the first line of its stdout).
    pub fn launch_json(&self, project: &Path) -> (KillOnDrop, serde_json::Value) {
        use std::io::BufRead;
        let launcher = self
            .mur_in(project)
            .args(["run", "--roster", "--json"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut launcher = KillOnDrop::pid(launcher);
        let mut first = String::new();
        std::io::BufReader::new(launcher.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let ready = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first:?}"));
        (launcher, ready)
    }

    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        let proj = root.join("proj");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&proj).unwrap();
        World {
            dir,
            root,
            home,
            proj,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// `mur` (see [`mur`]) with HOME set to `home` and run in `proj`.
    pub fn mur(&self) -> Command {
        self.mur_in(&self.proj)
    }

    pub fn mur_in(&self, cwd: &Path) -> Command {
        let mut cmd = mur();
        cmd.env("HOME", &self.home).current_dir(cwd);
        cmd
    }

    /// `mur` as an unprivileged user when the tests run as root, so that file
    /// permissions bind it; the whole world is opened to that user.
    pub fn mur_unprivileged(&self) -> Command {
        let mut cmd = self.mur();
        if nix::unistd::geteuid().is_root() {
            chown_all(self.dir.path(), 65534);
            cmd.uid(65534).gid(65534);
        }
        cmd
    }

    /// Every file under the project's and home's .murmur, with its bytes.
    pub fn stores_snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for root in [self.proj.join(".murmur"), self.home.join(".murmur")] {
            walk(&root, &mut out);
        }
        out.sort();
        out
    }
}

/// Every file under `dir`, at any depth (none if `dir` is missing).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.push((p.clone(), Vec::new()));
            walk(&p, out);
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
}

fn chown_all(path: &Path, id: u32) {
    std::os::unix::fs::lchown(path, Some(id), Some(id)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for e in std::fs::read_dir(path).unwrap() {
            chown_all(&e.unwrap().path(), id);
        }
    }
}

/// A murmur.yaml every manifest rule accepts.
pub fn manifest_text(name: &str, version: &str) -> String {
    format!(
        "name: {name}\nversion: {version}\ndescription: A test capsule.\nagent:\n  transport: builtin\n"
    )
}

/// A capsule source folder: murmur.yaml, a note and an executable script.
pub fn write_capsule(dir: &Path, name: &str, version: &str) {
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    std::fs::write(dir.join("murmur.yaml"), manifest_text(name, version)).unwrap();
    std::fs::write(dir.join("docs/notes.md"), "# Notes\n").unwrap();
    std::fs::write(dir.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A zip of the given entries (stored, so names and bytes are easy to patch).
pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    for (name, data) in entries {
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// A capsule zip whose second entry is `name` (written as a same-length placeholder
/// and patched, since zip writers refuse such names).
pub fn zip_with_entry_named(name: &str) -> Vec<u8> {
    let placeholder = "x".repeat(name.len());
    let m = manifest_text("evil", "1.0.0");
    let bytes = zip_of(&[("murmur.yaml", m.as_bytes()), (&placeholder, b"pwned")]);
    patch(bytes, placeholder.as_bytes(), name.as_bytes())
}

pub fn patch(mut bytes: Vec<u8>, from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mut hits = 0;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            hits += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    assert!(hits > 0, "nothing to patch");
    bytes
}

/// A capsule zip with 4 MiB of zeros deflated to a few KiB.
pub fn zip_bomb() -> Vec<u8> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    zip.start_file("murmur.yaml", options).unwrap();
    zip.write_all(manifest_text("bomb", "1.0.0").as_bytes())
        .unwrap();
    zip.start_file("zeros.bin", options).unwrap();
    zip.write_all(&vec![0u8; 4 << 20]).unwrap();
    zip.finish().unwrap().into_inner()
}

pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `mur pack` and returns the sha256 it printed.
pub fn pack(world: &World, src: &Path, out: &Path) -> String {
    let o = world
        .mur()
        .arg("pack")
        .arg(src)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    text.lines()
        .find_map(|l| l.strip_prefix("sha256 "))
        .unwrap_or_else(|| panic!("no sha256 in {text}"))
        .to_string()
}

/// A child the test started, SIGKILLed if the test ends before it did (a failed
/// assertion): by its pid, or with [`KillOnDrop::group`] the process group it leads
/// (a launcher started with `process_group(0)`, its members included). Only while the
/// child is not yet reaped: until then its pid and group id are the test's own.
pub struct KillOnDrop {
    child: std::process::Child,
    group: bool,
}

impl KillOnDrop {
    pub fn pid(child: std::process::Child) -> KillOnDrop {
        KillOnDrop {
            child,
            group: false,
        }
    }

    /// For a child spawned with `process_group(0)`, which leads its own group.
    pub fn group(child: std::process::Child) -> KillOnDrop {
        KillOnDrop { child, group: true }
    }

    /// `Child::wait_with_output` with the guard kept: a panic while the pipes are
    /// read still ends the child. Stderr is read on a thread so neither pipe fills.
    pub fn wait_with_output(&mut self) -> std::process::Output {
        use std::io::Read;
        drop(self.child.stdin.take());
        let mut stderr = self.child.stderr.take();
        let err = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(e) = stderr.as_mut() {
                e.read_to_end(&mut buf).unwrap();
            }
            buf
        });
        let mut stdout = Vec::new();
        if let Some(mut o) = self.child.stdout.take() {
            o.read_to_end(&mut stdout).unwrap();
        }
        let status = self.child.wait().unwrap();
        std::process::Output {
            status,
            stdout,
            stderr: err.join().unwrap(),
        }
    }
}

impl std::ops::Deref for KillOnDrop {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.child
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.child
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            if self.group {
                let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            } else {
                let _ = self.child.kill();
            }
            let _ = self.child.wait();
        }
    }
}
