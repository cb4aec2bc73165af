//! A blocking request through wasi:http, for the guests here.

use wasi::http::outgoing_handler;
pub use wasi::http::types::ErrorCode;
use wasi::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

/// What a request is made of; `authority: None` sends a request with no authority.
pub struct Request<'a> {
    pub scheme: &'a str,
    pub authority: Option<&'a str>,
    pub path: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    /// `GET` or `POST`.
    pub method: &'a str,
    /// Sent as the request's body.
    pub body: Option<&'a [u8]>,
}

/// What came back.
pub struct Response {
    pub status: u16,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `scheme://authority/path` split into a [`Request`].
pub fn parse(url: &str) -> Result<Request<'_>, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("`{url}` is not an http(s) URL"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    Ok(Request {
        scheme,
        authority: Some(authority),
        path,
        headers: &[],
        method: "GET",
        body: None,
    })
}

/// Sends the request; the status and body, or why it failed.
pub fn send(req: &Request) -> Result<(u16, String), String> {
    fetch(req)
        .map(|r| (r.status, r.body))
        .map_err(|e| e.to_string())
}

/// Why a request got no response.
pub enum Fault {
    /// wasi:http's error code (the host refused it, the connection failed, ...).
    Http(ErrorCode),
    /// The request could not be made at all.
    Other(String),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Http(e) => write!(f, "{e:?}"),
            Fault::Other(s) => f.write_str(s),
        }
    }
}

impl From<&str> for Fault {
    fn from(s: &str) -> Fault {
        Fault::Other(s.to_string())
    }
}

impl From<String> for Fault {
    fn from(s: String) -> Fault {
        Fault::Other(s)
    }
}

/// Sends the request; the whole response, or why there is none.
pub fn fetch(req: &Request) -> Result<Response, Fault> {
    let headers = Fields::new();
    for (k, v) in req.headers {
        headers
            .append(k, v.as_bytes())
            .map_err(|e| format!("header {k}: {e:?}"))?;
    }
    // A body goes with its length (not chunked), which every server takes.
    if let Some(body) = req.body {
        headers
            .append("content-length", body.len().to_string().as_bytes())
            .map_err(|e| format!("header content-length: {e:?}"))?;
    }
    let out = OutgoingRequest::new(headers);
    let method = match req.method {
        "GET" => Method::Get,
        "POST" => Method::Post,
        other => Method::Other(other.to_string()),
    };
    out.set_method(&method).map_err(|()| "method")?;
    let scheme = match req.scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => Scheme::Other(other.to_string()),
    };
    out.set_scheme(Some(&scheme)).map_err(|()| "scheme")?;
    out.set_authority(req.authority).map_err(|()| "authority")?;
    out.set_path_with_query(Some(req.path))
        .map_err(|()| "path")?;
    let body = out.body().map_err(|()| "request body")?;
    let future = outgoing_handler::handle(out, None).map_err(Fault::Http)?;
    // The host may refuse the request while the body is being written; then the
    // body's stream closes and the response future holds the reason, which wins.
    let mut unsent = None;
    {
        let stream = body.write().map_err(|()| "request body stream")?;
        for chunk in req.body.unwrap_or_default().chunks(4096) {
            if let Err(e) = stream.blocking_write_and_flush(chunk) {
                unsent = Some(format!("writing the body: {e:?}"));
                break;
            }
        }
    }
    let finished = OutgoingBody::finish(body, None);
    future.subscribe().block();
    let response = future
        .get()
        .ok_or("no response")?
        .map_err(|()| "response taken twice")?
        .map_err(Fault::Http)?;
    if let Some(why) = unsent {
        return Err(why.into());
    }
    finished.map_err(Fault::Http)?;
    let status = response.status();
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect();
    let body = response.consume().map_err(|()| "body")?;
    let stream = body.stream().map_err(|()| "body stream")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("reading the body: {}", e.to_debug_string()).into());
            }
        }
    }
    Ok(Response {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    })
}
