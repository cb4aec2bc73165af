//! A tool for the tests that makes the host hold what it can, as `{"do": ...}` says:
//! `files` (open files until refused), `table` (pollables until refused), `fields`
//! (1 KB header sets until refused), `big-field` (one 50 KB header), `write` (1 MiB
//! writes to /tmp until refused), `result` (`{"n"}` bytes back), `body-in` (reads the
//! body of `{"url"}`), `body-out` (streams 1 MiB chunks to `{"url"}`).
use toolkit::{Guest, Output, arg, error, ok};
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

struct Hostile;

impl Guest for Hostile {
    fn schema() -> String {
        toolkit::schema(&[("do", "what to grab")])
    }

    fn call(arguments: String) -> Output {
        let what = match arg(&arguments, "do") {
            Ok(w) => w,
            Err(e) => return e,
        };
        match what.as_str() {
            "files" => files(),
            "table" => table(),
            "fields" => fields(),
            "big-field" => match Fields::new().append("x-big", &vec![b'a'; 50_000]) {
                Ok(()) => ok("a 50 KB header was taken"),
                Err(e) => error(format!("the 50 KB header was refused: {e:?}")),
            },
            "write" => write(),
            "result" => match arg(&arguments, "n").map(|n| n.parse::<usize>()) {
                Ok(Ok(n)) => ok("r".repeat(n)),
                _ => error("`n` is not a number"),
            },
            "body-in" => match arg(&arguments, "url") {
                Ok(url) => body_in(&url),
                Err(e) => e,
            },
            "body-out" => match arg(&arguments, "url") {
                Ok(url) => body_out(&url),
                Err(e) => e,
            },
            other => ok(format!("nothing to do for {other}")),
        }
    }
}

fn files() -> Output {
    if let Err(e) = std::fs::write("/tmp/hostile-file", "x") {
        return error(format!("cannot write /tmp/hostile-file: {e}"));
    }
    let mut held = Vec::new();
    loop {
        match std::fs::File::open("/tmp/hostile-file") {
            Ok(f) => held.push(f),
            Err(e) => return error(format!("opened {} files, then: {e}", held.len())),
        }
    }
}

fn table() -> Output {
    let mut held = Vec::new();
    loop {
        held.push(wasi::clocks::monotonic_clock::subscribe_duration(
            10_000_000_000,
        ));
        std::hint::black_box(&held);
    }
}

fn fields() -> Output {
    let value = vec![b'a'; 1000];
    let mut held = Vec::new();
    loop {
        let f = Fields::new();
        if let Err(e) = f.append("x-big", &value) {
            return error(format!("header set {} refused: {e:?}", held.len()));
        }
        held.push(f);
    }
}

fn write() -> Output {
    use std::io::Write;
    let mut f = match std::fs::File::create("/tmp/hostile-big") {
        Ok(f) => f,
        Err(e) => return error(format!("cannot create /tmp/hostile-big: {e}")),
    };
    let chunk = vec![0u8; 1 << 20];
    let mut mib = 0;
    loop {
        match f.write_all(&chunk) {
            Ok(()) => mib += 1,
            Err(e) => return error(format!("wrote {mib} MiB, then: {e}")),
        }
    }
}

fn body_in(url: &str) -> Output {
    let req = match toolkit::http::parse(url) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    let out = match request(req.scheme, req.authority, req.path, Method::Get) {
        Ok(o) => o,
        Err(e) => return error(e),
    };
    let (body, future) = out;
    drop(OutgoingBody::finish(body, None));
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(r))) => r,
        other => return error(format!("no response: {other:?}")),
    };
    let Ok(body) = response.consume() else {
        return error("no body");
    };
    let Ok(stream) = body.stream() else {
        return error("no body stream");
    };
    let mut read = 0usize;
    loop {
        match stream.blocking_read(1 << 20) {
            Ok(chunk) => read += chunk.len(),
            Err(StreamError::Closed) => return ok(format!("read the whole body: {read} bytes")),
            Err(StreamError::LastOperationFailed(e)) => {
                let code = wasi::http::types::http_error_code(&e);
                return error(format!(
                    "read {read} bytes, then: {code:?} ({})",
                    e.to_debug_string()
                ));
            }
        }
    }
}

fn body_out(url: &str) -> Output {
    let req = match toolkit::http::parse(url) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    let (body, future) = match request(req.scheme, req.authority, req.path, Method::Post) {
        Ok(o) => o,
        Err(e) => return error(e),
    };
    let chunk = vec![b'b'; 1 << 20];
    let mut sent = 0usize;
    let mut failed = None;
    {
        let Ok(stream) = body.write() else {
            return error("no body stream");
        };
        'chunks: for _ in 0..64 {
            // blocking-write-and-flush takes at most 4096 bytes at a time.
            for piece in chunk.chunks(4096) {
                if let Err(e) = stream.blocking_write_and_flush(piece) {
                    failed = Some(format!("{e:?}"));
                    break 'chunks;
                }
            }
            sent += chunk.len();
        }
    }
    let finished = OutgoingBody::finish(body, None);
    future.subscribe().block();
    let response = future.get();
    error(format!(
        "sent {sent} bytes; writing: {failed:?}; finishing: {finished:?}; response: {:?}",
        response.map(|r| r.map(|r| r.map(|r| r.status())))
    ))
}

type Sent = (OutgoingBody, outgoing_handler::FutureIncomingResponse);

fn request(
    scheme: &str,
    authority: Option<&str>,
    path: &str,
    method: Method,
) -> Result<Sent, String> {
    let out = OutgoingRequest::new(Fields::new());
    out.set_method(&method).map_err(|()| "method")?;
    let scheme = if scheme == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    };
    out.set_scheme(Some(&scheme)).map_err(|()| "scheme")?;
    out.set_authority(authority).map_err(|()| "authority")?;
    out.set_path_with_query(Some(path)).map_err(|()| "path")?;
    let body = out.body().map_err(|()| "request body")?;
    let future = outgoing_handler::handle(out, None).map_err(|e| format!("{e:?}"))?;
    Ok((body, future))
}

toolkit::export!(Hostile);
