//! Counts a recorder's Event writes in `kubeward_events_total`.

use prometheus::IntCounter;

use super::Metrics;

/// One recorder's series of `kubeward_events_total`, by result; all exist from the start, at 0.
#[derive(Clone, Debug)]
pub(crate) struct EventMetrics {
    /// Written as a new Event object.
    pub(crate) created: IntCounter,
    /// Counted in the series of an existing Event.
    pub(crate) aggregated: IntCounter,
    /// Not written: the object spent its budget of new Events.
    pub(crate) limited: IntCounter,
    /// Not written: the recorder's queue was full, or there was no runtime to write it.
    pub(crate) dropped: IntCounter,
    /// Refused by the API server, or it did not answer in time.
    pub(crate) failed: IntCounter,
}

impl EventMetrics {
    pub(crate) fn new(metrics: &Metrics, controller: &str) -> Self {
        let result = |r: &str| metrics.events.with_label_values(&[controller, r]);
        Self {
            created: result("created"),
            aggregated: result("aggregated"),
            limited: result("limited"),
            dropped: result("dropped"),
            failed: result("failed"),
        }
    }
}
