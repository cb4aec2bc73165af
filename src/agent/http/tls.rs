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
                "certificate error: the server's TLS certificate was refused: {why}"
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
                    rustls::Error::InvalidCertificate(why) => Fault::Certificate(in_words(why)),
                    rustls::Error::NoCertificatesPresented => {
                        Fault::Certificate("the server presented no certificate".into())
                    }
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

/// The command that makes a self-signed certificate a TLS client accepts for
/// localhost: `openssl req -x509`'s usual line, plus what a server's own certificate
/// must hold (a subjectAltName for the host; not a CA).
pub(super) const SELF_SIGNED: &str = "openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost \
     -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -addext basicConstraints=critical,CA:FALSE \
     -keyout key.pem -out cert.pem -days 365";

/// A refused certificate's problem in words, with what fixes it (never a Rust debug
/// string: rustls shows some problems only so).
fn in_words(e: &rustls::CertificateError) -> String {
    use rustls::CertificateError as C;
    let make = format!(
        "a self-signed one made with `{SELF_SIGNED}` serves localhost and 127.0.0.1 once \
         cert.pem is named in agent.ca_file"
    );
    match e {
        C::UnknownIssuer => format!(
            "it was not issued by a CA mur trusts (a self-signed certificate, or a private \
             CA's). Name that CA's certificate, or the self-signed certificate itself, in \
             agent.ca_file or in the file {SSL_CERT_FILE} names"
        ),
        C::NotValidForNameContext {
            expected,
            presented,
        } => {
            let host = expected.to_str();
            match presented.as_slice() {
                [] => format!(
                    "it names no host: it has no subjectAltName, and a TLS client reads no other \
                     field (the CN is not read). Make it with a subjectAltName for {host}; {make}"
                ),
                names => format!(
                    "it is for {}, not for {host}: its subjectAltName must name {host}; {make}",
                    names.iter().map(|n| san(n)).collect::<Vec<_>>().join(", ")
                ),
            }
        }
        C::NotValidForName => format!("it is not for this host; {make}"),
        C::Other(other) => match other.0.downcast_ref::<webpki::Error>() {
            Some(webpki::Error::CaUsedAsEndEntity) => format!(
                "it is a CA certificate (basicConstraints CA:TRUE, what `openssl req -x509` \
                 makes by default), and a server may not present a CA certificate as its own. \
                 Make the server's certificate with CA:FALSE and a subjectAltName for the \
                 host; {make}"
            ),
            Some(webpki::Error::UnsupportedCriticalExtension) => {
                "it has a critical extension mur does not know".into()
            }
            _ => e.to_string(),
        },
        C::Expired | C::ExpiredContext { .. } => {
            format!("it has expired ({e}); the server needs a new one")
        }
        C::NotValidYet | C::NotValidYetContext { .. } => {
            format!("it is not valid yet ({e}); check this machine's clock")
        }
        C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
            format!("it is not for a TLS server: its extendedKeyUsage lacks serverAuth ({e})")
        }
        C::BadSignature => "its signature does not verify with its issuer's key".into(),
        C::BadEncoding => "it is not a well-formed certificate".into(),
        C::Revoked => "it has been revoked".into(),
        C::UnhandledCriticalExtension => "it has a critical extension mur does not know".into(),
        other => other.to_string(),
    }
}

/// A subjectAltName entry as the verifier shows it (`DnsName("example.com")`,
/// `IpAddress(10.0.0.1)`), as a person writes it.
fn san(shown: &str) -> String {
    let inner = |prefix: &str| {
        shown
            .strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(')'))
            .map(|r| r.trim_matches('"').to_string())
    };
    inner("DnsName(")
        .or_else(|| inner("IpAddress("))
        .or_else(|| inner("UniformResourceIdentifier(").map(|u| format!("the URI {u}")))
        .unwrap_or_else(|| shown.to_string())
}
