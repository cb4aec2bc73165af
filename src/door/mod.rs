//! The member's door: an A2A 1.0 server (JSON-RPC binding) on 127.0.0.1.
//!
//! The session builds a [`DoorConfig`], calls [`Door::start`], and gets back the
//! running [`Door`] and a [`WorkReceiver`]. Each task the door accepts arrives on the
//! receiver as a [`Work`]: the task id, the caller's message, the calling
//! [`Credential`] and a [`TaskHandle`] through which the session reports progress
//! (status, messages, artifacts, input-required and the caller's reply) and learns
//! of cancellation. The door answers GetTask, ListTasks, CancelTask and the streams
//! from its [`TaskStore`] by itself.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use mur::door::{Door, DoorConfig};
//! let config = DoorConfig::new("ses_0123", "operator-secret");
//! let (door, mut work) = Door::start(config).await?;
//! println!("door at {}", door.url());
//! while let Some(w) = work.next().await {
//!     let text = w.message.text_content();
//!     let _ = w.handle.working();
//!     let _ = w.handle.complete(format!("echo: {text}"));
//! }
//! # Ok(()) }
//! ```
//!
//! What each request gets, and why, is in `docs/design/door.md`.

mod auth;
pub mod chain;
mod connections;
mod methods;
mod operator;
mod rpc;
mod server;
mod tasks;
pub mod trust;

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::a2a::{AgentSkill, Message};
use crate::credential::VerifyKey;

pub use connections::Refusals;
/// The JSON-RPC envelope reader, public for fuzz/ (fuzz_targets/rpc_request.rs).
pub use rpc::Call;
pub use server::SESSION_EXTENSION_URI;
pub use server::parse_envelope;
pub use tasks::{TaskEnded, TaskHandle, TaskStore};

/// How every part of mur that talks to a door builds its HTTP client: plain HTTP on
/// 127.0.0.1, no proxy, and no certificate store. Doors never speak TLS, and a
/// `FROM scratch` image has no system CA certificates: reqwest's default verifier
/// would refuse to build there.
pub fn client() -> reqwest::ClientBuilder {
    crate::tls::provider();
    reqwest::Client::builder()
        .no_proxy()
        .tls_certs_only(std::iter::empty())
}

/// Why a task was canceled, as its `canceled:` line says it.
pub(crate) mod cancel_reason {
    /// The member's lifeline closed.
    pub(crate) const FORMATION_ENDED: &str = "formation ended";
    /// The session's first SIGTERM.
    pub(crate) const SIGTERM: &str = "SIGTERM (E-RUN-040)";
    /// The session's first SIGINT (Ctrl-C of a session in a terminal).
    pub(crate) const SIGINT: &str = "SIGINT (E-RUN-040)";
    /// The session's `--deadline`.
    pub(crate) const DEADLINE: &str = "deadline reached (E-RUN-053)";
    /// A CancelTask from `credential` (`operator`, `member:<name>`, ...).
    pub(crate) fn by(credential: &str) -> String {
        format!("canceled by {credential}")
    }
}

/// Who is calling: the credential a request was let in with. Its text form is the
/// one the spec and the trace use.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Credential {
    /// The session's operator token: reaches every method and sees every task.
    Operator,
    /// A declared bearer token, `env:<NAME>` (network.authentication.bearer_env).
    Declared(String),
    /// A formation token issued for this door, `member:<caller>`.
    Member(String),
    /// No credential, at a public door (no network.authentication).
    Public,
}

impl Credential {
    /// The operator sees every task; any other credential only the tasks it started.
    pub fn sees(&self, owner: &Credential) -> bool {
        matches!(self, Credential::Operator) || self == owner
    }
}

impl fmt::Display for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::Operator => f.write_str("operator"),
            Credential::Declared(name) => write!(f, "env:{name}"),
            Credential::Member(name) => write!(f, "member:{name}"),
            Credential::Public => f.write_str("public"),
        }
    }
}

/// How many tasks the member holds at once (lifecycle.task_acceptance).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acceptance {
    /// One task at a time; another SendMessage while it is live is refused with
    /// `-32050` (member busy).
    Single,
    /// The running task plus up to `depth` queued ones; beyond that, `-32050`.
    Queue { depth: u32 },
}

impl Acceptance {
    pub fn holds(self) -> u32 {
        match self {
            Acceptance::Single => 1,
            Acceptance::Queue { depth } => depth.saturating_add(1),
        }
    }
}

/// A declared bearer credential: the env var's name and the value read at start.
#[derive(Clone)]
pub struct DeclaredToken {
    pub env_name: String,
    pub token: String,
}

/// This member's place in a formation: the verification key and its roster name.
#[derive(Debug, Clone)]
pub struct FormationMember {
    pub verify_key: VerifyKey,
    pub member: crate::ids::MemberName,
}

/// What the Agent Card says about the capsule.
#[derive(Debug, Clone)]
pub struct CardInfo {
    pub name: String,
    pub description: String,
    pub version: String,
    pub skills: Vec<AgentSkill>,
}

/// Called when the operator sends murmur.StopSession.
pub type StopCallback = Arc<dyn Fn() + Send + Sync>;

/// A SendMessage the door refused because the member was busy (`-32050`).
#[derive(Debug, Clone)]
pub struct BusyRefusal {
    /// Who was refused (never `Public`: those are not reported).
    pub caller: Credential,
    /// How many tasks the member held (its running one and its queue).
    pub holds: u32,
}

/// Told of each busy refusal, for the member's trace.
pub type BusyCallback = Arc<dyn Fn(&BusyRefusal) + Send + Sync>;

/// Resource limits of the door.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body; larger ones get `413 payload_too_large`.
    pub max_body_bytes: usize,
    /// A client must send a request's headers within this time, or the connection is
    /// closed (slowloris). Also bounds how long an idle keep-alive connection stays.
    pub header_read_timeout: Duration,
    /// A client must send a request's body within this time, or gets `408`.
    pub body_read_timeout: Duration,
    /// Connections served at once; at the cap a new one makes another close, those
    /// that proved a credential last (`connections`).
    pub max_connections: usize,
    /// Refusals of credentials (401/403) answered at once, then per second: past the
    /// burst a refusal waits its turn, so a flood of bad tokens waits, not the cores.
    pub refusals: Refusals,
    /// Remember verified formation tokens (off only to measure what it saves).
    pub cache_verified_tokens: bool,
    /// Tasks remembered for GetTask/ListTasks; past it the oldest ended ones go.
    pub max_tasks: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 1024 * 1024,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_connections: 1024,
            refusals: Refusals {
                burst: 64,
                per_second: 256,
            },
            cache_verified_tokens: true,
            max_tasks: 1_000,
        }
    }
}

/// Everything the session tells the door. Holds secrets, so it has no `Debug`.
pub struct DoorConfig {
    /// The session id (`ses_…`), named on the Agent Card.
    pub session_id: String,
    pub card: CardInfo,
    /// The session's operator token: reaches every method, sees every task.
    pub operator_token: String,
    /// Declared bearer tokens from network.authentication.bearer_env.
    pub bearer_tokens: Vec<DeclaredToken>,
    /// No network.authentication: A2A methods need no credential.
    pub public: bool,
    /// exports.peer_tasks.accept.
    pub accept_peer_tasks: bool,
    /// Set when the member is in a formation.
    pub formation: Option<FormationMember>,
    pub acceptance: Acceptance,
    /// The folder resources/files lists (read-only); None = the method is unsupported.
    pub files_root: Option<PathBuf>,
    /// What murmur.StopSession calls; None = the method is unsupported.
    pub on_stop: Option<StopCallback>,
    /// Told of each SendMessage refused as busy, except a public caller's (an
    /// anonymous caller could otherwise grow the trace without bound).
    pub on_busy: Option<BusyCallback>,
    /// 0 = any free port.
    pub port: u16,
    pub limits: Limits,
}

impl DoorConfig {
    /// A public, single-task door in no formation with a default card; set the other
    /// fields directly.
    pub fn new(session_id: impl Into<String>, operator_token: impl Into<String>) -> Self {
        let session_id = session_id.into();
        DoorConfig {
            card: CardInfo {
                name: "mur member".into(),
                description: "A capsule run by mur".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                skills: Vec::new(),
            },
            session_id,
            operator_token: operator_token.into(),
            bearer_tokens: Vec::new(),
            public: true,
            accept_peer_tasks: false,
            formation: None,
            acceptance: Acceptance::Single,
            files_root: None,
            on_stop: None,
            on_busy: None,
            port: 0,
            limits: Limits::default(),
        }
    }
}

/// A task the door accepted, for the session to run.
pub struct Work {
    pub task_id: crate::a2a::TaskId,
    pub context_id: String,
    /// The caller's message (with `taskId` and `contextId` filled in).
    pub message: Message,
    /// Who started the task.
    pub caller: Credential,
    /// The task's trust class: from its caller, and for a peer task the class its
    /// caller stamped (`trust::Trust::of`).
    pub trust: trust::Trust,
    /// The task's span: in its caller's trace when the caller holds the operator or a
    /// formation token (`trust::task_span`).
    pub span: crate::trace::context::TaskSpan,
    /// The tasks waiting on this one (`chain::CallChain::of`): its own calls carry it on.
    pub chain: chain::CallChain,
    /// Fires when the task is cancelled; also `handle.cancellation()`.
    pub cancel: CancellationToken,
    pub handle: TaskHandle,
}

/// Where accepted tasks arrive, in the order they were accepted.
pub struct WorkReceiver {
    rx: mpsc::UnboundedReceiver<Work>,
}

impl WorkReceiver {
    /// The next task to run; tasks cancelled while queued are skipped. `None` once
    /// the door has shut down.
    pub async fn next(&mut self) -> Option<Work> {
        while let Some(work) = self.rx.recv().await {
            if !work.cancel.is_cancelled() {
                return Some(work);
            }
        }
        None
    }

    /// A queued task without waiting, if one is there.
    pub fn try_next(&mut self) -> Option<Work> {
        while let Ok(work) = self.rx.try_recv() {
            if !work.cancel.is_cancelled() {
                return Some(work);
            }
        }
        None
    }
}

/// The session's events, streamed to the operator by murmur.WatchSession. Each
/// event is any JSON value (the session sends its trace records). The channel is made
/// by the first watcher: its 1024 slots are 56 KiB a session that nobody watches would
/// keep resident, and an event with no watcher goes nowhere either way.
#[derive(Clone, Default)]
pub struct SessionEvents {
    tx: Arc<OnceLock<broadcast::Sender<serde_json::Value>>>,
}

impl SessionEvents {
    /// How far a watcher may fall behind before it is told so and skips ahead.
    const BUFFER: usize = 1024;

    /// Sends `event` to every current watcher; a watcher that falls more than
    /// `Self::BUFFER` events behind is told so and skips ahead.
    pub fn publish(&self, event: serde_json::Value) {
        if let Some(tx) = self.tx.get() {
            let _ = tx.send(event);
        }
    }

    /// Publishes one JSON text (a trace line); parsed only when someone watches.
    pub fn publish_json(&self, json: &[u8]) {
        if self.tx.get().is_some_and(|tx| tx.receiver_count() > 0)
            && let Ok(event) = serde_json::from_slice(json)
        {
            self.publish(event);
        }
    }

    /// A new watcher: it receives every event published from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<serde_json::Value> {
        self.tx
            .get_or_init(|| broadcast::channel(Self::BUFFER).0)
            .subscribe()
    }
}

/// A running door. Dropping it (or [`Door::shutdown`]) stops it.
pub struct Door {
    addr: SocketAddr,
    store: TaskStore,
    events: SessionEvents,
    shutdown: CancellationToken,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl Door {
    /// Binds 127.0.0.1 (at `config.port`, 0 = any free port) and starts serving.
    pub async fn start(config: DoorConfig) -> std::io::Result<(Door, WorkReceiver)> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port)).await?;
        let addr = listener.local_addr()?;
        let store = TaskStore::new(config.acceptance.holds(), config.limits.max_tasks);
        if let Some(on_busy) = config.on_busy.clone() {
            store.set_on_busy(on_busy);
        }
        let events = SessionEvents::default();
        let (work_tx, work_rx) = mpsc::unbounded_channel();
        let shutdown = CancellationToken::new();
        let shared = rpc::Shared::new(
            config,
            addr,
            store.clone(),
            events.clone(),
            work_tx,
            shutdown.clone(),
        );
        let server = tokio::spawn(server::serve(listener, shared, shutdown.clone()));
        Ok((
            Door {
                addr,
                store,
                events,
                shutdown,
                server: Some(server),
            },
            WorkReceiver { rx: work_rx },
        ))
    }

    /// The JSON-RPC endpoint, `http://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn store(&self) -> &TaskStore {
        &self.store
    }

    pub fn events(&self) -> &SessionEvents {
        &self.events
    }

    /// Stops accepting connections, ends every stream and closes every connection.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

impl Drop for Door {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::SessionEvents;

    /// No watcher, no channel: the 1024 slots are made by the first subscriber, and a
    /// watcher gets what is published after it subscribed.
    #[test]
    fn the_event_channel_is_made_by_the_first_watcher() {
        let events = SessionEvents::default();
        events.publish(serde_json::json!({"n": 0}));
        events.publish_json(br#"{"n": 1}"#);
        assert!(events.tx.get().is_none(), "no channel before a watcher");
        let mut watcher = events.clone().subscribe();
        events.publish_json(br#"{"n": 2}"#);
        assert_eq!(watcher.try_recv().unwrap(), serde_json::json!({"n": 2}));
        assert!(
            watcher.try_recv().is_err(),
            "nothing from before it subscribed"
        );
    }
}
