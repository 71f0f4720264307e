//! Counts the expectations a controller holds: its own writes it waits to see in its cache.

use prometheus::{IntCounter, IntGauge};

use super::Metrics;

/// One controller's series of `kubeward_expectations_pending` and
/// `kubeward_expectations_timeouts_total`, at 0 from the start.
#[derive(Clone, Debug)]
pub(crate) struct ExpectationMetrics {
    /// Writes recorded and not yet seen in the cache.
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
