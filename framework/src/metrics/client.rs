//! Counts and times the requests of a kube client, as client-go's `rest_client_*` families.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::FutureExt as _;
use http::{Request, Response};
use prometheus::{HistogramVec, IntCounterVec};

/// Buckets of `rest_client_request_duration_seconds`, as client-go defines them.
pub const REST_CLIENT_DURATION_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

/// A [`tower_layer::Layer`] for [`kube::client::ClientBuilder::with_layer`] that records every
/// request in `rest_client_requests_total{code,method,host}` and
/// `rest_client_request_duration_seconds{verb,host}`; from [`Metrics::client_layer`](super::Metrics::client_layer).
///
/// A watch counts once, timed until its response headers arrived (as client-go does).
#[derive(Clone, Debug)]
pub(crate) struct ClientMetricsLayer {
    requests: IntCounterVec,
    duration: HistogramVec,
    host: String,
}

impl ClientMetricsLayer {
    pub(super) fn new(requests: IntCounterVec, duration: HistogramVec, host: String) -> Self {
        Self {
            requests,
            duration,
            host,
        }
    }
}

impl<S> tower_layer::Layer<S> for ClientMetricsLayer {
    type Service = ClientMetricsService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ClientMetricsService {
            inner,
            metrics: self.clone(),
        }
    }
}

/// The service [`ClientMetricsLayer`] wraps around a client's stack.
#[derive(Clone, Debug)]
pub(crate) struct ClientMetricsService<S> {
    inner: S,
    metrics: ClientMetricsLayer,
}

impl<S, B, R> tower_service::Service<Request<B>> for ClientMetricsService<S>
where
    S: tower_service::Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let method = request.method().as_str().to_owned();
        // Outside kube's base-URI layer the URI is a path; the layer knows the server.
        let host = request
            .uri()
            .authority()
            .map_or_else(|| self.metrics.host.clone(), ToString::to_string);
        let metrics = self.metrics.clone();
        let started = tokio::time::Instant::now();
        self.inner
            .call(request)
            .map(move |outcome| {
                let code = match &outcome {
                    Ok(response) => response.status().as_u16().to_string(),
                    Err(_) => "<error>".to_owned(),
                };
                metrics
                    .requests
                    .with_label_values(&[code.as_str(), &method, &host])
                    .inc();
                metrics
                    .duration
                    .with_label_values(&[&method, &host])
                    .observe(started.elapsed().as_secs_f64());
                outcome
            })
            .boxed()
    }
}
