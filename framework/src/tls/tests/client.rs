//! A TLS client for the tests of HTTPS servers: trusts one CA, speaks HTTP/1.1 or HTTP/2.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// A connector trusting `ca_pem`, offering `alpn` (e.g. `[b"h2"]`), sending SNI or not.
pub(crate) fn connector(ca_pem: &str, alpn: &[&[u8]], sni: bool) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(certificate.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(
        rustls::crypto::ring::default_provider().into(),
    )
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config.enable_sni = sni;
    TlsConnector::from(Arc::new(config))
}

/// A TLS connection to `addr` for `host` (a DNS name or an IP address).
pub(crate) async fn connect(
    connector: &TlsConnector,
    addr: SocketAddr,
    host: &str,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from(host.to_owned()).map_err(std::io::Error::other)?;
    connector.connect(name, tcp).await
}

/// The leaf certificate the server presented, DER.
pub(crate) fn presented(stream: &TlsStream<TcpStream>) -> Vec<u8> {
    stream.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

/// The DER of the first certificate in `pem`.
pub(crate) fn der(pem: &str) -> Vec<u8> {
    CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

/// A request sender over an open TLS connection, in the protocol ALPN chose.
pub(crate) enum Sender {
    /// HTTP/1.1.
    Http1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    /// HTTP/2.
    Http2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    /// Starts HTTP on `stream` (HTTP/2 when ALPN chose `h2`).
    pub(crate) async fn start(stream: TlsStream<TcpStream>) -> hyper::Result<Self> {
        let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
        let io = TokioIo::new(stream);
        if h2 {
            let (sender, connection) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await?;
            tokio::spawn(connection);
            Ok(Self::Http2(sender))
        } else {
            let (sender, connection) = hyper::client::conn::http1::handshake(io).await?;
            tokio::spawn(connection);
            Ok(Self::Http1(sender))
        }
    }

    /// Sends `request` and reads the whole answer.
    pub(crate) async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> hyper::Result<Response<Bytes>> {
        let response = match self {
            Self::Http1(sender) => {
                sender.ready().await?;
                sender.send_request(request).await?
            }
            Self::Http2(sender) => {
                sender.ready().await?;
                sender.send_request(request).await?
            }
        };
        let (parts, body) = response.into_parts();
        Ok(Response::from_parts(
            parts,
            body.collect().await?.to_bytes(),
        ))
    }
}
