//! mur-probe: tries what a confined capsule process must not do (and what it may), and
//! asserts each outcome with its exact error. std only, no dependencies.
//!
//! Usage: `mur-probe CHECK=EXPECT...`. Each CHECK is `kind:argument`:
//! - `read:PATH` reads a file; `write:PATH` creates (or truncates) and writes one;
//! - `connect:HOST:PORT` opens a TCP connection directly; `udp:HOST:PORT` sends a datagram;
//! - `kill:PID` sends signal 0 (the permission check, no signal); `ptrace:PID` seizes the
//!   process (released when the probe exits);
//! - `http:URL` sends `GET URL` to the proxy in `HTTP_PROXY`; `tunnel:HOST:PORT` sends
//!   `CONNECT HOST:PORT` to it, then `GET /` through the tunnel.
//!
//! EXPECT is `ok`, an errno name (`EACCES`, `EPERM`, `ECONNREFUSED`…) or, for `http` and
//! `tunnel`, an HTTP status (`200`, `403`). One line per check on stdout:
//! `PASS|FAIL <check> expected <e> got <g>[: detail]`. Exit 0 when every check passes,
//! 1 when one fails, 2 on a usage error. A check that cannot run is a failure.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::process::ExitCode;
use std::time::Duration;

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
    fn ptrace(req: i32, pid: i32, addr: usize, data: usize) -> i64;
}
const PTRACE_SEIZE: i32 = 0x4206;

/// The outcome of one check: `ok`, an errno name, an HTTP status, or `error`.
struct Got {
    what: String,
    detail: String,
}

fn got(what: impl Into<String>, detail: impl Into<String>) -> Got {
    Got {
        what: what.into(),
        detail: detail.into(),
    }
}

fn io(e: std::io::Error) -> Got {
    match e.raw_os_error() {
        Some(n) => got(errno_name(n), e.to_string()),
        None => got("error", e.to_string()),
    }
}

fn errno_name(n: i32) -> String {
    match n {
        1 => "EPERM",
        2 => "ENOENT",
        3 => "ESRCH",
        13 => "EACCES",
        17 => "EEXIST",
        22 => "EINVAL",
        30 => "EROFS",
        97 => "EAFNOSUPPORT",
        99 => "EADDRNOTAVAIL",
        101 => "ENETUNREACH",
        110 => "ETIMEDOUT",
        111 => "ECONNREFUSED",
        113 => "EHOSTUNREACH",
        _ => return format!("errno{n}"),
    }
    .to_string()
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn run(kind: &str, arg: &str) -> Got {
    match kind {
        "read" => match std::fs::read(arg) {
            Ok(b) => got("ok", format!("{} bytes", b.len())),
            Err(e) => io(e),
        },
        "write" => match std::fs::write(arg, b"mur-probe\n") {
            Ok(()) => got("ok", ""),
            Err(e) => io(e),
        },
        "connect" => match addr(arg)
            .and_then(|a| TcpStream::connect_timeout(&a, Duration::from_secs(5)).map_err(io))
        {
            Ok(_) => got("ok", ""),
            Err(g) => g,
        },
        "udp" => match addr(arg).and_then(|a| {
            let s = UdpSocket::bind(("0.0.0.0", 0)).map_err(io)?;
            s.send_to(b"mur-probe", a).map_err(io)
        }) {
            Ok(_) => got("ok", ""),
            Err(g) => g,
        },
        "kill" | "ptrace" => {
            let Ok(pid) = arg.parse::<i32>() else {
                return got("error", format!("`{arg}` is not a pid"));
            };
            // SAFETY: signal 0 sends nothing; PTRACE_SEIZE does not stop the tracee and
            // ends when this process exits.
            let rc = unsafe {
                if kind == "kill" {
                    kill(pid, 0) as i64
                } else {
                    ptrace(PTRACE_SEIZE, pid, 0, 0)
                }
            };
            if rc == 0 {
                got("ok", "")
            } else {
                got(errno_name(last_errno()), "")
            }
        }
        "http" => proxied(arg, None),
        "tunnel" => proxied(arg, Some(arg)),
        _ => got("error", format!("unknown check `{kind}`")),
    }
}

fn addr(hostport: &str) -> Result<std::net::SocketAddr, Got> {
    hostport
        .to_socket_addrs()
        .map_err(io)?
        .next()
        .ok_or_else(|| got("error", format!("{hostport} resolves to nothing")))
}

/// A request through `HTTP_PROXY`: `GET url`, or `CONNECT` then `GET /`. The status of
/// the proxy's answer (of the tunnelled answer when the tunnel opened), and its body.
fn proxied(target: &str, tunnel: Option<&str>) -> Got {
    let Ok(proxy) = std::env::var("HTTP_PROXY") else {
        return got("error", "HTTP_PROXY is not set");
    };
    let hostport = proxy.trim_start_matches("http://").trim_end_matches('/');
    let mut s = match addr(hostport)
        .and_then(|a| TcpStream::connect_timeout(&a, Duration::from_secs(5)).map_err(io))
    {
        Ok(s) => s,
        Err(g) => return got(g.what, format!("proxy {hostport}: {}", g.detail)),
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let req = match tunnel {
        None => {
            let host = target
                .trim_start_matches("http://")
                .split('/')
                .next()
                .unwrap_or("");
            format!("GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n")
        }
        Some(hp) => format!("CONNECT {hp} HTTP/1.1\r\nHost: {hp}\r\n\r\n"),
    };
    if let Err(e) = s.write_all(req.as_bytes()) {
        return io(e);
    }
    let (status, body) = match read_answer(&mut s, tunnel.is_some()) {
        Ok(a) => a,
        Err(e) => return io(e),
    };
    if tunnel.is_none() || status != 200 {
        return got(status.to_string(), body);
    }
    let host = tunnel.unwrap_or_default();
    if let Err(e) = s.write_all(
        format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    ) {
        return io(e);
    }
    match read_answer(&mut s, false) {
        Ok((status, body)) => got(status.to_string(), body),
        Err(e) => io(e),
    }
}

/// Reads one answer: its status and body. `head_only`: stop at a `200`'s head (the
/// tunnel follows it, not a body); a refusal's body is read all the same.
fn read_answer(s: &mut TcpStream, head_only: bool) -> std::io::Result<(u16, String)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte)? == 0 {
            break;
        }
        buf.push(byte[0]);
        if buf.len() > 64 * 1024 {
            break;
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if head_only && status == 200 {
        return Ok((status, String::new()));
    }
    let mut body = Vec::new();
    s.take(64 * 1024).read_to_end(&mut body)?;
    Ok((status, String::from_utf8_lossy(&body).trim().to_string()))
}

fn main() -> ExitCode {
    let checks: Vec<String> = std::env::args().skip(1).collect();
    if checks.is_empty() {
        eprintln!("usage: mur-probe KIND:ARG=EXPECT...");
        return ExitCode::from(2);
    }
    let mut failed = false;
    let mut out = std::io::stdout().lock();
    for c in &checks {
        let Some((check, expect)) = c.rsplit_once('=') else {
            eprintln!("mur-probe: `{c}` is not CHECK=EXPECT");
            return ExitCode::from(2);
        };
        let Some((kind, arg)) = check.split_once(':') else {
            eprintln!("mur-probe: `{check}` is not KIND:ARG");
            return ExitCode::from(2);
        };
        let g = run(kind, arg);
        let pass = g.what == expect;
        failed |= !pass;
        let _ = writeln!(
            out,
            "{} {check} expected {expect} got {}{}",
            if pass { "PASS" } else { "FAIL" },
            g.what,
            if g.detail.is_empty() {
                String::new()
            } else {
                format!(": {}", g.detail.replace('\n', " "))
            }
        );
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
