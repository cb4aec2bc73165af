//! A blocking GET or POST through wasi:http, for the guests here.

use wasi::http::outgoing_handler;
use wasi::http::types::OutgoingBody;
use wasi::http::types::{ErrorCode, Fields, Method, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

/// What a request is made of; `authority: None` sends a request with no authority,
/// `body: Some` a POST with that body (else a GET).
pub struct Request<'a> {
    pub scheme: &'a str,
    pub authority: Option<&'a str>,
    pub path: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: Option<&'a str>,
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
        body: None,
    })
}

/// Sends the request; the status and body, or why it failed.
pub fn send(req: &Request) -> Result<(u16, String), String> {
    exchange(req).map(|r| (r.status, r.body))
}

/// What came back: everything of the response a component can observe.
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// Sends the request; the whole response, or why it failed.
pub fn exchange(req: &Request) -> Result<Response, String> {
    let headers = Fields::new();
    for (k, v) in req.headers {
        headers
            .append(k, v.as_bytes())
            .map_err(|e| format!("header {k}: {e:?}"))?;
    }
    let out = OutgoingRequest::new(headers);
    let method = if req.body.is_some() {
        Method::Post
    } else {
        Method::Get
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
    let future = outgoing_handler::handle(out, None).map_err(describe)?;
    if let Some(text) = req.body {
        let stream = body.write().map_err(|()| "request body stream")?;
        for chunk in text.as_bytes().chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| format!("writing the body: {e:?}"))?;
        }
        drop(stream);
    }
    OutgoingBody::finish(body, None).map_err(describe)?;
    future.subscribe().block();
    let response = future
        .get()
        .ok_or("no response")?
        .map_err(|()| "response taken twice")?
        .map_err(describe)?;
    let status = response.status();
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let body = response.consume().map_err(|()| "body")?;
    let stream = body.stream().map_err(|()| "body stream")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("reading the body: {}", e.to_debug_string()));
            }
        }
    }
    Ok(Response {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

fn describe(e: ErrorCode) -> String {
    format!("{e:?}")
}
