//! Counts a context's reads in `kubeward_reads_total`, by resource and by where they were served.

use prometheus::IntCounterVec;

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

/// One controller's series of `kubeward_reads_total`.
#[derive(Clone, Debug)]
pub(crate) struct ReadMetrics {
    reads: IntCounterVec,
    controller: String,
}

impl ReadMetrics {
    pub(crate) fn new(metrics: &Metrics, controller: &str) -> Self {
        Self {
            reads: metrics.reads.clone(),
            controller: controller.to_owned(),
        }
    }

    /// Counts one read of `resource` (`configmaps`, `widgets.example.com`) served from `source`.
    pub(crate) fn count(&self, resource: &str, source: ReadSource) {
        self.reads
            .with_label_values(&[self.controller.as_str(), resource, source.label()])
            .inc();
    }
}
