//! `murmur.yaml`, the capsule manifest: its typed form and a strict reader.
//!
//! Every key is known; any other key, a wrong type, a missing required field or a
//! value its rule refuses is an `E-MAN-*` diagnostic naming the file, line and column
//! (see docs/manifest.md for every field). Versions keep their text as written.

mod read;
pub mod rules;

use std::path::Path;
use std::time::Duration;

use crate::catalogue::E_MAN_001;
use crate::diag::{Diagnostic, Location, Result};
use crate::yaml;

/// The manifest's file name in a capsule's source folder and in a packed artifact.
pub const FILE_NAME: &str = "murmur.yaml";

/// A capsule's manifest, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The capsule name without scope, `^[a-z][a-z0-9-]{0,63}$`.
    pub name: String,
    /// Exactly as written: an unquoted `1.10` is "1.10".
    pub version: String,
    pub description: String,
    /// Relative path of a Markdown file in the capsule.
    pub instructions: Option<String>,
    pub agent: Agent,
    pub inference: Inference,
    pub lifecycle: Lifecycle,
    pub exports: Exports,
    pub network: Network,
    pub capabilities: Capabilities,
    pub tools: Vec<Tool>,
    pub hooks: Vec<Hook>,
    pub trace: Trace,
    pub artifacts: Vec<ArtifactRef>,
    /// What the Agent Card offers callers; empty: one default skill (`card_skills`).
    pub skills: Vec<Skill>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    pub transport: Transport,
}

/// How the agent reaches its model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// The deterministic offline model shipped in the binary.
    Builtin,
    /// An OpenAI-compatible chat-completions endpoint.
    Http(HttpTransport),
    /// A native harness speaking JSON lines over stdin/stdout.
    Process(ProcessTransport),
}

impl Transport {
    /// The name written in `agent.transport`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Builtin => "builtin",
            Transport::Http(_) => "http",
            Transport::Process(_) => "process",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTransport {
    /// Such as `http://127.0.0.1:11434/v1`; http or https, with a host.
    pub base_url: String,
    pub model: String,
    /// The environment variable the API key is read from; None sends no key.
    pub api_key_env: Option<String>,
    /// A WASM component in the capsule that adapts another provider's API.
    pub driver: Option<String>,
    /// A PEM file in the capsule with a private CA's certificates, trusted beside the
    /// public roots.
    pub ca_file: Option<String>,
    /// Bounds each request, from connecting to the last byte of the answer.
    pub timeout: Duration,
    /// Tries after the first, on 429, 500, 502, 503, 504 and a dropped connection.
    pub max_retries: u32,
    /// Ask for the answer as server-sent events (`stream: true`).
    pub stream: bool,
    pub sampling: Sampling,
}

/// `agent.timeout` when the manifest leaves it out.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// `agent.max_retries` when the manifest leaves it out.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// The sampling settings of `transport: http`, sent in the request body as written;
/// a setting left out is not sent (the server's default holds).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sampling {
    /// 0 to 2, as written (`0.2` stays `0.2`).
    pub temperature: Option<serde_json::Number>,
    /// 0 to 1, as written.
    pub top_p: Option<serde_json::Number>,
    pub max_tokens: Option<u32>,
    pub seed: Option<i64>,
    /// Up to 4 strings; empty: not sent.
    pub stop: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessTransport {
    /// Program and arguments, run with the capsule root as working directory.
    pub command: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inference {
    /// Model turns a task may take. Default 8.
    pub max_turns: u32,
    /// Tool calls of one turn that run at once; the rest wait their turn. Default
    /// [`PARALLEL_TOOLS`].
    pub parallel_tools: u32,
}

/// `inference.parallel_tools`' default: a few call-member calls at once, while a turn
/// of many memory-hungry calls holds at most this many instances (64 MiB each).
pub const PARALLEL_TOOLS: u32 = 4;

impl Default for Inference {
    fn default() -> Self {
        Inference {
            max_turns: 8,
            parallel_tools: PARALLEL_TOOLS,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskAcceptance {
    /// One task at a time; a task arriving meanwhile is refused as busy.
    #[default]
    Single,
    /// One task running and up to `queue_depth` waiting.
    Queue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AfterTask {
    /// The session ends when its task ends.
    Exit,
    /// The session waits for the next task.
    #[default]
    Sleep,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lifecycle {
    pub task_acceptance: TaskAcceptance,
    pub after_task: AfterTask,
    /// Queued tasks held beside the running one (default 0).
    pub queue_depth: u32,
    /// Seconds; None = no idle timeout.
    pub idle_timeout: Option<u64>,
}

impl Lifecycle {
    /// How many tasks the member holds at once: 1 with Single; 1 + queue_depth with Queue.
    pub fn holds(&self) -> u32 {
        match self.task_acceptance {
            TaskAcceptance::Single => 1,
            TaskAcceptance::Queue => self.queue_depth.saturating_add(1),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Exports {
    pub peer_tasks: PeerTasks,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeerTasks {
    /// Whether the door takes tasks from formation peers (default false).
    pub accept: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Network {
    /// None: the door is public.
    pub authentication: Option<Authentication>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Authentication {
    /// Names of environment variables whose values, read at start, are accepted as
    /// bearer tokens; each is the credential `env:<NAME>`. May be empty: then the door
    /// accepts only the session's operator token and formation tokens.
    pub bearer_env: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Hosts the capsule's components may reach.
    pub network: AllowList,
    /// Environment variables handed to the capsule's components.
    pub env: AllowList,
    /// None: no shell tool.
    pub shell: Option<Shell>,
    /// Capsules (`<scope>/<name>` or `<scope>/*`) this capsule may delegate to, and
    /// how far its session tree may delegate.
    pub spawn: Spawn,
    /// Paths beyond its own folders that the capsule's native processes may use
    /// (docs/confinement.md).
    pub files: Files,
}

/// `capabilities.files`: paths as written (absolute, `~/…`, or relative to the work
/// folder), each granting its whole tree.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Files {
    pub read: Vec<String>,
    pub write: Vec<String>,
}

/// The largest `capabilities.spawn.max_depth` and `max_live` (and their `mur run`
/// flags): a tree's tokens must fit in one pipe's buffer.
pub const SPAWN_LIMIT_MAX: u32 = 1024;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Spawn {
    pub allow: Vec<String>,
    /// `max_depth`: how deep a session tree this capsule roots may nest (a child's own
    /// can only lower it). None: the default (docs/delegation.md).
    pub max_depth: Option<u32>,
    /// `max_live`: how many delegated sessions its tree may run at once.
    pub max_live: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllowList {
    pub allow: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shell {
    /// Environment variables passed from mur's environment to shell commands.
    pub baseline_env: Vec<String>,
}

/// A WASM component the model may call as a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// `^[a-z][a-z0-9_-]{0,63}$`, unique within the manifest.
    pub name: String,
    /// Relative path of a `.wasm` component in the capsule.
    pub path: String,
    pub description: String,
}

/// A WASM component run when an event happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    pub event: HookEvent,
    /// Relative path of a `.wasm` component in the capsule.
    pub path: String,
    /// `async: true`: the session does not wait for the hook (drained at the end).
    pub is_async: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    SessionStart,
    TaskReceived,
    BeforeTool,
    AfterTool,
    TaskEnd,
    SessionEnd,
}

impl HookEvent {
    pub const ALL: [HookEvent; 6] = [
        HookEvent::SessionStart,
        HookEvent::TaskReceived,
        HookEvent::BeforeTool,
        HookEvent::AfterTool,
        HookEvent::TaskEnd,
        HookEvent::SessionEnd,
    ];

    /// The name written in `hooks[].event`.
    pub fn as_str(&self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session_start",
            HookEvent::TaskReceived => "task_received",
            HookEvent::BeforeTool => "before_tool",
            HookEvent::AfterTool => "after_tool",
            HookEvent::TaskEnd => "task_end",
            HookEvent::SessionEnd => "session_end",
        }
    }

    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Trace {
    /// Bounds on kept sessions (and, for an entry member, formation directories).
    pub retain: Retain,
}

/// The two keys of `trace.retain`. None on both: nothing is ever removed. The
/// retention passes (src/retention/) apply it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retain {
    pub max_sessions: Option<u32>,
    pub max_age: Option<std::time::Duration>,
}

impl Retain {
    pub fn is_unbounded(&self) -> bool {
        self.max_sessions.is_none() && self.max_age.is_none()
    }
}

/// An artifact the capsule needs, resolved through the stores and the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRef {
    /// `<scope>/<name>`.
    pub name: String,
    pub version: String,
}

/// A skill the capsule declares, shown on its Agent Card as an A2A AgentSkill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// `^[a-z][a-z0-9_-]{0,63}$`, unique within the manifest.
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    pub examples: Vec<String>,
}

impl Manifest {
    /// The skills the Agent Card shows, as A2A AgentSkills: those declared, else one
    /// made from the capsule's name and description, so a card never offers nothing.
    pub fn card_skills(&self) -> Vec<crate::a2a::AgentSkill> {
        let skills = if self.skills.is_empty() {
            vec![self.default_skill()]
        } else {
            self.skills.clone()
        };
        skills
            .into_iter()
            .map(|s| crate::a2a::AgentSkill {
                id: s.id,
                name: s.name,
                description: s.description,
                tags: s.tags,
                examples: s.examples,
            })
            .collect()
    }

    fn default_skill(&self) -> Skill {
        Skill {
            id: self.name.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            tags: vec![self.name.clone()],
            examples: Vec::new(),
        }
    }
}

impl Manifest {
    /// The capsule's credentials: the variables its model key and its door's bearer
    /// tokens are read from, which no executor of it gets (docs/grants.md).
    pub fn credentials(&self) -> crate::grant::Credentials {
        let api_key = match &self.agent.transport {
            Transport::Http(h) => h.api_key_env.clone(),
            _ => None,
        };
        let door = self
            .network
            .authentication
            .as_ref()
            .map(|a| a.bearer_env.clone())
            .unwrap_or_default();
        crate::grant::Credentials { api_key, door }
    }

    /// W-MAN-001 for each of its credentials that `capabilities.env.allow` or
    /// `capabilities.shell.baseline_env` names (`file`: where the manifest was read).
    pub fn credential_warnings(&self, file: &Path) -> Vec<crate::Diagnostic> {
        let shell = self.capabilities.shell.as_ref();
        let lists = [
            (
                "capabilities.env.allow",
                self.capabilities.env.allow.as_slice(),
            ),
            (
                "capabilities.shell.baseline_env",
                shell.map_or(&[][..], |s| s.baseline_env.as_slice()),
            ),
        ];
        crate::grant::credential_warnings(&self.name, &self.credentials(), &lists, file)
    }
}

/// Reads a manifest's text; `file` names it in diagnostics (for a packed one,
/// `<zip>!murmur.yaml`).
pub fn parse(text: &str, file: &Path) -> Result<Manifest> {
    let root = yaml::parse(text, file, E_MAN_001)?;
    read::manifest(&yaml::Reader::new(file, E_MAN_001), &root)
}

/// Reads the murmur.yaml at `path`. A folder is taken to mean its murmur.yaml.
pub fn load(path: &Path) -> Result<Manifest> {
    let owned;
    let path = if path.is_dir() {
        owned = path.join(FILE_NAME);
        owned.as_path()
    } else {
        path
    };
    let bytes = std::fs::read(path).map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::NotFound {
            "Run mur in the capsule's folder, or create one with `mur new <NAME>`."
        } else {
            "Check the file's permissions."
        };
        Diagnostic::new(E_MAN_001, format!("cannot read {}: {e}", path.display()))
            .in_file(path)
            .hint(hint)
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
        let column = 1 + good.iter().rev().take_while(|&&b| b != b'\n').count();
        Diagnostic::new(E_MAN_001, "the manifest is not UTF-8 text")
            .at(Location::new(path, line, column))
            .hint("Save murmur.yaml as UTF-8.")
    })?;
    parse(&text, path)
}

#[cfg(test)]
mod tests;
