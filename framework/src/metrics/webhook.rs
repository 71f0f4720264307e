//! Counts a webhook server's requests in controller-runtime's `controller_runtime_webhook_*`
//! families, and the connections it closes early.

#[cfg(feature = "webhooks")]
use std::time::Duration;

#[cfg(feature = "webhooks")]
use http::StatusCode;
use prometheus::IntCounterVec;
#[cfg(feature = "webhooks")]
use prometheus::{HistogramVec, IntGaugeVec};

use super::Metrics;
use crate::tls::Closes;

/// The webhook families; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct WebhookMetrics {
    #[cfg(feature = "webhooks")]
    requests: IntCounterVec,
    #[cfg(feature = "webhooks")]
    latency: HistogramVec,
    #[cfg(feature = "webhooks")]
    in_flight: IntGaugeVec,
    closed: IntCounterVec,
}

impl WebhookMetrics {
    pub(crate) fn new(metrics: &Metrics) -> Self {
        Self {
            #[cfg(feature = "webhooks")]
            requests: metrics.webhook_requests.clone(),
            #[cfg(feature = "webhooks")]
            latency: metrics.webhook_latency.clone(),
            #[cfg(feature = "webhooks")]
            in_flight: metrics.webhook_in_flight.clone(),
            closed: metrics.connections_closed.clone(),
        }
    }

    /// Starts the series of the webhook at `path` at zero (no requests, none in flight), as
    /// controller-runtime does when it registers a webhook.
    #[cfg(feature = "webhooks")]
    pub(crate) fn serve(&self, path: &str) {
        self.in_flight.with_label_values(&[path]).set(0);
        self.latency.with_label_values(&[path]);
    }

    /// Marks one request to `path` in flight until the returned guard drops.
    #[cfg(feature = "webhooks")]
    pub(crate) fn begin(&self, path: &str) -> InFlight {
        let gauge = self.in_flight.with_label_values(&[path]);
        gauge.inc();
        InFlight(gauge)
    }

    /// Counts one answer from `path` with `status`, `elapsed` after its headers arrived.
    #[cfg(feature = "webhooks")]
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
#[cfg(feature = "webhooks")]
#[derive(Debug)]
pub(crate) struct InFlight(prometheus::IntGauge);

#[cfg(feature = "webhooks")]
impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}
