//! Holds what a controller runs on: the client, the shared informers, the cache scope, the metrics.

use std::sync::Arc;

use kube::Client;
use prometheus::Registry;

use super::why::Reconciles;
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
#[derive(Clone)]
#[must_use]
pub struct Cluster {
    pub(crate) factory: Arc<Factory>,
    pub(crate) scope: CacheScope,
    /// Where controllers count; `None` for a registry of their own.
    pub(crate) metrics: Option<Metrics>,
    /// The client reconciles read and write with, if not the factory's.
    pub(crate) client: Option<Client>,
    /// Where controllers register their flight recorders (a manager's, for
    /// `/debug/reconciles`); none: kept to each controller.
    pub(crate) reconciles: Option<Reconciles>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("factory", &self.factory)
            .field("scope", &self.scope)
            .field("metrics", &self.metrics)
            .field("own_client", &self.client.is_some())
            .field("registers_recorders", &self.reconciles.is_some())
            .finish()
    }
}

impl Cluster {
    /// Controllers on `factory`'s client and informers, in every namespace, counting in a
    /// registry of their own (see [`Self::metrics`]).
    pub fn new(factory: Arc<Factory>) -> Self {
        Self {
            factory,
            scope: CacheScope::default(),
            metrics: None,
            client: None,
            reconciles: None,
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

    /// Hands reconciles `client` (their [`Context::client`](super::Context::client) and the
    /// writes of the reconcile kit) instead of the factory's, which the informers keep using:
    /// e.g. a client with rate limits of its own for writes, apart from the watches.
    pub fn client(mut self, client: Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Counts reconciles and queue activity in `metrics` (the `controller_runtime_*` and
    /// `workqueue_*` families, labelled with each controller's name).
    pub fn metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Registers the flight recorders of the controllers bound to it in `reconciles`.
    pub(crate) fn reconciles(mut self, reconciles: Reconciles) -> Self {
        self.reconciles = Some(reconciles);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use kube::core::PartialObjectMeta;

    use super::*;
    use crate::controller::{Action, Context, Controller, Reconciler};

    struct Idle;

    impl Reconciler<ConfigMap> for Idle {
        type Error = kube::Error;

        async fn reconcile(
            &self,
            _: Arc<ConfigMap>,
            _: &Context<ConfigMap>,
        ) -> Result<Action, kube::Error> {
            Ok(Action::await_change())
        }
    }

    /// Informers are made, never started: no request is sent.
    fn offline_factory() -> Arc<Factory> {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
        let client = kube::Client::try_from(config).expect("a plain HTTP config builds a client");
        Arc::new(Factory::new(client))
    }

    #[tokio::test]
    async fn the_scope_reaches_every_informer_a_controller_uses_and_they_are_the_ones_shared() {
        let factory = offline_factory();
        let cluster = Cluster::new(Arc::clone(&factory)).cache(
            CacheScope::default()
                .namespaces(["a", "b"])
                .labels::<Secret>("app=web"),
        );
        let _bound = Controller::new(Idle)
            .owns::<Secret>()
            .watches_metadata::<Secret>(|_| Vec::new())
            .bind(&cluster)
            .expect("a valid controller");
        let resources: Vec<String> = factory.observe().into_iter().map(|o| o.resource).collect();
        let paths =
            |plural: &str| format!("/api/v1/namespaces/a/{plural},/api/v1/namespaces/b/{plural}");
        assert_eq!(
            resources,
            [
                paths("configmaps"),
                format!("{}?labelSelector=app=web", paths("secrets")),
                format!("{}?labelSelector=app=web", paths("secrets")),
            ],
            "the reconciled kind over both namespaces; the owned Secrets, typed and \
             metadata-only, with their selector too"
        );
        assert!(
            cluster
                .informer::<Secret>()
                .ptr_eq(&cluster.informer::<Secret>()),
            "one shared informer"
        );
        assert_eq!(
            factory.observe().len(),
            3,
            "asking again made no new informer"
        );
        let _metadata = cluster.informer::<PartialObjectMeta<Secret>>();
        assert_eq!(factory.observe().len(), 3);
    }
}
