//! Accepts TLS connections on a listener and serves a hyper service on each, HTTP/1.1 (or HTTP/2).

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::idle::{Activity, Tracked};
use super::{Closed, Closes, Limits, Lingering};
use crate::error::chain;

/// How long open connections may take to finish their requests once `stop` is cancelled.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Serves `service` over TLS on `listener` until `stop` is cancelled, then stops accepting and
/// lets open connections finish their requests (up to ten seconds) before returning.
///
/// Each connection is handshaken with `config` (so a reloaded certificate applies to the next
/// handshake, not to connections already open) and speaks the protocol ALPN chose, HTTP/1.1
/// when the client named none; without `limits.http2`, HTTP/1.1 only (a client that starts
/// HTTP/2 anyway is refused). A failed handshake (a plain-HTTP client, an untrusted
/// certificate) ends only that connection. A client holds the server no longer than `limits`
/// allow: a connection over `max_connections` is closed on accept, one whose handshake, first
/// request or next request is late is closed, and each such close is counted in `closes`. A
/// connection that ends after its last answer lingers (see [`Lingering`]) so that a client
/// still sending reads that answer instead of a reset.
pub(crate) async fn serve<S, B>(
    listener: TcpListener,
    config: Arc<ServerConfig>,
    service: S,
    limits: Limits,
    closes: Closes,
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
    let mut http = auto::Builder::new(TokioExecutor::new());
    if !limits.http2 {
        http = http.http1_only();
    }
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.read_header_timeout);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %chain(&e), "accepting a TLS connection failed");
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        while connections.try_join_next().is_some() {}
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            closes.record(Closed::MaxConnections);
            drop(tcp);
            continue;
        };
        let (acceptor, http, service) = (acceptor.clone(), http.clone(), service.clone());
        let (watcher, closes) = (graceful.watcher(), closes.clone());
        connections.spawn(async move {
            let _slot = slot;
            let handshake = acceptor.accept(tcp);
            let tls = match tokio::time::timeout(limits.handshake_timeout, handshake).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %chain(&e), "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    closes.record(Closed::HandshakeTimeout);
                    return;
                }
            };
            let activity = Activity::new();
            let connection = http
                .serve_connection(
                    TokioIo::new(Lingering::new(tls)),
                    Tracked::new(service, activity.clone()),
                )
                .into_owned();
            tokio::select! {
                ended = watcher.watch(connection) => if let Err(e) = ended {
                    if e.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_timeout) {
                        closes.record(Closed::ReadHeaderTimeout);
                    } else {
                        tracing::debug!(%peer, error = %chain(&*e), "HTTPS connection ended with an error");
                    }
                },
                reason = activity.expired(&limits) => closes.record(reason),
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
