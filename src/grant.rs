//! The one rule for what environment a child of mur gets, per executor: a capsule's
//! WASM components, its process harness, its shell commands, and delegated children
//! (`mur run` itself). docs/grants.md states the rule; every place that starts a child
//! or instantiates a component takes its environment from here.
//!
//! - `MURMUR_*` is the runtime's: a child gets only the ones mur sets for it, never
//!   one from mur's own environment.
//! - HOME and TMPDIR of a capsule's native executors are the session's home/ and tmp/.
//! - `capabilities.env.allow` (components, the harness) and
//!   `capabilities.shell.baseline_env` (shell commands) pass names from mur's
//!   environment, with their values.
//! - The capsule's credentials, the model's `agent.api_key_env` and the door's
//!   `network.authentication.bearer_env`, reach no capsule executor whatever those
//!   lists say; the door's reach no delegated child either.
//! - Proxy variables are not passed from mur's environment to a capsule executor; a
//!   confined harness and shell command get the session's egress proxy in all six
//!   (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, and lower case), docs/confinement.md.

use std::path::{Path, PathBuf};

use crate::catalogue::W_MAN_001;
use crate::diag::Diagnostic;
use crate::env;

/// What runs with the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Executor {
    /// A WASM tool, hook or driver of the capsule.
    Component,
    /// The capsule's `transport: process` harness.
    Harness,
    /// A command of the capsule's shell tool.
    Shell,
    /// A delegated child: `mur run` of another capsule, which applies this rule to its
    /// own capsule's executors.
    Delegate,
}

/// The proxy variables, both spellings: a capsule executor never gets mur's.
pub const PROXY: [&str; 8] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
];

/// The capsule's credentials: the variables its model key and its door's bearer
/// tokens are read from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// `agent.api_key_env` (`transport: http`).
    pub api_key: Option<String>,
    /// `network.authentication.bearer_env`.
    pub door: Vec<String>,
}

impl Credentials {
    fn names(&self) -> impl Iterator<Item = &str> {
        self.api_key.iter().chain(&self.door).map(String::as_str)
    }
}

/// Where a capsule's native executors live: the session's folders and id.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    /// The work folder, where the agent works.
    pub workdir: PathBuf,
    /// The records' home/, out/ and tmp/.
    pub home: PathBuf,
    pub out: PathBuf,
    pub tmp: PathBuf,
    /// The egress proxy's URL when the session confines its native executors.
    pub proxy: Option<String>,
}

/// The proxy variables a confined native executor gets, set to the session's proxy.
pub const PROXY_SET: [&str; 6] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// Why a name of mur's environment does not pass to `executor`; `None`: it passes
/// when the executor's list names it (for a delegate: always).
pub fn withheld(executor: Executor, name: &str, credentials: &Credentials) -> Option<&'static str> {
    // The user's own setting of mur, which a delegated child is too.
    if executor == Executor::Delegate && name == env::MURMUR_ALLOW_ROOT {
        return None;
    }
    if name.starts_with(env::RESERVED_PREFIX) {
        return Some("MURMUR_* variables are the runtime's");
    }
    if credentials.door.iter().any(|n| n == name) {
        return Some("the door's credentials (network.authentication.bearer_env) reach no child");
    }
    if executor == Executor::Delegate {
        // mur itself: it needs the user's HOME, its own model's key and proxies.
        return None;
    }
    if credentials.names().any(|n| n == name) {
        return Some("the model's key (agent.api_key_env) reaches no capsule executor");
    }
    if name == env::HOME || name == env::TMPDIR {
        return Some("HOME and TMPDIR are the session's home/ and tmp/");
    }
    if PROXY.contains(&name) {
        return Some("proxy variables are not passed from mur's environment");
    }
    None
}

/// The environment `executor` gets: `listed` is `capabilities.env.allow` (component,
/// harness) or `capabilities.shell.baseline_env` (shell), ignored for a delegate;
/// `session` the folders of a native executor; `lookup` reads mur's environment
/// (`std::env::var`, in tests a table). A delegate's is mur's whole environment
/// (`vars`) less what [`withheld`] keeps back; mur then sets its `MURMUR_*` variables.
pub fn env(
    executor: Executor,
    listed: &[String],
    credentials: &Credentials,
    session: Option<&Session>,
    vars: &[(String, String)],
) -> Vec<(String, String)> {
    let from_mur = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let mut out: Vec<(String, String)> = Vec::new();
    let path = |p: &Path| p.to_string_lossy().into_owned();
    match (executor, session) {
        (Executor::Delegate, _) => {
            return vars
                .iter()
                .filter(|(k, _)| withheld(executor, k, credentials).is_none())
                .cloned()
                .collect();
        }
        (Executor::Harness, Some(s)) => {
            let search = from_mur(env::PATH).unwrap_or_else(|| DEFAULT_PATH.to_string());
            out.extend([
                (env::PATH.to_string(), search),
                (env::HOME.to_string(), path(&s.home)),
                (env::TMPDIR.to_string(), path(&s.tmp)),
                (env::MURMUR_SESSION_ID.to_string(), s.id.clone()),
                (env::MURMUR_WORKDIR.to_string(), path(&s.workdir)),
                (env::MURMUR_OUT.to_string(), path(&s.out)),
            ]);
        }
        (Executor::Shell, Some(s)) => out.extend([
            (env::HOME.to_string(), path(&s.home)),
            (env::TMPDIR.to_string(), path(&s.tmp)),
        ]),
        _ => {}
    }
    if let (Executor::Harness | Executor::Shell, Some(url)) =
        (executor, session.and_then(|s| s.proxy.as_ref()))
    {
        out.extend(PROXY_SET.iter().map(|k| (k.to_string(), url.clone())));
    }
    for name in listed {
        if out.iter().any(|(k, _)| k == name) || withheld(executor, name, credentials).is_some() {
            continue;
        }
        if let Some(value) = from_mur(name) {
            out.push((name.clone(), value));
        }
    }
    out
}

/// The harness's `PATH` when mur's environment has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// mur's environment, the names and values that are UTF-8 (a component's and the
/// harness's variables are strings).
pub fn mur_vars() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// W-MAN-001 for each of `credentials` that one of `lists` (`capabilities.env.allow`,
/// `capabilities.shell.baseline_env`: its key and names) names: it is never passed,
/// which capsule `capsule`'s author should know (at `mur pack` and at admission).
pub fn credential_warnings(
    capsule: &str,
    credentials: &Credentials,
    lists: &[(&str, &[String])],
    file: &Path,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (list, names) in lists {
        for name in names.iter() {
            let (what, reaches) = if credentials.door.contains(name) {
                ("network.authentication.bearer_env", "no child")
            } else if credentials.api_key.as_ref() == Some(name) {
                (
                    "agent.api_key_env",
                    "no component, harness or shell command",
                )
            } else {
                continue;
            };
            out.push(
                Diagnostic::new(
                    W_MAN_001,
                    format!(
                        "{capsule}: {list} names {name}, which {what} also names: a credential reaches {reaches}, so {name} is not passed"
                    ),
                )
                .in_file(file),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
