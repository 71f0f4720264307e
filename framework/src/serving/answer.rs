//! Answers `/healthz`, `/readyz` and `/metrics` over plain HTTP/1, or `/metrics` behind a
//! [`Guard`] (see `metrics::auth`).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use prometheus::{Encoder, Registry, TextEncoder};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::controller::Reconciles;
use crate::error::chain;
use crate::manager::Probes;
#[cfg(feature = "tls")]
use crate::metrics::auth::{Decision, Guard};

/// What one listener answers.
#[derive(Clone, Debug)]
pub(super) struct Answers {
    pub(super) probes: Option<Arc<Probes>>,
    pub(super) metrics: Option<Registry>,
    /// The flight recorders served at `/debug/reconciles/` next to `/metrics`.
    pub(super) reconciles: Option<Reconciles>,
    /// Who may read `/metrics`; anyone when `None`.
    #[cfg(feature = "tls")]
    pub(super) guard: Option<Guard>,
}

impl Answers {
    /// The probes and metrics a listener answers, to anyone.
    pub(super) fn new(probes: Option<Arc<Probes>>, metrics: Option<Registry>) -> Self {
        Self {
            probes,
            metrics,
            reconciles: None,
            #[cfg(feature = "tls")]
            guard: None,
        }
    }

    /// Whether a guard checks who reads `/metrics` (then served over HTTPS).
    #[cfg_attr(not(feature = "tls"), allow(clippy::unused_self))]
    pub(super) fn is_guarded(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.guard.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The answer to `request`, after the guard (if any) let it through.
    #[cfg_attr(not(feature = "tls"), allow(clippy::unused_async))]
    pub(super) async fn answer<B>(&self, request: &Request<B>) -> Response<Full<Bytes>> {
        let path = request.uri().path();
        #[cfg(feature = "tls")]
        if let Some(guard) = (self.guard.as_ref())
            .filter(|g| g.path() == path || path.starts_with(super::reconciles::PATH))
        {
            let decision = guard.check(request.headers()).await;
            if decision != Decision::Allowed {
                return refusal(&decision, path);
            }
        }
        self.respond(path, request.uri().query())
    }

    fn respond(&self, path: &str, query: Option<&str>) -> Response<Full<Bytes>> {
        let debug = path.strip_prefix(super::reconciles::PATH);
        let (status, content_type, body) = match (path, &self.probes, &self.metrics) {
            ("/healthz" | "/livez", Some(probes), _) => text(probes.healthz()),
            ("/readyz", Some(probes), _) => text(probes.readyz()),
            ("/metrics", _, Some(registry)) => metrics(registry),
            _ => match (debug, &self.reconciles) {
                (Some(object), Some(reconciles)) => {
                    super::reconciles::answer(reconciles, object, query)
                }
                _ => (StatusCode::NOT_FOUND, "text/plain", b"not found\n".to_vec()),
            },
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
pub(super) async fn serve(listener: TcpListener, answers: Answers, stop: CancellationToken) {
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
        let answers = answers.clone();
        connections.spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let answers = answers.clone();
                async move { Ok::<_, Infallible>(answers.answer(&request).await) }
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

    #[test]
    fn an_endpoint_that_is_not_served_here_is_not_found() {
        let answers = Answers::new(None, Some(Registry::new()));
        assert_eq!(
            answers.respond("/readyz", None).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(answers.respond("/metrics", None).status(), StatusCode::OK);
    }
}
