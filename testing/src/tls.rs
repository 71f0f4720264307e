//! Asks an HTTPS server which certificate it presents to a new TLS handshake.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;

use super::{Error, Result, io_error};

/// Whether a new TLS handshake with `addr` (for `host`, trusting `ca_pem`) presents
/// `certificate_pem` as the server's certificate: how a test sees a rotation take effect.
///
/// # Errors
/// [`Error::Io`] when the PEM does not parse, nothing listens, or the handshake fails (e.g. the
/// server's certificate is not signed by `ca_pem`).
pub async fn presents(
    addr: SocketAddr,
    host: &str,
    ca_pem: &str,
    certificate_pem: &str,
) -> Result<bool> {
    let invalid = |what: &str| {
        let what = what.to_owned();
        move |e: rustls::pki_types::pem::Error| Error::Io {
            action: format!("reading {what}"),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
        }
    };
    let expected = CertificateDer::from_pem_slice(certificate_pem.as_bytes())
        .map_err(invalid("the expected certificate"))?;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).map_err(invalid("the CA"))?)
        .map_err(|e| Error::Io {
            action: "trusting the CA".into(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
        })?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| Error::Io {
        action: "configuring TLS".into(),
        source: std::io::Error::other(e),
    })?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from(host.to_owned()).map_err(|e| Error::Io {
        action: format!("naming {host}"),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()),
    })?;
    let action = format!("a TLS handshake with {addr}");
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(io_error(action.clone()))?;
    let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(io_error(action))?;
    let presented = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first());
    Ok(presented == Some(&expected))
}
