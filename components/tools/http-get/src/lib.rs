//! `http-get {"url"}`: the response body, through wasi:http. The host lets the
//! request out only to hosts in `capabilities.network.allow`.
use toolkit::{Guest, Output, arg, error, ok, schema};

struct HttpGet;

impl Guest for HttpGet {
    fn schema() -> String {
        schema(&[("url", "An http:// or https:// URL.")])
    }

    fn call(arguments: String) -> Output {
        let url = match arg(&arguments, "url") {
            Ok(u) => u,
            Err(e) => return e,
        };
        let sent = toolkit::http::parse(&url).and_then(|req| toolkit::http::send(&req));
        match sent {
            Ok((status, body)) if (200..300).contains(&status) => ok(body),
            Ok((status, body)) => error(format!("HTTP {status}: {body}")),
            Err(e) => error(format!("GET {url}: {e}")),
        }
    }
}

toolkit::export!(HttpGet);
