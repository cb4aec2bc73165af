//! The official OpenTelemetry schema, from PyPI: `opentelemetry-proto` in the
//! repository's `.venv` (made here when it is missing, as .ci/run makes it), and
//! tests/otel/check.py, which parses OTLP/JSON lines into `TracesData` with
//! `google.protobuf.json_format`. A test that cannot get them fails: never a skip.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// The version .ci/run installs.
pub const OPENTELEMETRY_PROTO: &str = "opentelemetry-proto==1.45.2";

/// The venv's python, with `opentelemetry.proto` importable.
pub fn python() -> PathBuf {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    READY
        .get_or_init(|| {
            let venv = crate::repo_root().join(".venv");
            let python = venv.join("bin/python");
            let imports = || {
                Command::new(&python)
                    .args(["-c", "import opentelemetry.proto.trace.v1.trace_pb2"])
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if imports() {
                return Ok(python);
            }
            let run = |cmd: &mut Command, what: &str| -> Result<(), String> {
                let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
                if out.status.success() {
                    Ok(())
                } else {
                    Err(format!("{what}: {}", String::from_utf8_lossy(&out.stderr)))
                }
            };
            if !python.exists() {
                run(
                    Command::new("python3").args(["-m", "venv"]).arg(&venv),
                    "python3 -m venv .venv",
                )?;
            }
            run(
                Command::new(venv.join("bin/pip")).args(["install", "-q", OPENTELEMETRY_PROTO]),
                "pip install opentelemetry-proto",
            )?;
            if imports() {
                Ok(python)
            } else {
                Err("opentelemetry.proto does not import after pip install".into())
            }
        })
        .clone()
        .unwrap_or_else(|e| panic!("the OpenTelemetry schema is not at hand: {e}"))
}

/// Parses `otlp` (OTLP/JSON lines) with the official schema; panics with the
/// schema's refusal. Returns check.py's summary: `lines`, and every span as read.
pub fn parse(otlp: &str) -> Value {
    let script = crate::repo_root().join("tests/otel/check.py");
    let mut child = Command::new(python())
        .arg(script)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(otlp.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the schema refused the export: {}\n{otlp}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("check.py prints JSON")
}
