//! The clients: TLS connections that send one review after another and time each round trip.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

/// One measurement: `clients` connections to `addr` posting `body` to `path`.
pub(crate) struct Run<'a> {
    pub(crate) addr: SocketAddr,
    pub(crate) path: &'a str,
    pub(crate) clients: usize,
    pub(crate) ca: &'a str,
    pub(crate) body: &'static str,
}

/// The round trips of a run and how long it took.
pub(crate) struct Outcome {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Outcome {
    pub(crate) fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    /// The `p`th percentile latency.
    pub(crate) fn percentile(&self, p: usize) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let index = (self.latencies.len() * p / 100).min(self.latencies.len() - 1);
        self.latencies[index]
    }
}

impl Run<'_> {
    /// Opens the connections, then has each send requests for `duration`.
    pub(crate) async fn measure(&self, duration: Duration) -> anyhow::Result<Outcome> {
        let connector = connector(self.ca)?;
        let mut senders = Vec::new();
        for _ in 0..self.clients {
            let tcp = TcpStream::connect(self.addr).await?;
            tcp.set_nodelay(true)?;
            let tls = connector
                .connect(ServerName::try_from("localhost")?, tcp)
                .await?;
            let (sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
            tokio::spawn(connection);
            senders.push(sender);
        }
        let start = Instant::now();
        let deadline = start + duration;
        let mut tasks = tokio::task::JoinSet::new();
        for mut sender in senders {
            let (path, body) = (
                self.path.to_owned(),
                Bytes::from_static(self.body.as_bytes()),
            );
            tasks.spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let request = Request::post(&path)
                        .header(http::header::HOST, "localhost")
                        .header(http::header::CONTENT_TYPE, "application/json")
                        .body(Full::new(body.clone()))?;
                    let sent = Instant::now();
                    sender.ready().await?;
                    let response = sender.send_request(request).await?;
                    anyhow::ensure!(response.status() == 200, "answered {}", response.status());
                    response.into_body().collect().await?;
                    latencies.push(sent.elapsed());
                }
                anyhow::Ok(latencies)
            });
        }
        let mut latencies = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            latencies.extend(joined??);
        }
        let elapsed = start.elapsed();
        latencies.sort_unstable();
        Ok(Outcome { latencies, elapsed })
    }
}

/// A connector trusting `ca`, offering HTTP/1.1.
fn connector(ca: &str) -> anyhow::Result<TlsConnector> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca.as_bytes())?)?;
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

/// Waits until something accepts connections on `addr` (the manager binds as it starts).
pub(crate) async fn wait_listening(addr: SocketAddr) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).await.is_err() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "nothing listens on {addr} after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}
