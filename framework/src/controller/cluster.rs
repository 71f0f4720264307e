//! Holds what a controller runs on: the client, the shared informers, the cache scope, the metrics.

use std::sync::Arc;

use prometheus::Registry;

use crate::informer::{CacheScope, Factory, SharedInformer, Watchable};
use crate::metrics::Metrics;

/// What controllers run on: the client and the shared informer factory, what they cache (every
/// namespace by default, see [`CacheScope`]) and where they count (controller-runtime's
/// `cluster.Cluster`). A
/// Manager makes one for its controllers; without one, make it yourself and
/// [bind](super::Controller::bind) controllers to it.
///
/// Cheap to clone; controllers bound to clones of one `Cluster` share its informers.
#[doc(alias = "cluster.Cluster")]
#[derive(Clone, Debug)]
#[must_use]
pub struct Cluster {
    pub(crate) factory: Arc<Factory>,
    pub(crate) scope: CacheScope,
    /// Where controllers count; `None` for a registry of their own.
    pub(crate) metrics: Option<Metrics>,
}

impl Cluster {
    /// Controllers on `factory`'s client and informers, in every namespace, counting in a
    /// registry of their own (see [`Self::metrics`]).
    pub fn new(factory: Arc<Factory>) -> Self {
        Self {
            factory,
            scope: CacheScope::default(),
            metrics: None,
        }
    }

    /// Watches only `namespace` (cluster-scoped kinds are always watched everywhere); `None`:
    /// every namespace. The same as a [`CacheScope`] of that one namespace.
    pub fn namespace(mut self, namespace: Option<String>) -> Self {
        self.scope = CacheScope::default()
            .namespaces(namespace)
            .with_selectors_of(&self.scope);
        self
    }

    /// Caches what `scope` says: a set of namespaces, label and field selectors per kind. The
    /// selectors are not checked here: call [`CacheScope::check`] first (a manager does when
    /// it starts).
    pub fn cache(mut self, scope: CacheScope) -> Self {
        self.scope = scope;
        self
    }

    /// The shared informer of `K` that controllers bound to this cluster use: over its
    /// namespaces, with its selectors for `K`; one store however many namespaces it covers. For
    /// handlers of your own next to the controllers, or an informer-only program.
    #[must_use]
    pub fn informer<K: Watchable>(&self) -> SharedInformer<K> {
        self.factory.watched::<K>(&self.scope)
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
