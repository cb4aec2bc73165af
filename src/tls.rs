//! The one TLS crypto provider mur links (docs/distribution.md, "One TLS provider"):
//! a leaf, so that every module that builds an HTTP client (the model transport, the
//! doors' clients, wasi-http) can reach it without depending on another.

use std::sync::Arc;

/// ring, which is also installed as the process default on first use, because
/// reqwest's clients and wasmtime-wasi-http's outgoing requests build their TLS
/// configs from that default.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    // Err only when a default is installed already: ring, the only one linked.
    let _ = rustls::crypto::ring::default_provider().install_default();
    Arc::new(rustls::crypto::ring::default_provider())
}
