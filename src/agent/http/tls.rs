//! The http transport's client: rustls with the public roots (webpki-roots), plus
//! the CA certificates of `SSL_CERT_FILE` and `agent.ca_file`; and the naming of a
//! failed request from its error's source chain, so a refused certificate never reads
//! like a refused connection.

use std::error::Error as _;
use std::path::Path;
use std::time::Duration;

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use crate::catalogue::E_AGT_003;
use crate::diag::Diagnostic;

/// The environment variable naming a PEM file of extra CA certificates, as OpenSSL
/// and most HTTP clients read it.
pub const SSL_CERT_FILE: &str = "SSL_CERT_FILE";

/// How long a connection (TCP and the TLS handshake) may take, within `agent.timeout`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A client trusting the public roots, `SSL_CERT_FILE`'s certificates and `ca_file`'s.
pub(super) fn client(
    ca_file: Option<&Path>,
    timeout: Duration,
) -> Result<reqwest::Client, Diagnostic> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(file) = std::env::var_os(SSL_CERT_FILE).filter(|f| !f.is_empty()) {
        add_pem(&mut roots, Path::new(&file), SSL_CERT_FILE)?;
    }
    if let Some(file) = ca_file {
        add_pem(&mut roots, file, "agent.ca_file")?;
    }
    let mut tls = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Diagnostic::new(E_AGT_003, format!("cannot set up TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // reqwest is built for HTTP/1.1 only.
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(CONNECT_TIMEOUT.min(timeout))
        .build()
        .map_err(|e| Diagnostic::new(E_AGT_003, format!("cannot make an HTTP client: {e}")))
}

/// Adds every certificate of the PEM file at `path`; `what` names its setting.
fn add_pem(roots: &mut rustls::RootCertStore, path: &Path, what: &str) -> Result<(), Diagnostic> {
    let unusable = |why: String| {
        Diagnostic::new(
            E_AGT_003,
            format!("{what} names {}, which {why}", path.display()),
        )
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| unusable(format!("cannot be read: {e}")))?
        .collect::<Result<_, _>>()
        .map_err(|e| unusable(format!("is not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(unusable("holds no certificate".into()));
    }
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| unusable(format!("holds a certificate rustls refuses: {e}")))?;
    }
    Ok(())
}

/// What went wrong with a request, for the turn's error and the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Fault {
    /// The server's certificate was refused.
    Certificate(String),
    /// Nothing listens there, or the name does not resolve.
    Unreachable(String),
    /// The connection dropped or was reset: worth another try.
    Dropped(String),
    /// Anything else.
    Other(String),
}

impl Fault {
    /// Whether another try may go better.
    pub(super) fn is_retryable(&self) -> bool {
        matches!(self, Fault::Dropped(_))
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Certificate(why) => write!(
                f,
                "certificate error: the server's TLS certificate was refused ({why}); a \
                 private CA goes in agent.ca_file or SSL_CERT_FILE"
            ),
            Fault::Unreachable(why) => write!(f, "cannot connect: {why}"),
            Fault::Dropped(why) => write!(f, "the connection dropped: {why}"),
            Fault::Other(why) => f.write_str(why),
        }
    }
}

/// Names a failed request by what its source chain holds: a rustls certificate
/// error, a refused connection, a reset one. An `io::Error` may wrap another (hyper's
/// connector wraps the TLS stream's), so each is unwrapped to the bottom.
pub(super) fn fault(e: &reqwest::Error) -> Fault {
    let mut source: Option<&(dyn std::error::Error + 'static)> = e.source();
    let mut text = e.to_string();
    let mut kinds = Vec::new();
    while let Some(s) = source {
        text = s.to_string();
        let mut layer: &(dyn std::error::Error + 'static) = s;
        loop {
            if let Some(tls) = layer.downcast_ref::<rustls::Error>() {
                return match tls {
                    rustls::Error::InvalidCertificate(_)
                    | rustls::Error::NoCertificatesPresented => Fault::Certificate(tls.to_string()),
                    other => Fault::Other(format!("TLS error: {other}")),
                };
            }
            if let Some(h) = layer.downcast_ref::<hyper::Error>()
                && (h.is_incomplete_message() || h.is_closed() || h.is_canceled())
            {
                return Fault::Dropped(h.to_string());
            }
            let Some(io) = layer.downcast_ref::<std::io::Error>() else {
                break;
            };
            kinds.push((io.kind(), io.to_string()));
            match io.get_ref() {
                Some(inner) => layer = inner,
                None => break,
            }
        }
        source = s.source();
    }
    use std::io::ErrorKind::*;
    for (kind, why) in kinds {
        match kind {
            ConnectionRefused | HostUnreachable | NetworkUnreachable | AddrNotAvailable => {
                return Fault::Unreachable(why);
            }
            ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                return Fault::Dropped(why);
            }
            _ => {}
        }
    }
    if e.is_connect() {
        Fault::Unreachable(text)
    } else {
        Fault::Other(text)
    }
}
