//! Counts the watch events a controller dropped as echoes of its own writes.

use prometheus::IntCounter;

use super::Metrics;

/// One controller's series of `kubeward_own_write_echoes_suppressed_total`, at 0 from the start.
#[derive(Clone, Debug)]
pub(crate) struct EchoMetrics {
    /// The controller's name, for its log lines.
    pub(crate) controller: String,
    /// Events dropped because they brought back a state the controller wrote itself.
    pub(crate) suppressed: IntCounter,
}

impl EchoMetrics {
    pub(crate) fn new(metrics: &Metrics, controller: &str) -> Self {
        Self {
            controller: controller.to_owned(),
            suppressed: metrics.echoes.with_label_values(&[controller]),
        }
    }
}
