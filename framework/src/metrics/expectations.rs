//! Counts the expectations a controller holds: its own creates and deletes it waits to observe.

use prometheus::{IntCounter, IntGauge};

use super::Metrics;

/// One controller's series of `kubeward_expectations_pending` and
/// `kubeward_expectations_timeouts_total`, at 0 from the start.
#[derive(Clone, Debug)]
pub(crate) struct ExpectationMetrics {
    /// Creates and deletes recorded and not yet observed by the cache.
    pub(crate) pending: IntGauge,
    /// Expectations the controller stopped waiting for at the timeout, acting without them.
    pub(crate) timeouts: IntCounter,
}

impl ExpectationMetrics {
    pub(crate) fn new(metrics: &Metrics, controller: &str) -> Self {
        Self {
            pending: metrics
                .expectations_pending
                .with_label_values(&[controller]),
            timeouts: metrics
                .expectations_timeouts
                .with_label_values(&[controller]),
        }
    }
}
