//! Accepts TLS connections on a listener and serves a hyper service on each, HTTP/1.1 or HTTP/2.

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// How long a client may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections may take to finish their requests once `stop` is cancelled.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Serves `service` over TLS on `listener` until `stop` is cancelled, then stops accepting and
/// lets open connections finish their requests (up to ten seconds) before returning.
///
/// Each connection is handshaken with `config` (so a reloaded certificate applies to the next
/// handshake, not to connections already open) and speaks the protocol ALPN chose, HTTP/1.1
/// when the client named none. A failed handshake (a plain-HTTP client, an untrusted
/// certificate) ends only that connection.
pub(crate) async fn serve<S, B>(
    listener: TcpListener,
    config: Arc<ServerConfig>,
    service: S,
    stop: CancellationToken,
) where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let acceptor = TlsAcceptor::from(config);
    let http = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a TLS connection failed");
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        while connections.try_join_next().is_some() {}
        let (acceptor, http, service) = (acceptor.clone(), http.clone(), service.clone());
        let watcher = graceful.watcher();
        connections.spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let connection = http
                .serve_connection(TokioIo::new(tls), service)
                .into_owned();
            if let Err(e) = watcher.watch(connection).await {
                tracing::debug!(%peer, error = %e, "HTTPS connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            open = connections.len(),
            "HTTPS connections still open after the drain timeout; closing them"
        );
    }
    connections.abort_all();
}
