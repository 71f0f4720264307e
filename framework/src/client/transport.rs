//! Builds the manager's connection to the API server: kube's stack, over HTTP/2 with health checks.
//!
//! A connection can die without a word (a proxy, NAT or load balancer drops it and tells neither
//! end); a watch on it then waits for events that never come. Over HTTP/2, a connection that
//! has read nothing for the read-idle timeout is pinged, and closed when no answer comes within
//! the ping timeout, failing its watches and requests, which then reconnect: client-go's
//! health checks (30 s and 15 s). kube's own builder speaks HTTP/1.1 only and cannot turn
//! pings on, so this builds the same stack with them.

use std::time::Duration;

use http::{Request, Response};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::{Body, ClientBuilder, ConfigExt as _, DynBody};
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder, ServiceExt as _};

use super::request_span::RequestSpanLayer;

/// How the manager's client notices a connection that died without a word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HealthChecks {
    /// How long a connection may read nothing before it is pinged; zero turns pings off.
    pub(crate) read_idle_timeout: Duration,
    /// How long a ping may go unanswered before the connection is closed.
    pub(crate) ping_timeout: Duration,
}

impl Default for HealthChecks {
    /// client-go's: a ping after 30 s without a frame, closed after 15 s without an answer.
    fn default() -> Self {
        Self {
            read_idle_timeout: Duration::from_secs(30),
            ping_timeout: Duration::from_secs(15),
        }
    }
}

/// TCP keepalive probes start after this long without traffic, one every [`KEEPALIVE`].
const KEEPALIVE: Duration = Duration::from_secs(15);
/// Sent data unacknowledged this long closes the connection (`TCP_USER_TIMEOUT`): a request
/// written into a path that went dead fails instead of waiting for the kernel's 15 minutes.
const UNACKNOWLEDGED: Duration = Duration::from_secs(30);

/// The service kube's builder makes, which kube does not name publicly.
pub(crate) type Service = BoxService<Request<Body>, Response<Box<DynBody>>, BoxError>;

/// kube's client stack for `config` (TLS, authentication, headers, retries of 429/503/504,
/// timeouts) speaking HTTP/2 where the server offers it, with `checks`; kube's own stack
/// (HTTP/1.1, no pings) for a `config` with a proxy or an exec credential plugin, which only
/// kube's builder supports fully.
///
/// Like kube's builder, it makes a `debug` span and line per request ([`RequestSpanLayer`]);
/// unlike it, it does not compress (this workspace builds kube without gzip).
///
/// # Errors
/// What kube's builder reports for `config`: a TLS setting that does not load, say.
pub(crate) fn builder(
    config: kube::Config,
    checks: HealthChecks,
) -> kube::Result<ClientBuilder<Service>> {
    if config.proxy_url.is_some() || config.auth_info.exec.is_some() {
        return ClientBuilder::try_from(config);
    }
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(config.connect_timeout);
    tcp.set_keepalive(Some(KEEPALIVE));
    tcp.set_keepalive_interval(Some(KEEPALIVE));
    tcp.set_tcp_user_timeout(Some(UNACKNOWLEDGED));
    let tls = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config()?)
        .https_or_http();
    let tls = match &config.tls_server_name {
        Some(name) => {
            let name = name
                .clone()
                .try_into()
                .map_err(kube::client::RustlsTlsError::InvalidServerName)
                .map_err(kube::Error::RustlsTls)?;
            tls.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
        None => tls,
    };
    let tls = tls.enable_all_versions().wrap_connector(tcp);
    let mut connector = hyper_timeout::TimeoutConnector::new(tls);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);

    let mut http = hyper_util::client::legacy::Builder::new(TokioExecutor::new());
    http.timer(TokioTimer::new()).pool_timer(TokioTimer::new());
    if !checks.read_idle_timeout.is_zero() {
        http.http2_keep_alive_interval(checks.read_idle_timeout)
            .http2_keep_alive_timeout(checks.ping_timeout)
            .http2_keep_alive_while_idle(true);
    }
    let http: hyper_util::client::legacy::Client<_, Body> = http.build(connector);

    let retry = config
        .default_retry
        .then(|| tower::retry::RetryLayer::new(kube::client::retry::RetryPolicy::server_retry()));
    let service = ServiceBuilder::new()
        .layer(RequestSpanLayer)
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(http)
        .map_response(|response: Response<hyper::body::Incoming>| {
            response.map(|body| {
                Box::new(http_body_util::BodyExt::map_err(body, BoxError::from)) as Box<DynBody>
            })
        })
        .boxed();
    Ok(ClientBuilder::new(
        service,
        config.default_namespace.clone(),
    ))
}
