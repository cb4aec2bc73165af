//! Which transport a capsule's agent uses, as plain data: the session turns
//! `murmur.yaml`'s `agent.transport` into this, so the agent does not depend on the
//! manifest's shape.

use std::path::{Path, PathBuf};

use std::time::Duration;

use super::Transport;
use super::builtin::Builtin;
use super::http::HttpTransport;
use super::process::ProcessTransport;
use crate::diag::Diagnostic;
use crate::manifest;

/// `agent.transport` of murmur.yaml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportConfig {
    /// The deterministic offline model in the binary.
    Builtin,
    /// An OpenAI-compatible chat completions server, or another provider through a
    /// driver component.
    Http(HttpConfig),
    /// A native harness speaking JSON lines on stdin and stdout.
    Process(ProcessConfig),
}

impl TransportConfig {
    /// The capsule's `agent.transport`. A process harness runs in `capsule_root`
    /// with `env` (see [`ProcessConfig`]) and its stderr to `stderr`.
    pub fn from_manifest(
        transport: &manifest::Transport,
        capsule_root: &Path,
        env: Vec<(String, String)>,
        stderr: Option<PathBuf>,
        confine: Option<crate::confine::Confined>,
    ) -> Self {
        match transport {
            manifest::Transport::Builtin => TransportConfig::Builtin,
            manifest::Transport::Http(h) => TransportConfig::Http(HttpConfig {
                base_url: h.base_url.clone(),
                model: h.model.clone(),
                api_key_env: h.api_key_env.clone(),
                driver: h.driver.clone(),
                ca_file: h.ca_file.as_ref().map(|f| capsule_root.join(f)),
                timeout: h.timeout,
                max_retries: h.max_retries,
                stream: h.stream,
                sampling: h.sampling.clone(),
            }),
            manifest::Transport::Process(p) => TransportConfig::Process(ProcessConfig {
                command: p.command.clone(),
                cwd: capsule_root.to_path_buf(),
                env,
                stderr,
                confine,
            }),
        }
    }

    /// Refuses, at session start, what would fail every task: on `transport: http`, an
    /// `api_key_env` that is unset or empty (E-AGT-001), CA certificates that do not
    /// load (E-AGT-003). (A driver file was checked when the catalog was opened.)
    pub fn check(&self) -> Result<(), Diagnostic> {
        match self {
            TransportConfig::Http(h) => HttpTransport::new(h).map(drop),
            _ => Ok(()),
        }
    }

    /// The name the trace gives it.
    pub fn name(&self) -> &'static str {
        match self {
            TransportConfig::Builtin => "builtin",
            TransportConfig::Http(_) => "http",
            TransportConfig::Process(_) => "process",
        }
    }
}

/// `transport: http`'s settings (docs/agent.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// Such as `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key_env: Option<String>,
    /// A WASM component in the capsule that adapts another provider's API.
    pub driver: Option<String>,
    /// A PEM file of CA certificates trusted beside the public roots.
    pub ca_file: Option<PathBuf>,
    /// Bounds each request.
    pub timeout: Duration,
    /// Tries after the first one.
    pub max_retries: u32,
    /// Ask for server-sent events.
    pub stream: bool,
    pub sampling: manifest::Sampling,
}

impl HttpConfig {
    /// Plain settings for `base_url` and `model`: the manifest's defaults.
    pub fn new(base_url: &str, model: &str) -> Self {
        HttpConfig {
            base_url: base_url.to_string(),
            model: model.to_string(),
            api_key_env: None,
            driver: None,
            ca_file: None,
            timeout: manifest::DEFAULT_TIMEOUT,
            max_retries: manifest::DEFAULT_MAX_RETRIES,
            stream: false,
            sampling: manifest::Sampling::default(),
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
    /// The harness's whole environment, as `grant::env` decides it for a harness.
    /// Nothing else of mur's environment reaches it.
    pub env: Vec<(String, String)>,
    /// Where the harness's stderr goes (the session's logs/); `None` inherits mur's.
    pub stderr: Option<PathBuf>,
    /// The session's confinement, applied to the harness and all it starts; `None`
    /// under the opt-out (docs/confinement.md).
    pub confine: Option<crate::confine::Confined>,
}

/// Builds the transport for one task; `driver` is the loaded `agent.driver` of
/// `transport: http`, when it names one. `Err` names what is missing.
pub fn transport(
    config: &TransportConfig,
    driver: Option<std::sync::Arc<dyn super::http::Driver>>,
) -> Result<Box<dyn Transport>, String> {
    match config {
        TransportConfig::Builtin => Ok(Box::new(Builtin)),
        TransportConfig::Process(p) => Ok(Box::new(ProcessTransport::new(p.clone())?)),
        TransportConfig::Http(h) => {
            let t = HttpTransport::new(h).map_err(|d| format!("{}: {}", d.code, d.message))?;
            match (&h.driver, driver) {
                (None, _) => Ok(Box::new(t)),
                (Some(_), Some(d)) => Ok(Box::new(t.with_driver(d))),
                (Some(rel), None) => Err(format!(
                    "agent.driver names {rel}, but no component host loaded it"
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_transports_convert() {
        let root = Path::new("/capsule");
        assert_eq!(
            TransportConfig::from_manifest(&manifest::Transport::Builtin, root, vec![], None, None),
            TransportConfig::Builtin
        );
        let p = manifest::Transport::Process(manifest::ProcessTransport {
            command: vec!["sh".into(), "harness.sh".into()],
        });
        let env = vec![("A".to_string(), "1".to_string())];
        assert_eq!(
            TransportConfig::from_manifest(&p, root, env.clone(), None, None),
            TransportConfig::Process(ProcessConfig {
                command: vec!["sh".into(), "harness.sh".into()],
                cwd: root.into(),
                env,
                stderr: None,
                confine: None,
            })
        );
        let h = manifest::Transport::Http(manifest::HttpTransport {
            base_url: "http://127.0.0.1:11434/v1".into(),
            model: "llama3".into(),
            api_key_env: None,
            driver: None,
            ca_file: Some("certs/ca.pem".into()),
            timeout: Duration::from_secs(7),
            max_retries: 1,
            stream: true,
            sampling: manifest::Sampling::default(),
        });
        let c = TransportConfig::from_manifest(&h, root, vec![], None, None);
        assert_eq!(c.name(), h.kind());
        let TransportConfig::Http(c) = c else {
            panic!("{c:?}")
        };
        assert_eq!(
            c.ca_file.as_deref(),
            Some(Path::new("/capsule/certs/ca.pem"))
        );
        assert_eq!(
            (c.timeout, c.max_retries, c.stream),
            (Duration::from_secs(7), 1, true)
        );
    }
}
