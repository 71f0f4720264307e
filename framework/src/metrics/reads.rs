//! Counts a context's reads in `kubeward_reads_total`, by resource and by where they were served,
//! how long they waited for the controller's own writes, and the reconciles held back for them.

use std::time::Duration;

use prometheus::{HistogramVec, IntCounter, IntCounterVec};

use super::Metrics;

/// Where a read of a reconcile's context was served from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadSource {
    /// The informer cache: the kind is cached, in the namespace asked for, and has synced.
    Cache,
    /// The API server: nothing caches the kind there yet.
    Api,
}

impl ReadSource {
    fn label(self) -> &'static str {
        match self {
            Self::Cache => "cache",
            Self::Api => "api",
        }
    }
}

/// One controller's series of `kubeward_reads_total`, `kubeward_cache_wait_seconds`,
/// `kubeward_cache_wait_timeouts_total` and `kubeward_controller_stale_sync_skips_total`.
#[derive(Clone, Debug)]
pub(crate) struct ReadMetrics {
    reads: IntCounterVec,
    wait: HistogramVec,
    timeouts: IntCounterVec,
    held_back: IntCounter,
    controller: String,
}

impl ReadMetrics {
    pub(crate) fn new(metrics: &Metrics, controller: &str) -> Self {
        Self {
            reads: metrics.reads.clone(),
            wait: metrics.cache_wait.clone(),
            timeouts: metrics.cache_wait_timeouts.clone(),
            held_back: metrics.stale_sync_skips.with_label_values(&[controller]),
            controller: controller.to_owned(),
        }
    }

    /// Counts one read of `resource` (`configmaps`, `widgets.example.com`) served from `source`.
    pub(crate) fn count(&self, resource: &str, source: ReadSource) {
        self.reads
            .with_label_values(&[self.controller.as_str(), resource, source.label()])
            .inc();
    }

    /// Starts the wait series of `resource` at zero, so a dashboard shows the controller's
    /// reads waited for nothing rather than no data.
    pub(crate) fn start_waits(&self, resource: &str) {
        let labels = [self.controller.as_str(), resource];
        let _ = self.wait.with_label_values(&labels);
        let _ = self.timeouts.with_label_values(&labels);
    }

    /// Records a read of `resource` that waited `waited` for the controller's own writes, and
    /// stopped at the timeout if `timed_out`.
    pub(crate) fn waited(&self, resource: &str, waited: Duration, timed_out: bool) {
        let labels = [self.controller.as_str(), resource];
        self.wait
            .with_label_values(&labels)
            .observe(waited.as_secs_f64());
        if timed_out {
            self.timeouts.with_label_values(&labels).inc();
        }
    }

    /// Counts a reconcile that waited, before it ran, for the cache to bring in the
    /// controller's own writes (KEP-5647 calls it a stale sync skip).
    pub(crate) fn held_back(&self) {
        self.held_back.inc();
    }
}
