//! Holds what a controller runs on: the client, the shared informers, the namespace, the metrics.

use std::sync::Arc;

use prometheus::Registry;

use crate::informer::Factory;
use crate::metrics::Metrics;

/// What controllers run on: the client and the shared informer factory, the one namespace they
/// watch (all by default) and where they count (controller-runtime's `cluster.Cluster`). A
/// Manager makes one for its controllers; without one, make it yourself and
/// [bind](super::Controller::bind) controllers to it.
///
/// Cheap to clone; controllers bound to clones of one `Cluster` share its informers.
#[doc(alias = "cluster.Cluster")]
#[derive(Clone, Debug)]
#[must_use]
pub struct Cluster {
    pub(crate) factory: Arc<Factory>,
    pub(crate) namespace: Option<String>,
    /// Where controllers count; `None` for a registry of their own.
    pub(crate) metrics: Option<Metrics>,
}

impl Cluster {
    /// Controllers on `factory`'s client and informers, in every namespace, counting in a
    /// registry of their own (see [`Self::metrics`]).
    pub fn new(factory: Arc<Factory>) -> Self {
        Self {
            factory,
            namespace: None,
            metrics: None,
        }
    }

    /// Watches only `namespace` (cluster-scoped kinds are always watched everywhere).
    pub fn namespace(mut self, namespace: Option<String>) -> Self {
        self.namespace = namespace;
        self
    }

    /// Counts reconciles and queue activity in `metrics` (the `controller_runtime_*` and
    /// `workqueue_*` families, labelled with each controller's name).
    pub fn metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The metrics controllers count in: those given, else families in a registry of their own.
    pub(crate) fn metrics_or_own(&self) -> Metrics {
        self.metrics.clone().unwrap_or_else(|| {
            // A registry made just now holds no family to clash with.
            Metrics::new(&Registry::new())
                .expect("invariant: a new registry holds no metric family yet")
        })
    }
}
