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
    pub(crate) metrics: Metrics,
}

impl Cluster {
    /// Controllers on `factory`'s client and informers, in every namespace, counting in a
    /// registry of their own (see [`Self::metrics`]).
    pub fn new(factory: Arc<Factory>) -> Self {
        // The families are registered in a registry made just now: none is there to clash with.
        let metrics = Metrics::new(&Registry::new())
            .expect("invariant: a new registry holds no metric family yet");
        Self {
            factory,
            namespace: None,
            metrics,
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
        self.metrics = metrics;
        self
    }
}
