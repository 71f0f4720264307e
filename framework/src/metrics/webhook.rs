//! Counts a webhook server's requests in controller-runtime's `controller_runtime_webhook_*`
//! families, and the connections it closes early.

use std::time::Duration;

use http::StatusCode;
use prometheus::{HistogramVec, IntCounterVec, IntGaugeVec};

use super::Metrics;
use crate::tls::Closes;

/// The webhook families; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct WebhookMetrics {
    requests: IntCounterVec,
    latency: HistogramVec,
    in_flight: IntGaugeVec,
    closed: IntCounterVec,
}

impl WebhookMetrics {
    pub(crate) fn new(metrics: &Metrics) -> Self {
        Self {
            requests: metrics.webhook_requests.clone(),
            latency: metrics.webhook_latency.clone(),
            in_flight: metrics.webhook_in_flight.clone(),
            closed: metrics.connections_closed.clone(),
        }
    }

    /// Starts the series of the webhook at `path` at zero (no requests, none in flight), as
    /// controller-runtime does when it registers a webhook.
    pub(crate) fn serve(&self, path: &str) {
        self.in_flight.with_label_values(&[path]).set(0);
        self.latency.with_label_values(&[path]);
    }

    /// Marks one request to `path` in flight until the returned guard drops.
    pub(crate) fn begin(&self, path: &str) -> InFlight {
        let gauge = self.in_flight.with_label_values(&[path]);
        gauge.inc();
        InFlight(gauge)
    }

    /// Counts one answer from `path` with `status`, `elapsed` after its headers arrived.
    pub(crate) fn answered(&self, path: &str, status: StatusCode, elapsed: Duration) {
        self.requests
            .with_label_values(&[path, status.as_str()])
            .inc();
        self.latency
            .with_label_values(&[path])
            .observe(elapsed.as_secs_f64());
    }

    /// The closes of the server `server` (`webhook`, `metrics`).
    pub(crate) fn closes(&self, server: &'static str) -> Closes {
        Closes::new(self.closed.clone(), server)
    }
}

/// A webhook request in flight; dropping it ends it.
#[derive(Debug)]
pub(crate) struct InFlight(prometheus::IntGauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}
