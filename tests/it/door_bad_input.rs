//! Bad input at a real door, sent as raw bytes over TCP: each gets its own error and
//! the door keeps serving.

use std::net::SocketAddr;
use std::time::Duration;

use crate::support::door::*;
use mur::door::Limits;
use rstest::rstest;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `head` + `body` as one request and reads the whole response (the request
/// asks the door to close the connection after it).
async fn raw(addr: SocketAddr, extra_headers: &str, body: &[u8]) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {OPERATOR}\r\nContent-Type: application/json\r\nConnection: close\r\n{extra_headers}"
    );
    let head = if extra_headers.contains("Content-Length")
        || extra_headers.contains("Transfer-Encoding")
    {
        format!("{head}\r\n")
    } else {
        format!("{head}Content-Length: {}\r\n\r\n", body.len())
    };
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    read_response(&mut s).await
}

async fn read_response(s: &mut TcpStream) -> (u16, Value) {
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .expect("the door answers within 10 s")
        .expect("the response reads");
    let text = String::from_utf8_lossy(&buf);
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

async fn still_serves(f: &Fixture) {
    let r = f.ok(Some(OPERATOR), "ListTasks", json!({})).await;
    assert!(r["tasks"].is_array());
}

#[rstest]
#[case::malformed_json("{\"jsonrpc\": \"2.0\", \"id\": 1, ", -32700, json!(null))]
#[case::not_an_object("42", -32600, json!(null))]
#[case::batch("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ListTasks\"}]", -32600, json!(null))]
#[case::wrong_jsonrpc_version(r#"{"jsonrpc":"1.0","id":3,"method":"ListTasks"}"#, -32600, json!(3))]
#[case::missing_jsonrpc(r#"{"id":3,"method":"ListTasks"}"#, -32600, json!(3))]
#[case::missing_id(r#"{"jsonrpc":"2.0","method":"ListTasks"}"#, -32600, json!(null))]
#[case::unknown_method(r#"{"jsonrpc":"2.0","id":"u","method":"tasks/get"}"#, -32601, json!("u"))]
#[case::method_not_a_string(r#"{"jsonrpc":"2.0","id":4,"method":["GetTask"]}"#, -32600, json!(4))]
#[case::params_not_an_object(r#"{"jsonrpc":"2.0","id":4,"method":"GetTask","params":["x"]}"#, -32602, json!(4))]
#[case::wrong_param_type(r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":5}}"#, -32602, json!(5))]
#[case::missing_param(r#"{"jsonrpc":"2.0","id":5,"method":"CancelTask","params":{}}"#, -32602, json!(5))]
#[case::negative_history(r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"x","historyLength":-1}}"#, -32602, json!(5))]
#[case::message_without_parts(r#"{"jsonrpc":"2.0","id":6,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#, -32602, json!(6))]
#[case::unknown_role(r#"{"jsonrpc":"2.0","id":6,"method":"SendMessage","params":{"message":{"messageId":"m","role":"user","parts":[{"text":"x"}]}}}"#, -32602, json!(6))]
#[case::part_with_two_contents(r#"{"jsonrpc":"2.0","id":6,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x","url":"y"}]}}}"#, -32602, json!(6))]
#[case::huge_integer_id(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ListTasks"}"#, -32600, json!(null))]
#[case::out_of_range_number_id(r#"{"jsonrpc":"2.0","id":1e400,"method":"ListTasks"}"#, -32700, json!(null))]
#[case::fractional_id(r#"{"jsonrpc":"2.0","id":1.5,"method":"ListTasks"}"#, -32600, json!(null))]
#[case::object_id(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ListTasks"}"#, -32600, json!(null))]
#[case::deeply_nested(&("[".repeat(10_000)), -32700, json!(null))]
#[tokio::test]
async fn malformed_requests_get_their_jsonrpc_error(
    #[case] body: &str,
    #[case] code: i64,
    #[case] id: Value,
) {
    let f = start(Setup::default()).await;
    let (status, resp) = raw(f.door.addr(), "", body.as_bytes()).await;
    assert_eq!(status, 200, "{resp}");
    assert_eq!(resp["jsonrpc"], "2.0");
    assert_eq!(resp["error"]["code"], code, "{resp}");
    assert_eq!(resp["id"], id, "{resp}");
    assert!(resp.get("result").is_none());
    still_serves(&f).await;
}

#[tokio::test]
async fn a_huge_string_id_is_refused_without_being_echoed() {
    let f = start(Setup::default()).await;
    let long = "i".repeat(100_000);
    let body = json!({"jsonrpc": "2.0", "id": long, "method": "ListTasks"}).to_string();
    let (status, resp) = raw(f.door.addr(), "", body.as_bytes()).await;
    assert_eq!(status, 200);
    assert_eq!(resp["error"]["code"], -32600);
    assert_eq!(resp["id"], Value::Null);
    still_serves(&f).await;
}

#[tokio::test]
async fn an_unsupported_protocol_version_is_refused() {
    let f = start(Setup::default()).await;
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ListTasks"}"#;
    let (status, resp) = raw(f.door.addr(), "A2A-Version: 0.3\r\n", body).await;
    assert_eq!(status, 200);
    assert_eq!(resp["error"]["code"], -32009);
    let (_, resp) = raw(f.door.addr(), "A2A-Version: 1.0\r\n", body).await;
    assert!(resp["result"]["tasks"].is_array(), "{resp}");
}

#[tokio::test]
async fn a_body_declared_over_the_cap_is_413_before_it_is_sent() {
    let f = start(Setup::default()).await;
    let cap = Limits::default().max_body_bytes;
    let headers = format!("Content-Length: {}\r\n", cap + 1);
    let (status, resp) = raw(f.door.addr(), &headers, b"").await;
    assert_eq!(status, 413);
    assert_eq!(resp["error"], "payload_too_large");
    assert!(resp["message"].as_str().unwrap().contains("1048576"));
    still_serves(&f).await;
}

#[tokio::test]
async fn a_chunked_body_over_the_cap_is_413() {
    let f = start(Setup::default()).await;
    let cap = Limits::default().max_body_bytes;
    let mut body = format!("{:x}\r\n", cap + 1).into_bytes();
    body.extend(std::iter::repeat_n(b' ', cap + 1));
    let (status, resp) = raw(f.door.addr(), "Transfer-Encoding: chunked\r\n", &body).await;
    assert_eq!(status, 413);
    assert_eq!(resp["error"], "payload_too_large");
    still_serves(&f).await;
}

#[tokio::test]
async fn a_body_at_the_cap_is_read() {
    let f = start(Setup::default()).await;
    let cap = Limits::default().max_body_bytes;
    let mut body = br#"{"jsonrpc":"2.0","id":1,"method":"ListTasks"}"#.to_vec();
    body.resize(cap, b' ');
    let (status, resp) = raw(f.door.addr(), "", &body).await;
    assert_eq!(status, 200);
    assert!(resp["result"]["tasks"].is_array(), "{resp}");
}

fn short_timeouts() -> Setup {
    Setup {
        limits: Limits {
            header_read_timeout: Duration::from_millis(300),
            body_read_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
        ..Setup::default()
    }
}

/// Slowloris: headers sent a byte at a time. The door closes the connection once its
/// header read timeout passes, and serves others meanwhile.
#[tokio::test]
async fn headers_sent_byte_by_byte_are_cut_off() {
    let f = start(short_timeouts()).await;
    let mut s = TcpStream::connect(f.door.addr()).await.unwrap();
    let head = b"POST / HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let started = std::time::Instant::now();
    let mut closed = false;
    for byte in head {
        // The client is slow: one byte every 20 ms, 2+ s in all.
        if s.write_all(&[*byte]).await.is_err() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Meanwhile the door serves everyone else.
        if byte == &b'\n' {
            still_serves(&f).await;
        }
    }
    if !closed {
        let mut buf = [0u8; 256];
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .expect("the door closes the slow connection")
            .unwrap_or(0);
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(n == 0 || text.starts_with("HTTP/1.1 408"), "{text}");
    }
    assert!(started.elapsed() < Duration::from_secs(8));
    still_serves(&f).await;
}

/// A body that stops arriving gets 408.
#[tokio::test]
async fn a_body_that_stops_arriving_gets_408() {
    let f = start(short_timeouts()).await;
    let mut s = TcpStream::connect(f.door.addr()).await.unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {OPERATOR}\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let (status, resp) = read_response(&mut s).await;
    assert_eq!(status, 408);
    assert_eq!(resp["error"], "request_timeout");
    still_serves(&f).await;
}

/// Unknown paths and methods answer with HTTP errors, the card needs GET.
#[tokio::test]
async fn other_paths_are_404() {
    let f = start(Setup::default()).await;
    let resp = f.client.get(format!("{}nope", f.url)).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "not_found");
    let resp = f.client.get(&f.url).send().await.unwrap();
    assert_eq!(resp.status(), 405);
    still_serves(&f).await;
}
