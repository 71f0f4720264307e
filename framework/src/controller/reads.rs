//! Reads for a reconcile: from the informer cache when it holds the kind, else from the API server.
//!
//! As controller-runtime's client, `ctx.get` and `ctx.list` read from the cache by default and
//! need no thought about where an object comes from. The cache serves a read when the manager
//! already runs a synced informer of the kind over the namespace asked for (the controller's own
//! kind, one it owns or watches, or one a lister started); otherwise the read goes to the API
//! server, and `kubeward_reads_total{source="api"}` shows it on the dashboard, so a missing
//! `watches` is seen as a count rather than felt as latency. A read never starts an informer:
//! declaring the kinds a controller reads (`owns`, `watches`) keeps them cached from the start.
//!
//! A cached read first waits, for at most the controller's timeout, until the cache has brought
//! in the writes the controller made through its context (read-your-writes, on by default; see
//! [`Controller::read_your_writes`](super::Controller::read_your_writes)).

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::{GetParams, ListParams};
use kube::core::{ObjectList, Request, Selector, SelectorExt as _};
use kube::{Client, Resource};

use super::context::resource_of;
use super::{Context, Watchable};
use crate::cache::{ObjectKey, Store};
use crate::informer::{CacheScope, SharedInformer};
use crate::metrics::ReadSource;

impl<K: Resource> Context<K> {
    /// The object of `C` named `name` in `namespace` (`None` for a cluster-scoped kind), or
    /// `None` when there is none: from the cache when a synced informer of `C` covers
    /// `namespace`, else from the API server (a read never starts an informer: `owns` and
    /// `watches` keep a kind cached).
    ///
    /// A cache made with a label or field selector only holds the objects it selects, and
    /// answers `None` for the others, as controller-runtime's cached client does.
    ///
    /// # Errors
    /// The API server's error when it is asked and fails (other than not found).
    pub async fn get<C: Watchable>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Arc<C>>, kube::Error> {
        let namespace = namespace.filter(|_| C::NAMESPACED);
        if let Some(cache) = self.cache_of::<C>(namespace) {
            self.count_read::<C>(ReadSource::Cache);
            let key = ObjectKey::new(namespace, name);
            self.fence_object(&cache, &resource_of::<C>(), &key).await;
            return Ok(cache.get(&key));
        }
        self.count_read::<C>(ReadSource::Api);
        get_live(&self.client(), namespace, name).await
    }

    /// The objects of `C` in `namespace` (every namespace the controller watches when `None`)
    /// whose labels match `selector` (`Selector::default()` for all): from the cache when a
    /// synced informer of `C` covers `namespace`, else from the API server (a read never starts
    /// an informer: `owns` and `watches` keep a kind cached). Order is unspecified.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// # use kubeward::controller::Context;
    /// # async fn f(ctx: &Context<ConfigMap>, cm: Arc<ConfigMap>) -> Result<(), kube::Error> {
    /// use kube::core::{Expression, Selector};
    /// let web: Selector = Expression::Equal("app".into(), "web".into()).into();
    /// let pods = ctx.list::<Pod>(cm.metadata.namespace.as_deref(), &web).await?;
    /// # let _ = pods; Ok(()) }
    /// # let _ = f;
    /// ```
    ///
    /// # Errors
    /// The API server's error when it is asked and fails.
    pub async fn list<C: Watchable>(
        &self,
        namespace: Option<&str>,
        selector: &Selector,
    ) -> Result<Vec<Arc<C>>, kube::Error> {
        let namespace = namespace.filter(|_| C::NAMESPACED);
        if let Some(cache) = self.cache_of::<C>(namespace) {
            self.count_read::<C>(ReadSource::Cache);
            self.fence_list(&cache, &resource_of::<C>(), namespace)
                .await;
            let no_labels = BTreeMap::new();
            let labels_match =
                |obj: &C| selector.matches(obj.meta().labels.as_ref().unwrap_or(&no_labels));
            let in_namespace =
                |obj: &C| namespace.is_none() || obj.meta().namespace.as_deref() == namespace;
            return Ok(cache
                .list()
                .into_iter()
                .filter(|obj| in_namespace(obj) && labels_match(obj))
                .collect());
        }
        self.count_read::<C>(ReadSource::Api);
        let watched: Vec<&str> = self.scope().watched_namespaces().collect();
        if namespace.is_some() || !C::NAMESPACED || watched.is_empty() {
            return list_live(&self.client(), namespace, selector).await;
        }
        // Every namespace the controller watches, one list each.
        let mut all = Vec::new();
        for ns in watched {
            all.extend(list_live(&self.client(), Some(ns), selector).await?);
        }
        Ok(all)
    }

    /// The store of a synced informer of `C` that holds every object of `namespace` (of every
    /// namespace the controller watches when `None`): the one over the controller's own cache
    /// scope, or one over exactly `namespace`; never makes one.
    fn cache_of<C: Watchable>(&self, namespace: Option<&str>) -> Option<Store<C>> {
        let scope = self.scope();
        let watched: Vec<&str> = scope.watched_namespaces().collect();
        let covers = !C::NAMESPACED
            || watched.is_empty()
            || namespace.is_none_or(|ns| watched.contains(&ns));
        let own = covers
            .then(|| self.factory().watched_existing::<C>(scope))
            .flatten();
        let exact = namespace.and_then(|ns| {
            let just = CacheScope::default()
                .namespaces([ns])
                .with_selectors_of(scope);
            self.factory().watched_existing::<C>(&just)
        });
        own.into_iter()
            .chain(exact)
            .find(SharedInformer::has_synced)
            .map(|informer| informer.store())
    }

    /// Counts a read of `C` served from `source` (the reconcile kit's cached look-ups too).
    pub(crate) fn count_read<C: Watchable>(&self, source: ReadSource) {
        self.reads().count(&resource_of::<C>(), source);
    }
}

async fn get_live<C: Watchable>(
    client: &Client,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Arc<C>>, kube::Error> {
    let request = Request::new(C::url_path(&(), namespace))
        .get(name, &GetParams::default())
        .map_err(kube::Error::BuildRequest)?;
    match client.request::<C>(request).await {
        Ok(obj) => Ok(Some(Arc::new(obj))),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

async fn list_live<C: Watchable>(
    client: &Client,
    namespace: Option<&str>,
    selector: &Selector,
) -> Result<Vec<Arc<C>>, kube::Error> {
    let params = ListParams::default().labels_from(selector);
    let request = Request::new(C::url_path(&(), namespace))
        .list(&params)
        .map_err(kube::Error::BuildRequest)?;
    let list = client.request::<ObjectList<C>>(request).await?;
    Ok(list.items.into_iter().map(Arc::new).collect())
}
