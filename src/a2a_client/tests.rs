//! The client against a real axum server on 127.0.0.1: streams written in odd chunk
//! sizes (an event, a line, a character split across chunks), `data:` on several
//! lines, the refusals, and the headers every request carries.

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use super::*;

/// One stream, every way a door may frame it: `data:` on two lines, a comment (the
/// keep-alive), CRLF and CR line ends, an `event:` and an `id:` field, data that is no
/// JSON-RPC response (skipped), characters of two to four bytes, and an error event.
const STREAM: &str = concat!(
    ": keep-alive\n\n",
    "data: {\"jsonrpc\":\"2.0\",\"id\":1,\n",
    "data: \"result\":{\"n\":1,\"text\":\"caf\u{e9} \u{2014} \u{1f980}\"}}\n\n",
    "event: message\r\nid: 7\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":2}}\r\n\r\n",
    "data: not json\n\n",
    "data:{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":3}}\r\r",
    "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32050,\"message\":\"busy\"}}\n\n",
);

/// What [`STREAM`] reads as.
fn expected() -> Vec<Result<Value, ClientError>> {
    vec![
        Ok(json!({"n": 1, "text": "café — 🦀"})),
        Ok(json!({"n": 2})),
        Ok(json!({"n": 3})),
        Err(ClientError::Rpc {
            code: -32050,
            message: "busy".into(),
        }),
    ]
}

/// A server on 127.0.0.1 whose every POST answers `answer(headers)`.
async fn server<F>(answer: F) -> Url
where
    F: Fn(HeaderMap) -> Response + Clone + Send + Sync + 'static,
{
    let app = axum::Router::new().route(
        "/",
        post(move |headers: HeaderMap| {
            let answer = answer.clone();
            async move { answer(headers) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Url::parse(&format!("http://{addr}/")).unwrap()
}

/// `text` as an SSE response, in chunks of the given sizes (taken in turn), each
/// flushed alone: the body yields to the runtime between chunks, so hyper writes what
/// it holds before the next. `written` counts the chunks.
fn chunked(text: &'static str, sizes: &'static [usize], written: Arc<Mutex<usize>>) -> Response {
    let bytes = text.as_bytes();
    let chunks = futures_util::stream::unfold((0usize, 0usize), move |(at, turn)| {
        let written = written.clone();
        async move {
            if at >= bytes.len() {
                return None;
            }
            tokio::task::yield_now().await;
            let end = (at + sizes[turn % sizes.len()]).min(bytes.len());
            *written.lock().unwrap() += 1;
            let chunk = bytes::Bytes::from_static(&bytes[at..end]);
            Some((Ok::<_, std::io::Error>(chunk), (end, turn + 1)))
        }
    });
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(chunks),
    )
        .into_response()
}

async fn read_all(mut events: Events) -> Vec<Result<Value, ClientError>> {
    let mut out = Vec::new();
    while let Some(event) = events.next().await {
        out.push(event);
    }
    out
}

fn endpoint(url: Url) -> Endpoint {
    Endpoint::new(http().build().unwrap(), url, "s3cret")
}

#[tokio::test]
async fn events_split_across_chunks_and_data_on_several_lines_read_whole() {
    let sizes: [&'static [usize]; 6] = [&[1], &[2], &[3], &[7], &[13], &[1, 5, 2, 11]];
    for sizes in sizes {
        let written = Arc::new(Mutex::new(0));
        let counted = written.clone();
        let url = server(move |_| chunked(STREAM, sizes, counted.clone())).await;
        let events = endpoint(url).stream("Watch", json!({})).await.unwrap();
        let got = read_all(events).await;
        assert_eq!(got, expected(), "chunk sizes {sizes:?}");
        let min = STREAM.len() / sizes.iter().max().unwrap();
        assert!(
            *written.lock().unwrap() >= min,
            "{sizes:?}: the server wrote it in chunks"
        );
    }
}

#[tokio::test]
async fn a_stream_that_is_not_utf8_breaks_instead_of_buffering() {
    let url = server(|_| {
        let body = Body::from(
            &b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1}\n\ndata: \xff\xfe\n\n"[..],
        );
        ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
    })
    .await;
    let got = read_all(endpoint(url).stream("Watch", json!({})).await.unwrap()).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        matches!(&got[0], Err(ClientError::Broken(why)) if why.contains("UTF-8")),
        "{got:?}"
    );
}

#[test]
fn the_guard_splits_nothing_valid_and_bounds_an_event() {
    // A character split at every byte, and a blank line split across chunks.
    let text = "data: é🦀\r\n\r\ndata: x\n\n".as_bytes();
    for cut in 1..text.len() {
        let mut guard = Guard::default();
        guard.check(&text[..cut]).unwrap();
        guard.check(&text[cut..]).unwrap();
        assert_eq!(guard.open, 0, "cut at {cut}");
        assert!(guard.unfinished.is_empty(), "cut at {cut}");
    }
    // An event that never ends is refused once it passes MAX_ANSWER.
    let mut guard = Guard::default();
    let mib = vec![b'x'; 1 << 20];
    guard.check(b"data: ").unwrap();
    for _ in 0..(MAX_ANSWER >> 20) - 1 {
        guard.check(&mib).unwrap();
    }
    let err = guard.check(&mib).unwrap_err();
    assert!(err.contains("longer than 16 MiB"), "{err}");
    // A blank line resets the count.
    let mut guard = Guard::default();
    for _ in 0..(MAX_ANSWER >> 20) + 4 {
        guard.check(&mib).unwrap();
        guard.check(b"\n\n").unwrap();
    }
}

#[tokio::test]
async fn every_request_carries_the_one_set_of_headers() {
    let seen = Arc::new(Mutex::new(None));
    let keep = seen.clone();
    let url = server(move |headers| {
        *keep.lock().unwrap() = Some(headers);
        axum::Json(json!({"jsonrpc": "2.0", "id": 1, "result": {"ok": true}})).into_response()
    })
    .await;
    let door = endpoint(url).header("x-murmur-task-trust", "trusted");
    let result = door.call("GetTask", json!({"id": "t"})).await.unwrap();
    assert_eq!(result, json!({"ok": true}));
    let headers = seen.lock().unwrap().take().unwrap();
    assert_eq!(headers["authorization"], "Bearer s3cret");
    assert_eq!(headers["a2a-version"], a2a::PROTOCOL_VERSION);
    assert_eq!(headers["x-murmur-task-trust"], "trusted");
    // The secret is in no Debug text of the endpoint.
    assert!(!format!("{door:?}").contains("s3cret"));
}

#[tokio::test]
async fn refusals_map_to_one_error_each() {
    let url = server(|headers| match headers["x-case"].to_str().unwrap() {
        "http" => (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "unauthorized", "message": "no token"})),
        )
            .into_response(),
        "rpc" => axum::Json(json!({"jsonrpc": "2.0", "id": 1,
            "error": {"code": -32004, "message": "already ended"}}))
        .into_response(),
        "garbage" => "<html>".into_response(),
        _ => Body::from(vec![b' '; MAX_ANSWER + 1]).into_response(),
    })
    .await;
    let door = |case: &'static str| endpoint(url.clone()).header("x-case", case);
    let refused = ClientError::Refused {
        status: 401,
        error: "unauthorized".into(),
        message: "no token".into(),
    };
    let rpc = ClientError::Rpc {
        code: -32004,
        message: "already ended".into(),
    };
    assert_eq!(
        door("http").call("M", json!({})).await,
        Err(refused.clone())
    );
    assert_eq!(
        door("http").stream("M", json!({})).await.err(),
        Some(refused)
    );
    assert_eq!(door("rpc").call("M", json!({})).await, Err(rpc.clone()));
    assert_eq!(door("rpc").stream("M", json!({})).await.err(), Some(rpc));
    for case in ["garbage", "big"] {
        let err = door(case).call("M", json!({})).await.unwrap_err();
        assert!(matches!(err, ClientError::BadAnswer(_)), "{case}: {err:?}");
        let err = door(case).stream("M", json!({})).await.err().unwrap();
        assert!(matches!(err, ClientError::BadAnswer(_)), "{case}: {err:?}");
    }
    // A door that is not there: unreachable, the URL not in the text.
    let gone = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = gone.local_addr().unwrap();
    drop(gone);
    let url = Url::parse(&format!("http://{addr}/?secret=q")).unwrap();
    let err = endpoint(url).call("M", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Unreachable(t) if !t.contains("secret=q")),
        "{err:?}"
    );
}
