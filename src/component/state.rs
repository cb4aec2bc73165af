//! What one component instance's store holds: WASI built from the capsule's grants
//! and nothing else, wasi:http behind the network allow-list, and its limits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{
    Error as HttpError, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks,
    WasiHttpView,
};

use super::Grants;
use super::bounds::{self, Counted, Quota};
use super::message::{MessageCtx, Sender};
use crate::call_member::{Routed, Trust};

/// Each instance's memory bound: linear memories together may not grow past it.
pub const MEMORY_LIMIT: usize = 64 << 20;

pub(super) struct State {
    table: ResourceTable,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    net: Net,
    limits: Limits,
    counted: Counted,
    /// When the running call's time is up (see the epoch callback in `run`).
    pub deadline: Instant,
    /// murmur:message/send's way out.
    pub(super) message: MessageCtx,
}

impl State {
    pub(super) fn new(
        grants: &Grants,
        limit: Duration,
        trust: Trust,
        sender: Option<Sender>,
        quota: Arc<Quota>,
    ) -> Result<State, String> {
        let mut wasi = WasiCtxBuilder::new();
        for (k, v) in &grants.env {
            wasi.env(k, v);
        }
        if let Some(peers) = grants.peers.as_ref().and_then(|p| p.peers_env()) {
            wasi.env(crate::call_member::PEERS_ENV, peers);
        }
        // Paths are relative to the work folder ("."); the session's tmp/ is /tmp.
        // Nothing else of the host's files exists for the component.
        wasi.preopened_dir(&grants.workdir, ".", FsPerms::ReadWrite)
            .map_err(|e| {
                format!(
                    "cannot open the work folder {}: {e}",
                    grants.workdir.display()
                )
            })?;
        if let Some(tmp) = &grants.tmp {
            wasi.preopened_dir(tmp, "/tmp", FsPerms::ReadWrite)
                .map_err(|e| format!("cannot open {}: {e}", tmp.display()))?;
        }
        // Sockets, name lookup, args and stdin stay at their deny-all defaults.
        let mut table = ResourceTable::new();
        table.set_max_capacity(bounds::TABLE_LIMIT);
        let mut http = WasiHttpCtx::new();
        http.set_field_size_limit(bounds::FIELD_LIMIT);
        Ok(State {
            table,
            wasi: wasi.build(),
            http,
            net: Net {
                allow: grants.network.clone(),
                peers: grants.peers.clone(),
                trust,
                span: sender.as_ref().and_then(|s| s.calls.span()),
                limit,
            },
            limits: Limits {
                inner: StoreLimitsBuilder::new()
                    .memory_size(MEMORY_LIMIT)
                    .instances(64)
                    .tables(64)
                    .memories(16)
                    .build(),
                hit: None,
            },
            counted: Counted::new(quota),
            deadline: Instant::now() + limit,
            message: MessageCtx { sender },
        })
    }

    pub(super) fn limiter(&mut self) -> &mut dyn ResourceLimiter {
        &mut self.limits
    }

    /// The memory the call asked for past [`MEMORY_LIMIT`], when that is what stopped it.
    pub(super) fn memory_hit(&self) -> Option<usize> {
        self.limits.hit
    }

    /// The first host-side limit of [`bounds`] the call reached, as its error says it.
    pub(super) fn bound_hit(&self) -> Option<&str> {
        self.counted.hit.get().map(String::as_str)
    }
}

impl bounds::Counts for State {
    fn counted(&mut self) -> (&mut ResourceTable, &mut Counted) {
        (&mut self.table, &mut self.counted)
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for State {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.net,
        }
    }
}

/// [`StoreLimits`] that remembers what a refused growth asked for, so the error can
/// name the limit. Growing past it traps.
struct Limits {
    inner: StoreLimits,
    hit: Option<usize>,
}

impl ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MEMORY_LIMIT {
            self.hit = Some(desired);
            wasmtime::bail!("memory limit of {} MiB reached", MEMORY_LIMIT >> 20);
        }
        self.inner.memory_growing(current, desired, maximum)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.inner.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }
    fn tables(&self) -> usize {
        self.inner.tables()
    }
    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

/// wasi:http's way out. The destination is the request's URI (scheme, host, port),
/// which the guest sets and the host checks against `capabilities.network.allow` with
/// the one reach rule ([`crate::call_member::reaches_host`]); the `Host` header is
/// set from that same authority, never taken from the guest (a guest's `Host` is a
/// forbidden header: Spin's CVE-2024-32980).
///
/// A request to a virtual member address (`http://<member>.formation.invalid/...`)
/// goes through [`crate::call_member::Peers::route`]: to the member's real door, checked
/// against the allow list, with the runtime's token and trust stamp in place of
/// whatever the component set; any other name under formation.invalid is refused.
struct Net {
    allow: Arc<Vec<String>>,
    peers: Option<Arc<crate::call_member::Peers>>,
    trust: Trust,
    /// The task's span, stamped as `traceparent` on a request to a member.
    span: Option<crate::trace::context::SpanContext>,
    limit: Duration,
}

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

impl WasiHttpHooks for Net {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        drop(fut);
        let (allow, peers, trust, span, limit) = (
            self.allow.clone(),
            self.peers.clone(),
            self.trust,
            self.span,
            self.limit,
        );
        Box::new(async move {
            // A member's door is shown its virtual name as Host, so what it answers
            // (its Agent Card's URL) names the virtual address, never the real one.
            let mut shown_host = None;
            if let Some(url) = virtual_address(request.uri()) {
                shown_host = request.uri().host().map(str::to_ascii_lowercase);
                let routed = match &peers {
                    Some(p) => p.route(&url, request.headers_mut(), trust, span).await,
                    None => return Err(HttpError::HttpRequestDenied),
                };
                match routed {
                    Ok(Routed::Peer { url, .. }) => {
                        *request.uri_mut() = url
                            .as_str()
                            .parse()
                            .map_err(|_| HttpError::HttpRequestUriInvalid)?;
                    }
                    // Peers::route refuses every other name under formation.invalid.
                    Ok(Routed::Direct) | Err(_) => return Err(HttpError::HttpRequestDenied),
                }
            }
            let authority = destination(&allow, request.uri())?;
            let host = http::HeaderValue::from_str(shown_host.as_deref().unwrap_or(&authority))
                .map_err(|_| HttpError::HttpRequestUriInvalid)?;
            request.headers_mut().insert(http::header::HOST, host);
            let bound = |t: Option<Duration>| Some(t.map_or(limit, |t| t.min(limit)));
            let options = RequestOptions {
                connect_timeout: bound(options.and_then(|o| o.connect_timeout)),
                first_byte_timeout: bound(options.and_then(|o| o.first_byte_timeout)),
                between_bytes_timeout: bound(options.and_then(|o| o.between_bytes_timeout)),
            };
            use http_body_util::BodyExt;
            // hyper reports a body cut short as a protocol error: say which limit.
            let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let said = {
                let cut = cut.clone();
                move |e: HttpError| {
                    if cut.load(std::sync::atomic::Ordering::Acquire) {
                        HttpError::HttpRequestBodySize(Some(bounds::BODY_LIMIT as u64))
                    } else {
                        e
                    }
                }
            };
            let request = request.map(|b| limited(b, HttpError::HttpRequestBodySize, Some(cut)));
            let (response, io) = wasmtime_wasi_http::default_send_request(request, Some(options))
                .await
                .map_err(said.clone())?;
            let io = async move { io.await.map_err(said) };
            Ok((
                response.map(|b| limited(b.boxed_unsync(), HttpError::HttpResponseBodySize, None)),
                Box::new(io) as Box<dyn Future<Output = Result<(), HttpError>> + Send>,
            ))
        })
    }
}

/// `body` cut off past [`bounds::BODY_LIMIT`] bytes with the error `past` makes
/// (and `cut` set).
fn limited(
    body: WasiBody,
    past: fn(Option<u64>) -> HttpError,
    cut: Option<Arc<std::sync::atomic::AtomicBool>>,
) -> WasiBody {
    use http_body_util::BodyExt;
    http_body_util::Limited::new(body, bounds::BODY_LIMIT)
        .map_err(move |e| match e.downcast::<HttpError>() {
            Ok(e) => *e,
            Err(_) => {
                if let Some(cut) = &cut {
                    cut.store(true, std::sync::atomic::Ordering::Release);
                }
                past(Some(bounds::BODY_LIMIT as u64))
            }
        })
        .boxed_unsync()
}

/// The request's URL when its host is under formation.invalid (the runtime routes it).
fn virtual_address(uri: &http::Uri) -> Option<String> {
    let host = uri.host()?.to_ascii_lowercase();
    crate::call_member::virtual_member(&host).map(|_| uri.to_string())
}

/// The request's authority when the allow list reaches it: http or https only, a host
/// present, no userinfo.
fn destination(allow: &[String], uri: &http::Uri) -> Result<String, HttpError> {
    let scheme = uri.scheme_str().ok_or(HttpError::HttpRequestUriInvalid)?;
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return Err(HttpError::HttpProtocolError),
    };
    let authority = uri.authority().ok_or(HttpError::HttpRequestUriInvalid)?;
    if authority.as_str().contains('@') || authority.host().is_empty() {
        return Err(HttpError::HttpRequestUriInvalid);
    }
    let port = authority.port_u16().unwrap_or(default_port);
    if !crate::call_member::reaches_host(allow, authority.host(), Some(port)) {
        return Err(HttpError::HttpRequestDenied);
    }
    Ok(authority.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_destination_is_the_uri_checked_against_the_allow_list() {
        let list = allow(&["api.example.com", "*.corp.test:8443", "localhost"]);
        let check = |u: &str| destination(&list, &u.parse().unwrap());
        assert_eq!(
            check("https://api.example.com/x").unwrap(),
            "api.example.com"
        );
        assert!(check("https://a.corp.test:8443/").is_ok());
        assert!(matches!(
            check("https://a.corp.test/"),
            Err(HttpError::HttpRequestDenied)
        ));
        assert!(check("http://127.0.0.1:9/").is_ok());
        assert!(matches!(
            check("https://evil.test/"),
            Err(HttpError::HttpRequestDenied)
        ));
        assert!(matches!(
            check("https://user@api.example.com/"),
            Err(HttpError::HttpRequestUriInvalid)
        ));
        assert!(matches!(
            check("ftp://api.example.com/"),
            Err(HttpError::HttpProtocolError)
        ));
    }
}
