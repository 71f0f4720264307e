//! Gives every request of the manager's client a span and a debug line, as kube's own builder does.
//!
//! The manager builds its HTTP/2 stack itself (see `transport`), which leaves out the trace layer
//! kube's builder adds. This puts an equivalent back: a `debug` span named `HTTP` per request,
//! with the method, the path and query, and the status and latency once the response's headers
//! arrived, and one `debug` line when it finishes. Both use the target `kube_client::request`, so
//! `RUST_LOG=kube_client=debug` shows the manager's requests as it shows a kube client's. The span
//! is a child of the span current where the request was made (a reconcile's, say).
//!
//! Off (the default filter), a request costs one disabled-callsite check.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::FutureExt as _;
use http::{Request, Response};
use tracing::Instrument as _;

/// The target of the spans and lines, under kube's so that one filter shows both.
const TARGET: &str = "kube_client::request";

/// A [`tower_layer::Layer`] that spans and logs every request of a client.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RequestSpanLayer;

impl<S> tower_layer::Layer<S> for RequestSpanLayer {
    type Service = RequestSpan<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestSpan { inner }
    }
}

/// The service [`RequestSpanLayer`] wraps around a client's stack.
#[derive(Clone, Debug)]
pub(crate) struct RequestSpan<S> {
    inner: S,
}

impl<S, B, R> tower_service::Service<Request<B>> for RequestSpan<S>
where
    S: tower_service::Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if !tracing::enabled!(target: TARGET, tracing::Level::DEBUG) {
            return self.inner.call(request).boxed();
        }
        let method = request.method().clone();
        let path = request
            .uri()
            .path_and_query()
            .map_or_else(|| request.uri().path().to_owned(), ToString::to_string);
        let span = tracing::debug_span!(
            target: TARGET,
            "HTTP",
            http.method = %method,
            http.url = %path,
            http.status_code = tracing::field::Empty,
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
        );
        let started = tokio::time::Instant::now();
        let finished = span.clone();
        self.inner
            .call(request)
            .map(move |outcome| {
                let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
                match &outcome {
                    Ok(response) => {
                        let status = response.status();
                        finished.record("http.status_code", status.as_u16());
                        if status.is_client_error() || status.is_server_error() {
                            finished.record("otel.status_code", "ERROR");
                        }
                        tracing::debug!(
                            target: TARGET,
                            parent: &finished,
                            status = status.as_u16(),
                            latency_ms,
                            "{method} {path} {status}"
                        );
                    }
                    Err(error) => {
                        finished.record("otel.status_code", "ERROR");
                        tracing::debug!(
                            target: TARGET,
                            parent: &finished,
                            latency_ms,
                            %error,
                            "{method} {path} failed"
                        );
                    }
                }
                outcome
            })
            .instrument(span)
            .boxed()
    }
}
