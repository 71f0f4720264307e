//! Fetches a path over HTTPS/1.0, trusting one CA, with or without a bearer token.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// `GET path` from `addr` over TLS (the server named `localhost`, its certificate signed by
/// `ca_pem`), with `Authorization: Bearer token` when a token is given.
pub(super) async fn get(
    addr: SocketAddr,
    path: &str,
    ca_pem: &str,
    token: Option<&str>,
) -> anyhow::Result<http::Response<String>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca_pem.as_bytes())?)?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let authorization = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n{authorization}\r\n");
    let exchange = async {
        let tcp = TcpStream::connect(addr).await?;
        let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("localhost")?, tcp)
            .await?;
        tls.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        tls.read_to_end(&mut answer).await?;
        anyhow::Ok(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), exchange).await??;
    parse(&String::from_utf8_lossy(&answer))
}

/// An HTTP/1.x answer: status line, headers, then the body.
fn parse(text: &str) -> anyhow::Result<http::Response<String>> {
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("no end of headers in {text:?}"))?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .ok_or_else(|| anyhow::anyhow!("no status line in {text:?}"))?;
    let mut response = http::Response::builder().status(status.parse::<u16>()?);
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            response = response.header(name.trim(), value.trim());
        }
    }
    Ok(response.body(body.to_owned())?)
}
