//! Which transport a capsule's agent uses, as plain data: the session turns
//! `murmur.yaml`'s `agent.transport` into this, so the agent does not depend on the
//! manifest's shape.

use std::path::PathBuf;

use super::Transport;
use super::builtin::Builtin;
use super::process::ProcessTransport;

/// `agent.transport` of murmur.yaml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportConfig {
    /// The deterministic offline model in the binary.
    Builtin,
    /// An OpenAI-compatible chat completions server. Not run by this module yet.
    Http {
        base_url: String,
        model: String,
        api_key_env: Option<String>,
    },
    /// A native harness speaking JSON lines on stdin and stdout.
    Process(ProcessConfig),
}

impl TransportConfig {
    /// The name the trace gives it.
    pub fn name(&self) -> &'static str {
        match self {
            TransportConfig::Builtin => "builtin",
            TransportConfig::Http { .. } => "http",
            TransportConfig::Process(_) => "process",
        }
    }
}

/// How to start a `transport: process` harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessConfig {
    /// The program and its arguments. A relative program path with a `/` in it is
    /// taken from `cwd`.
    pub command: Vec<String>,
    /// The harness's current directory: the unpacked capsule, so the manifest's
    /// relative `command` works as written.
    pub cwd: PathBuf,
    /// The harness's whole environment besides `PATH` (inherited): the session passes
    /// what the capsule may see. Nothing else of mur's environment reaches it, so no
    /// `MURMUR_FORMATION_*` variable does.
    pub env: Vec<(String, String)>,
    /// Where the harness's stderr goes (the session's logs/); `None` inherits mur's.
    pub stderr: Option<PathBuf>,
}

/// Builds the transport for one task. `Err` names what is missing.
pub fn transport(config: &TransportConfig) -> Result<Box<dyn Transport>, String> {
    match config {
        TransportConfig::Builtin => Ok(Box::new(Builtin)),
        TransportConfig::Process(p) => Ok(Box::new(ProcessTransport::new(p.clone())?)),
        TransportConfig::Http { .. } => {
            Err("transport: http is not available in this build of mur".to_string())
        }
    }
}
