//! wasi:http only, to hosts capabilities.network.allow reaches, checked against the
//! request's real destination; no raw sockets.

use super::*;

fn net_capsule(w: &World, name: &str, allow: &[String], calls: &[Value]) {
    let extra = format!(
        "capabilities:\n  network:\n    allow: [{}]\n{}",
        allow.join(", "),
        tools_yaml(&[
            ("http-get", "tools/get.wasm"),
            ("probe", "tools/probe.wasm")
        ])
    );
    install(
        w,
        name,
        &extra,
        &[
            ("tools/get.wasm", "tool-http-get"),
            ("tools/probe.wasm", "test-probe"),
        ],
        calls,
    );
}

#[test]
fn an_allowed_host_is_reached_and_another_is_refused_before_a_connection_opens() {
    let (allowed, other) = (
        Web::start("hello from the web"),
        Web::start("must not be seen"),
    );
    let w = World::new();
    net_capsule(
        &w,
        "net",
        &[format!("127.0.0.1:{}", allowed.addr.port())],
        &[
            call(
                "ok",
                "http-get",
                json!({"url": format!("http://{}/page", allowed.addr)}),
            ),
            call(
                "port",
                "http-get",
                json!({"url": format!("http://{}/page", other.addr)}),
            ),
            call("name", "http-get", json!({"url": "http://example.com/"})),
            // A body bigger than the host's write buffer (two chunks): the refusal
            // closes it mid-write, and the guest still gets the refusal's code.
            call(
                "body",
                "probe",
                json!({"op": "request", "scheme": "http",
                "authority": other.addr.to_string(), "path": "/", "body": "x".repeat(64 * 1024)}),
            ),
            call(
                "scheme",
                "http-get",
                json!({"url": format!("ftp://{}/", allowed.addr)}),
            ),
        ],
    );
    let r = results(&ran(&w, &w.run_task("net", "Fetch.")));
    assert_eq!(r["ok"], (false, "hello from the web".to_string()));
    for denied in ["port", "name", "body"] {
        let (err, text) = &r[denied];
        assert!(
            *err && text.contains("HttpRequestDenied"),
            "{denied}: {text}"
        );
    }
    assert!(r["scheme"].0, "{:?}", r["scheme"]);
    assert_eq!(other.connections(), 0, "the other host was reached");
    let heads = allowed.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(heads[0].starts_with("GET /page HTTP/1.1"), "{heads:?}");
}

#[test]
fn a_host_header_naming_another_host_never_reaches_it() {
    // Spin's CVE-2024-32980: a request whose Host header (or missing authority) names
    // a host the allow list does not reach.
    let (allowed, other) = (Web::start("allowed"), Web::start("other"));
    let w = World::new();
    let other_host = other.addr.to_string();
    net_capsule(
        &w,
        "spoof",
        &[format!("127.0.0.1:{}", allowed.addr.port())],
        &[
            call(
                "spoofed",
                "probe",
                json!({"op": "request", "scheme": "http",
                "authority": allowed.addr.to_string(), "path": "/", "host": other_host}),
            ),
            call(
                "no-authority",
                "probe",
                json!({"op": "request", "scheme": "http",
                "path": "/", "host": other_host}),
            ),
        ],
    );
    let r = results(&ran(&w, &w.run_task("spoof", "Spoof.")));
    assert!(
        r["spoofed"].0,
        "a guest may not set Host: {:?}",
        r["spoofed"]
    );
    assert!(r["no-authority"].0, "{:?}", r["no-authority"]);
    assert_eq!(other.connections(), 0, "the Host header's host was reached");
    // Whatever reached the allowed host names it, not the other.
    for head in allowed.heads() {
        assert!(!head.contains(&other_host), "{head}");
    }
}

#[test]
fn a_raw_socket_is_refused_even_to_an_allowed_host() {
    let web = Web::start("x");
    let w = World::new();
    net_capsule(
        &w,
        "sock",
        &["localhost".to_string()],
        &[call(
            "sock",
            "probe",
            json!({"op": "socket", "addr": web.addr.to_string()}),
        )],
    );
    let r = results(&ran(&w, &w.run_task("sock", "Connect.")));
    let (err, text) = &r["sock"];
    assert!(*err && text.starts_with("socket refused"), "{text}");
    assert_eq!(web.connections(), 0);
}

#[test]
fn an_https_request_goes_out_through_the_one_tls_provider() {
    // wasmtime-wasi-http makes its TLS config from rustls's process-wide provider.
    // While mur linked two providers (aws-lc and ring), no default could be chosen
    // and every https request panicked; now it gets to the handshake, and a server
    // whose certificate no public root signed is refused there.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ca = crate::models::ca("a private CA");
    let server = rt.block_on(crate::models::Server::start(
        vec![crate::models::ok(json!({}))],
        Some(crate::models::server_tls(&ca, &["127.0.0.1"])),
    ));
    let url = format!("{}/models", server.base);
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    let w = World::new();
    net_capsule(
        &w,
        "tls",
        &[format!("127.0.0.1:{port}")],
        &[call("tls", "http-get", json!({"url": url}))],
    );
    let r = results(&ran(&w, &w.run_task("tls", "Fetch.")));
    let (err, text) = &r["tls"];
    assert!(*err && text.contains("TlsProtocolError"), "{text}");
}
