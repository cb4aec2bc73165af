//! The egress proxy: the one way a confined tree reaches the network. It runs in the
//! member session's process, outside the sandbox, on 127.0.0.1.
//!
//! HTTP forward (`GET http://host/path`) and `CONNECT host:port`. For each request it
//! checks host and port against `capabilities.network.allow` (the one reach rule,
//! [`crate::manifest::rules::reaches_host`]), resolves the name itself, refuses loopback,
//! private, link-local and other special addresses unless an allow entry names that
//! address literally (`127.0.0.1`, `localhost`, `10.0.0.5`), and connects to exactly the
//! address it checked, so a name cannot be rebound between check and use. A refusal is
//! `403 Forbidden` with the reason in the body. Every decision goes to the sink (the
//! session writes it as a `proxy_decision` trace record).
//!
//! Bounded: [`MAX_CONNECTIONS`] at once (more wait in the kernel's backlog), a request
//! head of at most [`MAX_HEAD`] bytes read within [`HEAD_TIMEOUT`], name lookup and
//! connect within [`DIAL_TIMEOUT`], a relay closed after [`IDLE_TIMEOUT`] without a
//! byte either way.

#![allow(
    unsafe_code,
    reason = "registering owned descriptors (the inlet, a member's pidfd) with tokio"
)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::manifest::rules::{reaches_host, split_host_port};

pub const MAX_CONNECTIONS: usize = 64;
pub const MAX_HEAD: usize = 16 * 1024;
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(10);
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
const MAX_HEADERS: usize = 100;

/// One decision, as the trace records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `CONNECT`, or the forwarded request's method.
    pub method: String,
    pub host: String,
    pub port: u16,
    pub allowed: bool,
    /// Why: the address dialled, or what refused it.
    pub reason: String,
}

pub type Sink = Arc<dyn Fn(&Decision) + Send + Sync>;

impl Decision {
    /// The trace record of this decision.
    pub fn event(&self) -> crate::trace::Event {
        crate::trace::Event::ProxyDecision {
            method: self.method.clone(),
            host: self.host.clone(),
            port: self.port,
            allowed: self.allowed,
            reason: self.reason.clone(),
        }
    }
}

/// A running proxy; it stops when dropped, with every listener it was handed.
pub struct Proxy {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
    runtime: tokio::runtime::Handle,
    /// The inlets' tasks (tier `netns`), aborted with the proxy.
    inlets: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// What every listener of one proxy serves by: the allow list, the sink, the slots.
struct Shared {
    allow: Vec<String>,
    sink: Sink,
    slots: Arc<Semaphore>,
}

/// Accepts on `listener` and serves each connection, within the proxy's slots.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok(permit) = shared.slots.clone().acquire_owned().await else {
            return;
        };
        let Ok((conn, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            serve(conn, &shared.allow, &shared.sink).await;
            drop(permit);
        });
    }
}

impl Proxy {
    /// Listens on 127.0.0.1 (a free port) and serves `allow` until dropped.
    pub async fn start(allow: Vec<String>, sink: Sink) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            allow,
            sink,
            slots: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Proxy {
            addr,
            task,
            shared,
            runtime: tokio::runtime::Handle::current(),
            inlets: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Tier `netns`: a socketpair whose other end this proxy reads; returns the end a
    /// confined child sends its `(listener, pidfd)` on (close-on-exec). The proxy
    /// accepts on each listener it receives (inside that child's network namespace)
    /// until the child exits, and dials out from its own. Callable from any thread.
    pub fn inlet(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        let (ours, theirs) = super::net::socketpair()?;
        rustix::io::ioctl_fionbio(&ours, true)?;
        let shared = self.shared.clone();
        let _guard = self.runtime.enter();
        // SAFETY: the AsyncFd owns `ours` for as long as it is registered.
        let ours =
            unsafe { tokio::io::unix::AsyncFd::register(ours) }.map_err(|e| e.into_parts().1)?;
        let task = self.runtime.spawn(async move {
            use std::os::fd::AsRawFd;
            let mut served = tokio::task::JoinSet::new();
            loop {
                let Ok(mut ready) = ours.readable().await else {
                    return;
                };
                match super::net::recv_listener(ours.get_ref().as_raw_fd()) {
                    Ok(Some((listener, pidfd))) => {
                        if let Some(fut) = serve_member(listener, pidfd, shared.clone()) {
                            served.spawn(fut);
                        }
                    }
                    Ok(None) => ready.clear_ready(),
                    Err(_) => return,
                }
                while served.try_join_next().is_some() {}
            }
        });
        self.inlets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(task);
        Ok(theirs)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`, the value of the proxy variables.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The proxy variables a confined process is given (upper and lower case).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let url = self.url();
        crate::grant::PROXY_SET
            .into_iter()
            .map(|k| (k, url.clone()))
            .collect()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        for t in self
            .inlets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            t.abort();
        }
    }
}

/// Serves a listener a confined child made in its namespace until that child (its
/// pidfd) exits; then the listener closes, and with it mur's hold on the namespace.
fn serve_member(
    listener: std::os::fd::OwnedFd,
    pidfd: std::os::fd::OwnedFd,
    shared: Arc<Shared>,
) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
    let listener = std::net::TcpListener::from(listener);
    listener.set_nonblocking(true).ok()?;
    let listener = TcpListener::from_std(listener).ok()?;
    // SAFETY: the AsyncFd owns the pidfd for as long as it is registered.
    let pidfd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
    }
    .ok()?;
    Some(async move {
        tokio::select! {
            _ = accept_loop(listener, shared) => {}
            _ = pidfd.readable() => {}
        }
    })
}

/// One client connection: one request, then (when allowed) a relay.
async fn serve(mut conn: TcpStream, allow: &[String], sink: &Sink) {
    let mut buf = Vec::with_capacity(1024);
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut conn, &mut buf)).await {
        Ok(Ok(len)) => len,
        Ok(Err(status)) => return answer(&mut conn, status, "bad request head").await,
        Err(_) => return answer(&mut conn, 408, "no request head in time").await,
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    if !matches!(req.parse(&buf[..head]), Ok(httparse::Status::Complete(_))) {
        return answer(&mut conn, 400, "bad request head").await;
    }
    let method = req.method.unwrap_or_default().to_string();
    let target = req.path.unwrap_or_default().to_string();
    let (host, port, forward) = if method == "CONNECT" {
        let (h, p) = split_host_port(&target);
        match p {
            Some(p) => (h.to_string(), p, None),
            None => return answer(&mut conn, 400, "CONNECT needs host:port").await,
        }
    } else {
        let Ok(uri) = target.parse::<http::Uri>() else {
            return answer(&mut conn, 400, "the request target is not a URL").await;
        };
        if uri.scheme_str() != Some("http") {
            return answer(
                &mut conn,
                400,
                "a proxied request needs an http:// URL (use CONNECT for https)",
            )
            .await;
        }
        let Some(auth) = uri.authority() else {
            return answer(&mut conn, 400, "the URL has no host").await;
        };
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
        let mut out = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
        for h in req.headers.iter() {
            let n = h.name.to_ascii_lowercase();
            if n.starts_with("proxy-") || n == "connection" || n == "keep-alive" {
                continue;
            }
            out.extend_from_slice(h.name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(h.value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"Connection: close\r\n\r\n");
        out.extend_from_slice(&buf[head..]);
        (
            auth.host().to_string(),
            auth.port_u16().unwrap_or(80),
            Some(out),
        )
    };
    let verdict = decide(allow, &host, port).await;
    let decision = Decision {
        method,
        host: host.clone(),
        port,
        allowed: verdict.is_ok(),
        reason: match &verdict {
            Ok(addr) => format!("allowed, connected to {addr}"),
            Err(why) => why.clone(),
        },
    };
    sink(&decision);
    let mut upstream = match verdict {
        Ok(addr) => match tokio::time::timeout(DIAL_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => s,
            _ => return answer(&mut conn, 502, &format!("cannot connect to {addr}")).await,
        },
        Err(why) => {
            return answer(&mut conn, 403, &format!("refused {host}:{port}: {why}")).await;
        }
    };
    match forward {
        None => {
            if conn
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            // Bytes the client sent after the head already belong to the tunnel.
            if upstream.write_all(&buf[head..]).await.is_err() {
                return;
            }
        }
        Some(out) => {
            if upstream.write_all(&out).await.is_err() {
                return;
            }
        }
    }
    relay(conn, upstream).await;
}

/// Reads until the head's blank line; the head's length. Err: the status to answer.
async fn read_head(conn: &mut TcpStream, buf: &mut Vec<u8>) -> Result<usize, u16> {
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(i) = memchr::memmem::find(buf, b"\r\n\r\n") {
            return Ok(i + 4);
        }
        if buf.len() >= MAX_HEAD {
            return Err(431);
        }
        let n = conn.read(&mut chunk).await.map_err(|_| 400u16)?;
        if n == 0 {
            return Err(400);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn answer(conn: &mut TcpStream, status: u16, why: &str) {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        _ => "Bad Gateway",
    };
    let body = format!("mur egress proxy: {why}\n");
    let msg = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(msg.as_bytes()).await;
    let _ = conn.shutdown().await;
}

/// The address to dial for `host:port`, or why not.
pub async fn decide(allow: &[String], host: &str, port: u16) -> Result<SocketAddr, String> {
    let list = if allow.is_empty() {
        "empty".to_string()
    } else {
        allow.join(", ")
    };
    if !reaches_host(allow, host, Some(port)) {
        return Err(format!(
            "{host}:{port} is not in capabilities.network.allow ({list})"
        ));
    }
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    let addrs: Vec<SocketAddr> = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => {
            match tokio::time::timeout(DIAL_TIMEOUT, tokio::net::lookup_host((host, port))).await {
                Ok(Ok(a)) => a.collect(),
                Ok(Err(e)) => return Err(format!("cannot resolve {host}: {e}")),
                Err(_) => return Err(format!("cannot resolve {host}: no answer in time")),
            }
        }
    };
    // A special address is reached only by asking for it: the literal (or `localhost`),
    // which the allow list then holds. A name that resolves to one is refused, whatever
    // else the list holds: that is the rebinding attack.
    let named = literal.is_some() || host.eq_ignore_ascii_case("localhost");
    let mut why = format!("{host} resolves to no address");
    for addr in addrs {
        let ip = addr.ip();
        match special(ip) {
            Some(kind) if !named => {
                why = format!(
                    "{host} resolves to {ip}, a {kind} address; only a request for the address itself ({}) reaches it",
                    if ip.is_loopback() {
                        "127.0.0.1 or localhost, in the allow list"
                    } else {
                        "its IP literal, in the allow list"
                    }
                );
            }
            _ => return Ok(addr),
        }
    }
    Err(why)
}

/// A v4-mapped v6 address as the v4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// What is special about `ip`, if anything: an address no public name should reach.
pub fn special(ip: IpAddr) -> Option<&'static str> {
    match canonical(ip) {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_unspecified() || o[0] == 0 {
        Some("unspecified")
    } else if ip.is_multicast() || ip.is_broadcast() || o[0] >= 240 {
        Some("multicast or reserved")
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Some("shared (carrier NAT)")
    } else if o[0] == 198 && (o[1] & 0xfe) == 18 {
        Some("benchmarking")
    } else {
        None
    }
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if (s[0] & 0xfe00) == 0xfc00 {
        Some("unique local")
    } else if (s[0] & 0xffc0) == 0xfe80 {
        Some("link-local")
    } else if s[0] == 0x64 && s[1] == 0xff9b {
        // NAT64: the v4 address it carries decides.
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        special_v4(v4)
    } else {
        None
    }
}

/// Copies both ways until both sides close, or nothing moves for [`IDLE_TIMEOUT`].
async fn relay(a: TcpStream, b: TcpStream) {
    let (mut ar, mut aw) = a.into_split();
    let (mut br, mut bw) = b.into_split();
    let (mut ab, mut ba) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    let (mut a_open, mut b_open) = (true, true);
    while a_open || b_open {
        tokio::select! {
            r = ar.read(&mut ab), if a_open => match r {
                Ok(0) | Err(_) => { a_open = false; let _ = bw.shutdown().await; }
                Ok(n) => if bw.write_all(&ab[..n]).await.is_err() { return },
            },
            r = br.read(&mut ba), if b_open => match r {
                Ok(0) | Err(_) => { b_open = false; let _ = aw.shutdown().await; }
                Ok(n) => if aw.write_all(&ba[..n]).await.is_err() { return },
            },
            _ = tokio::time::sleep(IDLE_TIMEOUT) => return,
        }
    }
}
