//! Serves `/healthz`, `/readyz` and `/metrics` over plain HTTP/1, or `/metrics` behind a
//! [`Guard`] (see `metrics::auth`).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use prometheus::{Encoder, Registry, TextEncoder};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::error::chain;
#[cfg(feature = "tls")]
use crate::metrics::auth::{Decision, Guard};

/// A named probe: `Ok` when healthy (or ready), `Err(reason)` otherwise.
pub type Check = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The health and readiness checks, and whether shutdown has begun.
#[derive(Default)]
pub(crate) struct Probes {
    health: Mutex<Vec<(String, Check)>>,
    ready: Mutex<Vec<(String, Check)>>,
    shutting_down: AtomicBool,
}

impl std::fmt::Debug for Probes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probes")
            .field(
                "health",
                &self
                    .health
                    .lock()
                    .iter()
                    .map(|(n, _)| n.clone())
                    .collect::<Vec<_>>(),
            )
            .field(
                "ready",
                &self
                    .ready
                    .lock()
                    .iter()
                    .map(|(n, _)| n.clone())
                    .collect::<Vec<_>>(),
            )
            .field("shutting_down", &self.shutting_down)
            .finish()
    }
}

impl Probes {
    pub(crate) fn add_health(&self, name: String, check: Check) {
        self.health.lock().push((name, check));
    }

    pub(crate) fn add_ready(&self, name: String, check: Check) {
        self.ready.lock().push((name, check));
    }

    pub(crate) fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    fn healthz(&self) -> (StatusCode, String) {
        report(&self.health.lock(), None)
    }

    fn readyz(&self) -> (StatusCode, String) {
        let shutting_down = self
            .shutting_down
            .load(Ordering::SeqCst)
            .then_some("shutting down");
        report(&self.ready.lock(), shutting_down)
    }
}

/// 200 `ok` when every check passes; 503 listing each failing check otherwise.
fn report(checks: &[(String, Check)], extra_failure: Option<&str>) -> (StatusCode, String) {
    let mut failures: Vec<String> = checks
        .iter()
        .filter_map(|(name, check)| check().err().map(|why| format!("[-] {name}: {why}")))
        .collect();
    failures.extend(extra_failure.map(|why| format!("[-] {why}")));
    if failures.is_empty() {
        (StatusCode::OK, "ok".into())
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, failures.join("\n") + "\n")
    }
}

/// What one listener answers.
#[derive(Clone, Debug)]
pub(crate) struct Endpoints {
    pub(crate) probes: Option<Arc<Probes>>,
    pub(crate) metrics: Option<Registry>,
    /// Who may read `/metrics`; anyone when `None`.
    #[cfg(feature = "tls")]
    pub(crate) guard: Option<Guard>,
}

impl Endpoints {
    /// The probes and metrics a listener answers, to anyone.
    pub(crate) fn new(probes: Option<Arc<Probes>>, metrics: Option<Registry>) -> Self {
        Self {
            probes,
            metrics,
            #[cfg(feature = "tls")]
            guard: None,
        }
    }

    /// Whether a guard checks who reads `/metrics` (then served over HTTPS).
    #[cfg_attr(not(feature = "tls"), allow(clippy::unused_self))]
    pub(crate) fn is_guarded(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.guard.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The answer to `request`, after the guard (if any) let it through.
    #[cfg_attr(not(feature = "tls"), allow(clippy::unused_async))]
    pub(crate) async fn answer<B>(&self, request: &Request<B>) -> Response<Full<Bytes>> {
        let path = request.uri().path();
        #[cfg(feature = "tls")]
        if let Some(guard) = self.guard.as_ref().filter(|g| g.path() == path) {
            let decision = guard.check(request.headers()).await;
            if decision != Decision::Allowed {
                return refusal(&decision, path);
            }
        }
        self.respond(path)
    }

    fn respond(&self, path: &str) -> Response<Full<Bytes>> {
        let (status, content_type, body) = match (path, &self.probes, &self.metrics) {
            ("/healthz" | "/livez", Some(probes), _) => text(probes.healthz()),
            ("/readyz", Some(probes), _) => text(probes.readyz()),
            ("/metrics", _, Some(registry)) => metrics(registry),
            _ => (StatusCode::NOT_FOUND, "text/plain", b"not found\n".to_vec()),
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(content_type),
        );
        response
    }
}

/// The answer to a request the guard refused; a 401 says which scheme to use.
#[cfg(feature = "tls")]
fn refusal(decision: &Decision, path: &str) -> Response<Full<Bytes>> {
    let (status, content_type, body) = text((decision.status(), decision.message(path)));
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    if status == StatusCode::UNAUTHORIZED {
        headers.insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
    }
    response
}

fn text((status, body): (StatusCode, String)) -> (StatusCode, &'static str, Vec<u8>) {
    (status, "text/plain; charset=utf-8", body.into_bytes())
}

fn metrics(registry: &Registry) -> (StatusCode, &'static str, Vec<u8>) {
    let mut body = Vec::new();
    match TextEncoder::new().encode(&registry.gather(), &mut body) {
        Ok(()) => (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            body,
        ),
        Err(e) => text((
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding metrics: {e}\n"),
        )),
    }
}

/// Answers requests on `listener` until `stop` is cancelled; open connections end with it.
pub(crate) async fn serve(listener: TcpListener, endpoints: Endpoints, stop: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %chain(&e), "accepting an HTTP connection failed");
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        while connections.try_join_next().is_some() {}
        let endpoints = endpoints.clone();
        connections.spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let endpoints = endpoints.clone();
                async move { Ok::<_, Infallible>(endpoints.answer(&request).await) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %chain(&e), "HTTP connection ended with an error");
            }
        });
    }
    connections.abort_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(why: &'static str) -> Check {
        Arc::new(move || Err(why.to_owned()))
    }

    #[test]
    fn readyz_names_every_failing_check_and_shutdown() {
        let probes = Probes::default();
        probes.add_ready("informers".into(), failing("ConfigMap cache not synced"));
        probes.add_ready("fine".into(), Arc::new(|| Ok(())));
        probes.begin_shutdown();
        let (status, body) = probes.readyz();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            "[-] informers: ConfigMap cache not synced\n[-] shutting down\n"
        );
    }

    #[test]
    fn healthz_is_ok_when_every_check_passes() {
        let probes = Probes::default();
        probes.add_health("ping".into(), Arc::new(|| Ok(())));
        assert_eq!(probes.healthz(), (StatusCode::OK, "ok".to_owned()));
    }

    #[test]
    fn an_endpoint_that_is_not_served_here_is_not_found() {
        let endpoints = Endpoints::new(None, Some(Registry::new()));
        assert_eq!(endpoints.respond("/readyz").status(), StatusCode::NOT_FOUND);
        assert_eq!(endpoints.respond("/metrics").status(), StatusCode::OK);
    }
}
