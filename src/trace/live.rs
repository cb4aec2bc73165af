//! Live export (docs/trace.md, Live export): a session's spans over OTLP/HTTP JSON to
//! a collector, each span once, when the record that ends it is written. The spans
//! are [`export::Incremental`]'s, so they carry the ids `mur trace export` gives.
//!
//! A bounded queue and one sender thread: the writer only queues, so a collector that
//! is down or slow never blocks or fails a task. What is not delivered is dropped,
//! counted in `session_end` (`otlp_dropped_spans`) and reported once (W-TRC-001).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::Record;
use super::export::{self, Incremental};
use super::otlp::{Resource, Span};
use crate::catalogue::{E_TRC_001, W_TRC_001};
use crate::diag::{Diagnostic, Result};

/// Spans the queue holds; more are dropped (the OpenTelemetry SDK's
/// BatchSpanProcessor holds 2048 too).
pub const QUEUE_SPANS: usize = 2048;
/// Spans in one request at most.
pub const BATCH_SPANS: usize = 512;
/// One request's bound, connecting included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `session_end` waits for the queue to drain before it counts the rest;
/// never more than half the wind-down (a member's end is inside it).
pub const FINAL_FLUSH: Duration = Duration::from_secs(2);

fn final_flush() -> Duration {
    FINAL_FLUSH.min(crate::timing::scaled(crate::timing::WIND_DOWN_EXIT) / 2)
}

/// Where spans go: the traces URL and the headers of every request. Resolved once,
/// by the launcher for its members (it reaches them on the formation channel).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub url: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
}

/// Never the headers' values: they may hold an API key.
impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|h| h.0.as_str()).collect();
        write!(f, "Target({}, headers {names:?})", self.shown())
    }
}

impl Target {
    /// `--otlp-endpoint` (a base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`), else
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is), else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `v1/traces`); `None` when none is set.
    pub fn resolve(flag: Option<&str>) -> Result<Option<Target>> {
        Target::resolve_from(flag, |name| std::env::var(name).ok())
    }

    /// [`Target::resolve`] over `var`, the environment.
    fn resolve_from(
        flag: Option<&str>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Target>> {
        use crate::env::{
            OTEL_EXPORTER_OTLP_ENDPOINT as BASE, OTEL_EXPORTER_OTLP_HEADERS as HEADERS,
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as TRACES,
            OTEL_EXPORTER_OTLP_TRACES_HEADERS as TRACES_HEADERS,
        };
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let url = match (flag, var(TRACES), var(BASE)) {
            (Some(f), _, _) => signal_url("--otlp-endpoint", f)?,
            (None, Some(t), _) => parse_url(TRACES, &t)?.to_string(),
            (None, None, Some(b)) => signal_url(BASE, &b)?,
            (None, None, None) => return Ok(None),
        };
        let headers = match (var(TRACES_HEADERS), var(HEADERS)) {
            (Some(h), _) => parse_headers(TRACES_HEADERS, &h)?,
            (None, Some(h)) => parse_headers(HEADERS, &h)?,
            (None, None) => Vec::new(),
        };
        Ok(Some(Target { url, headers }))
    }

    /// The URL without user or password, for messages.
    fn shown(&self) -> String {
        match reqwest::Url::parse(&self.url) {
            Ok(mut u) => {
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.to_string()
            }
            Err(_) => self.url.clone(),
        }
    }
}

fn bad(what: &str, why: String) -> Diagnostic {
    Diagnostic::new(E_TRC_001, format!("{what}: {why}"))
}

fn parse_url(what: &str, value: &str) -> Result<reqwest::Url> {
    let url = reqwest::Url::parse(value.trim())
        .map_err(|e| bad(what, format!("`{value}` is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(bad(
            what,
            format!("`{value}` is not an http:// or https:// URL with a host"),
        ));
    }
    Ok(url)
}

/// A base endpoint's traces URL: `v1/traces` after its path, as the OTLP exporter
/// spec builds it. A flag that already ends in `/v1/traces` is taken as it is.
fn signal_url(what: &str, value: &str) -> Result<String> {
    let url = parse_url(what, value)?;
    if what.starts_with("--") && url.path().ends_with("/v1/traces") {
        return Ok(url.to_string());
    }
    let mut url = url;
    let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
    url.set_path(&path);
    Ok(url.to_string())
}

/// `key=value,key=value`, values percent-decoded (the W3C Baggage form the spec names;
/// properties after `;` are not taken).
fn parse_headers(what: &str, value: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for item in value.split(',').filter(|i| !i.trim().is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| bad(what, "an entry without `=` (`key=value,...`)".into()))?;
        let k = k.trim();
        let v = percent_decode(v.trim()).ok_or_else(|| {
            bad(
                what,
                format!("the value of `{k}` is not percent-encoded UTF-8"),
            )
        })?;
        let valid = reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_ok()
            && reqwest::header::HeaderValue::from_str(&v).is_ok();
        if !valid {
            return Err(bad(what, format!("`{k}` is not a usable HTTP header")));
        }
        out.push((k.to_string(), v));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// One session's live export: the transform, and the queue its thread sends from.
pub struct Live {
    spans: Mutex<Incremental>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Live({:?})", self.shared.target)
    }
}

struct Shared {
    target: Target,
    /// In a formation: its id, so its members warn once between them.
    formation: Option<String>,
    queue: Mutex<Queue>,
    changed: Condvar,
}

#[derive(Default)]
struct Queue {
    spans: VecDeque<Span>,
    resource: Option<Resource>,
    /// Spans of the request under way.
    sending: usize,
    dropped: u64,
    /// Set by `session_end`: nothing more is sent or counted.
    closed: bool,
}

impl Live {
    /// Starts the sender thread. `earlier` are the records already in the trace (its
    /// `session_start`; a resumed session's whole trace): taken, not sent again.
    pub fn start(target: Target, formation: Option<String>, earlier: &[Record]) -> Result<Live> {
        let mut spans = Incremental::default();
        for r in earlier {
            spans.take(r);
        }
        let shared = Arc::new(Shared {
            target,
            formation,
            queue: Mutex::new(Queue {
                resource: Some(spans.resource()),
                ..Queue::default()
            }),
            changed: Condvar::new(),
        });
        let client = client().map_err(|e| bad("live export", e))?;
        let s = shared.clone();
        std::thread::Builder::new()
            .name("otlp".into())
            .spawn(move || send_loop(&s, &client))
            .map_err(|e| bad("live export", format!("cannot start its thread: {e}")))?;
        Ok(Live {
            spans: Mutex::new(spans),
            shared,
        })
    }

    /// Queues the spans `record` ends; never waits on the collector.
    pub fn take(&self, record: &Record) {
        let (ended, resource) = {
            let mut spans = lock(&self.spans);
            let ended = spans.take(record);
            (ended, spans.resource())
        };
        self.send(resource, ended);
    }

    /// Queues `spans` under `resource`; never waits on the collector. The records'
    /// spans come through [`Live::take`]; the launcher, which keeps no records, sends
    /// its root span (`invoke_workflow`) so.
    pub fn send(&self, resource: Resource, spans: Vec<Span>) {
        if spans.is_empty() {
            return;
        }
        let mut q = lock(&self.shared.queue);
        if q.closed {
            return;
        }
        q.resource = Some(resource);
        let room = QUEUE_SPANS.saturating_sub(q.spans.len() + q.sending);
        let over = spans.len().saturating_sub(room);
        q.spans.extend(spans.into_iter().take(room));
        if over > 0 {
            q.dropped += over as u64;
            drop(q);
            self.shared
                .warn(&format!("its queue of {QUEUE_SPANS} spans is full"));
        } else {
            drop(q);
        }
        self.shared.changed.notify_all();
    }

    /// `session_end`: queues the spans still open (closed at `record`), then
    /// [`Live::finish`].
    pub fn end(&self, record: &Record) -> u64 {
        self.take(record);
        self.finish()
    }

    /// Waits up to [`FINAL_FLUSH`] for the queue to drain, closes it, and returns the
    /// spans not delivered.
    pub fn finish(&self) -> u64 {
        let until = Instant::now() + final_flush();
        let mut q = lock(&self.shared.queue);
        while !q.closed && (q.sending > 0 || !q.spans.is_empty()) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            q = match self.shared.changed.wait_timeout(q, left) {
                Ok((q, _)) => q,
                Err(p) => p.into_inner().0,
            };
        }
        let late = q.spans.len() + q.sending;
        if !q.closed && late > 0 {
            q.dropped += late as u64;
        }
        q.closed = true;
        q.spans.clear();
        let dropped = q.dropped;
        drop(q);
        self.shared.changed.notify_all();
        if late > 0 {
            self.shared.warn(&format!(
                "{late} spans were still unsent {:?} after the end",
                final_flush()
            ));
        }
        dropped
    }
}

impl Shared {
    /// W-TRC-001, once per process; in a formation, once for all its members (the
    /// first to write `otlp-warned` in the formation's directory says it).
    fn warn(&self, why: &str) {
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            if let Some(frm) = &self.formation {
                let marker = crate::paths::formations_dir().join(frm).join("otlp-warned");
                let first = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&marker);
                if first.is_err_and(|e| e.kind() == std::io::ErrorKind::AlreadyExists) {
                    return;
                }
            }
            crate::output::stderr_line(Diagnostic::new(
                W_TRC_001,
                format!(
                    "live trace export to {} is failing ({why}): spans are dropped and counted in session_end's otlp_dropped_spans; the tasks go on",
                    self.target.shown()
                ),
            ));
        });
    }
}

fn send_loop(s: &Shared, client: &reqwest::Client) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    loop {
        let (batch, resource) = {
            let mut q = lock(&s.queue);
            while !q.closed && q.spans.is_empty() {
                q = match s.changed.wait(q) {
                    Ok(q) => q,
                    Err(p) => p.into_inner(),
                };
            }
            if q.closed {
                return;
            }
            let n = q.spans.len().min(BATCH_SPANS);
            let batch: Vec<Span> = q.spans.drain(..n).collect();
            q.sending = batch.len();
            (
                batch,
                q.resource
                    .clone()
                    .unwrap_or(Resource { attributes: vec![] }),
            )
        };
        let n = batch.len();
        let body = export::request(resource, batch);
        let result = rt.block_on(post(client, &s.target, &body));
        let mut q = lock(&s.queue);
        if q.closed {
            // session_end counted this request's spans already.
            return;
        }
        q.sending = 0;
        if let Err(why) = result {
            q.dropped += n as u64;
            drop(q);
            s.warn(&why);
        } else {
            drop(q);
        }
        s.changed.notify_all();
    }
}

async fn post(
    client: &reqwest::Client,
    target: &Target,
    body: &super::otlp::TracesData,
) -> std::result::Result<(), String> {
    let mut req = client.post(&target.url).timeout(REQUEST_TIMEOUT).json(body);
    for (k, v) in &target.headers {
        req = req.header(k, v);
    }
    let resp = req.send().await.map_err(|e| {
        if e.is_timeout() {
            format!("no answer within {:?}", REQUEST_TIMEOUT)
        } else if e.is_connect() {
            "cannot connect".to_string()
        } else {
            format!("the request failed: {e}")
        }
    })?;
    let status = resp.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("it answered HTTP {}", status.as_u16()))
    }
}

/// The collector's client: the public roots for https, the proxy variables honoured
/// (as the model's client, and OpenTelemetry's SDKs, do), HTTP/1.1.
fn client() -> std::result::Result<reqwest::Client, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let mut tls = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))
}

#[cfg(test)]
mod tests;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
