//! Shares one informer per resource, namespace and selectors between all its users.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{join_all, try_join_all};
use kube::{Api, Client, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;

use super::cache_scope::Source;
use super::{CacheScope, Config, Error, Result, SharedInformer, Stats, Synced, Watchable};
use crate::cache::{Fence, Waited};

/// Hands out shared informers: asking twice for the same type, namespace and selectors gives
/// the same informer (one list, one watch), whoever asks.
///
/// [`informer`](Self::informer) is the way to get one; [`informer_with`](Self::informer_with)
/// when it needs settings of its own (selectors, a resync period, a compact cache).
#[doc(alias = "SharedInformerFactory")]
pub struct Factory {
    client: Client,
    config: Config,
    informers: Mutex<BTreeMap<InformerKey, Entry>>,
}

/// Type, URLs (group, version, resource, and a namespace each) and selectors; ordered, so that
/// informers start in the same order every run (a simulation's seed decides the rest).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct InformerKey {
    type_id: TypeId,
    /// One per namespace of a namespace set, in order.
    urls: Vec<String>,
    labels: Option<String>,
    fields: Option<String>,
}

struct Entry {
    /// What the informer was made with, to refuse a different config for it.
    config: Config,
    typed: Box<dyn Any + Send + Sync>,
    erased: Box<dyn ErasedInformer>,
}

/// One informer of a factory, as its metrics report it.
#[derive(Debug)]
pub(crate) struct Observed {
    /// The URL path, then the selectors (if any) as a query.
    pub(crate) resource: String,
    /// The reflector's counters.
    pub(crate) stats: Arc<Stats>,
    /// How many objects the store holds.
    pub(crate) objects: usize,
    /// The newest resourceVersion the store has applied.
    pub(crate) newest: Option<String>,
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the factory does with every informer, whatever its type.
trait ErasedInformer: Send + Sync {
    fn start(&self) -> Result<()>;
    fn synced(&self) -> Synced;
    fn shutdown(&self) -> BoxFuture<'_, ()>;
    fn clone_box(&self) -> Box<dyn ErasedInformer>;
    fn stats(&self) -> Arc<Stats>;
    fn objects(&self) -> usize;
    fn newest_resource_version(&self) -> Option<String>;
    fn has_synced(&self) -> bool;
    fn wait_for(&self, fences: Vec<Fence>, timeout: Duration) -> BoxFuture<'static, Waited>;
}

impl<K> ErasedInformer for SharedInformer<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    fn start(&self) -> Result<()> {
        SharedInformer::start(self)
    }

    fn synced(&self) -> Synced {
        SharedInformer::synced(self)
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(SharedInformer::shutdown(self))
    }

    fn clone_box(&self) -> Box<dyn ErasedInformer> {
        Box::new(self.clone())
    }

    fn stats(&self) -> Arc<Stats> {
        SharedInformer::stats(self)
    }

    fn objects(&self) -> usize {
        self.store().len()
    }

    fn newest_resource_version(&self) -> Option<String> {
        self.store().newest_overall()
    }

    fn has_synced(&self) -> bool {
        SharedInformer::has_synced(self)
    }

    fn wait_for(&self, fences: Vec<Fence>, timeout: Duration) -> BoxFuture<'static, Waited> {
        let store = self.store();
        Box::pin(async move { store.wait_for(&fences, timeout).await })
    }
}

impl Factory {
    /// The shared informer of `K` in `scope`'s namespaces (all when none are set; always all for
    /// a cluster-scoped kind) with its selectors for `K`, as the factory's controllers use it.
    pub(crate) fn watched<K: Watchable>(&self, scope: &CacheScope) -> SharedInformer<K> {
        self.informer_over(scope.sources::<K>(), scope)
    }

    /// The informer [`Self::watched`] would give, if it was made already; never makes one.
    pub(crate) fn watched_existing<K: Watchable>(
        &self,
        scope: &CacheScope,
    ) -> Option<SharedInformer<K>> {
        self.existing(&scope.sources::<K>(), scope)
    }
}

impl fmt::Debug for Factory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Factory")
            .field(
                "informers",
                &self.informers.lock().keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Factory {
    /// A factory whose informers use `client` and the default [`Config`].
    #[must_use]
    pub fn new(client: Client) -> Self {
        Self {
            client,
            config: Config::default(),
            informers: Mutex::new(BTreeMap::new()),
        }
    }

    /// The config of informers made by [`informer`](Self::informer) (e.g. a resync period,
    /// selectors for all of them).
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Where the informers report a server that cannot be reached; the leader elector and the
    /// controllers on this factory share it.
    pub(crate) fn connectivity(&self) -> &Arc<super::connectivity::Connectivity> {
        &self.config.connectivity
    }

    /// The client the informers use.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The shared informer over `api`: its type, its namespace (`Api::namespaced`) or all
    /// namespaces (`Api::all`), and the selectors of the factory's config. Made with the
    /// factory's config the first time; afterwards the same informer, whatever config it was
    /// made with.
    ///
    /// Any type the API serves works: k8s-openapi types and custom resources,
    /// `PartialObjectMeta<K>` (lists and watches ask for metadata only), and `DynamicObject`
    /// through `Api::all_with`.
    ///
    /// ```no_run
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kube::Api;
    /// use kube::core::PartialObjectMeta;
    /// use kubeward::informer::Factory;
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), kube::Error> {
    /// # let client = kube::Client::try_default().await?;
    /// let factory = Factory::new(client.clone());
    /// let pods = factory.informer(Api::<Pod>::all(client.clone()));
    /// let in_default = factory.informer(Api::<Pod>::namespaced(client.clone(), "default"));
    /// let names_only = factory.informer(Api::<PartialObjectMeta<Pod>>::all(client));
    /// # let _ = (pods, in_default, names_only);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn informer<K>(&self, api: Api<K>) -> SharedInformer<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    {
        let url = api.resource_url().to_owned();
        let config = self.config.clone();
        make(
            &mut self.informers.lock(),
            api.into_client(),
            vec![(url, None)],
            &config,
        )
    }

    /// The shared informer over `api` with the settings of `config`, which decide, with the
    /// type and the namespace, which informer it is: another call with other selectors gets
    /// another informer.
    ///
    /// # Errors
    /// [`Error::ConfigConflict`] when that informer exists already with other settings (a
    /// different resync period or page size, say): it cannot honour both, and the factory
    /// does not silently pick one. The same config again is fine.
    pub fn informer_with<K>(&self, api: Api<K>, config: Config) -> Result<SharedInformer<K>>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    {
        let url = api.resource_url().to_owned();
        let config = config.sharing_connectivity(&self.config.connectivity);
        let key = key_of::<K>(&[(url.clone(), None)], &config);
        let mut informers = self.informers.lock();
        if let Some(entry) = informers.get(&key)
            && entry.config != config
        {
            return Err(Error::ConfigConflict {
                resource: resource_name(&key),
            });
        }
        Ok(make(
            &mut informers,
            api.into_client(),
            vec![(url, None)],
            &config,
        ))
    }

    /// The shared informer of `K` filled from `sources` (URL paths, with the namespace each
    /// lists when there are several) with the factory's config and `scope`'s selectors for `K`.
    pub(crate) fn informer_over<K>(
        &self,
        sources: Vec<Source>,
        scope: &CacheScope,
    ) -> SharedInformer<K>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        let config = scope.config_for::<K>(&self.config);
        make(
            &mut self.informers.lock(),
            self.client.clone(),
            sources,
            &config,
        )
    }

    /// The shared informer of `K`, a kind of `group` named `kind` whose type may be known only at
    /// run time, filled from `sources` with the factory's config and `scope`'s selectors for it.
    pub(crate) fn informer_of_kind<K>(
        &self,
        sources: Vec<Source>,
        (group, kind): (String, String),
        scope: &CacheScope,
    ) -> SharedInformer<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    {
        let config = scope.config_for_kind(group, kind, &self.config);
        make(
            &mut self.informers.lock(),
            self.client.clone(),
            sources,
            &config,
        )
    }

    /// The informer of `K` filled from `sources` with the factory's config and `scope`'s
    /// selectors for `K`, if one was made; never makes one.
    pub(crate) fn existing<K: Resource<DynamicType = ()> + 'static>(
        &self,
        sources: &[Source],
        scope: &CacheScope,
    ) -> Option<SharedInformer<K>> {
        let key = key_of::<K>(sources, &scope.config_for::<K>(&self.config));
        self.informers.lock().get(&key).map(typed)
    }

    /// Starts every informer made so far that is not running yet; call again after making more.
    ///
    /// # Errors
    /// [`Error::NoRuntime`] outside a tokio runtime.
    pub fn start(&self) -> Result<()> {
        for entry in self.informers.lock().values() {
            entry.erased.start()?;
        }
        Ok(())
    }

    /// Waits until every informer made so far has synced; wakes when the last one does.
    ///
    /// # Errors
    /// [`Error::ShutDown`] if one is shut down first.
    pub async fn wait_for_sync(&self) -> Result<()> {
        let synced: Vec<Synced> = self.erased().iter().map(|i| i.synced()).collect();
        try_join_all(synced.iter().map(Synced::wait)).await?;
        Ok(())
    }

    /// Shuts every informer down and waits until none of their tasks runs.
    pub async fn shutdown(&self) {
        let erased = self.erased();
        join_all(erased.iter().map(|informer| informer.shutdown())).await;
    }

    /// Every informer made so far, for the metrics. Informers of one resource but different
    /// types (typed, metadata-only) come in an order that stays the same for the life of the
    /// process.
    pub(crate) fn observe(&self) -> Vec<Observed> {
        let informers = self.informers.lock();
        let mut entries: Vec<(&InformerKey, &Entry)> = informers.iter().collect();
        entries.sort_by_key(|(key, _)| (&key.urls, &key.labels, &key.fields, key.type_id));
        entries
            .into_iter()
            .map(|(key, entry)| Observed {
                resource: resource_name(key),
                stats: entry.erased.stats(),
                objects: entry.erased.objects(),
                newest: entry.erased.newest_resource_version(),
            })
            .collect()
    }

    /// Warns, as a replica starts leading, of the caches [behind](Self::behind) the API server:
    /// its controllers work from them.
    pub(crate) fn warn_of_caches_behind(&self) {
        let behind = self.behind();
        if !behind.is_empty() {
            tracing::warn!(
                behind = %behind.join(" "),
                "leading while these caches are behind the API server: the controllers start \
                 from what they hold and reconcile what their informers bring in as they catch up"
            );
        }
    }

    /// The informers whose caches are behind the server now: answered 404 (the kind is not
    /// served), or every one of them while the server is unreachable. One still on its first
    /// list is not: no controller works from it before it syncs, and at a replica's start
    /// leading before the first lists end is the common case, not news.
    fn behind(&self) -> Vec<String> {
        let unreachable = self.config.connectivity.is_unreachable();
        self.observe()
            .into_iter()
            .filter(|o| unreachable || o.stats.not_served())
            .map(|o| o.resource)
            .collect()
    }

    /// Waits until the cache of `resource` (`plural` or `plural.group`) in `namespace` (`None`:
    /// cluster-scoped) has passed `fences`, for at most `timeout`: the cache of a synced informer
    /// that lists every object of it there (one without selectors first). `None` when no
    /// informer of the factory caches it.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads a store.
    pub(crate) async fn wait_for(
        &self,
        resource: &str,
        namespace: Option<&str>,
        fences: Vec<Fence>,
        timeout: Duration,
    ) -> Option<Waited> {
        let cache = {
            let informers = self.informers.lock();
            let mut caching: Vec<(&InformerKey, &Entry)> = informers
                .iter()
                .filter(|(key, entry)| {
                    entry.erased.has_synced()
                        && (key.urls.iter()).any(|url| lists(url, resource, namespace))
                })
                .collect();
            caching.sort_by_key(|(key, _)| key.labels.is_some() || key.fields.is_some());
            caching.first().map(|(_, entry)| entry.erased.clone_box())
        }?;
        Some(cache.wait_for(fences, timeout).await)
    }

    fn erased(&self) -> Vec<Box<dyn ErasedInformer>> {
        self.informers
            .lock()
            .values()
            .map(|entry| entry.erased.clone_box())
            .collect()
    }
}

/// The informer of `K` over `sources` with `config`'s selectors, made with `config` if there is
/// none.
fn make<K>(
    informers: &mut BTreeMap<InformerKey, Entry>,
    client: Client,
    sources: Vec<Source>,
    config: &Config,
) -> SharedInformer<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    let key = key_of::<K>(&sources, config);
    let entry = informers.entry(key).or_insert_with(|| {
        let informer = SharedInformer::<K>::at(client, sources, config);
        Entry {
            config: config.clone(),
            typed: Box::new(informer.clone()),
            erased: Box::new(informer),
        }
    });
    typed(entry)
}

fn key_of<K: 'static>(sources: &[Source], config: &Config) -> InformerKey {
    InformerKey {
        type_id: TypeId::of::<K>(),
        urls: sources.iter().map(|(url, _)| url.clone()).collect(),
        labels: config.label_selector.clone(),
        fields: config.field_selector.clone(),
    }
}

/// The informer an entry holds, as its own type.
///
/// # Panics
/// Never: an entry is stored under a key holding the `TypeId` of `K` (see [`key_of`]) and only
/// [`make`] makes entries, from a `SharedInformer<K>` of that same `K`; so every
/// lookup with a key of `K` finds a `SharedInformer<K>`.
fn typed<K: 'static>(entry: &Entry) -> SharedInformer<K> {
    entry
        .typed
        .downcast_ref::<SharedInformer<K>>()
        .cloned()
        .expect("invariant: a factory entry's key holds the TypeId of its informer's type")
}

/// Whether an informer listing `url` caches every object of `resource` (`plural` or
/// `plural.group`) in `namespace`.
fn lists(url: &str, resource: &str, namespace: Option<&str>) -> bool {
    let segments: Vec<&str> = url.split('/').filter(|s| !s.is_empty()).collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return false,
    };
    let (listed, plural) = match rest {
        ["namespaces", listed, plural] => (Some(*listed), *plural),
        [plural] => (None, *plural),
        _ => return false,
    };
    let plural_matches = match resource.split_once('.') {
        Some((name, of)) => name == plural && of == group,
        None => resource == plural && group.is_empty(),
    };
    plural_matches && (listed.is_none() || listed == namespace)
}

/// The resource of an informer: its URL path, then its selectors, if any.
fn resource_name(key: &InformerKey) -> String {
    let selectors: Vec<String> = [
        ("labelSelector", &key.labels),
        ("fieldSelector", &key.fields),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some(format!("{name}={}", value.as_ref()?)))
    .collect();
    let urls = key.urls.join(",");
    if selectors.is_empty() {
        urls
    } else {
        format!("{urls}?{}", selectors.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::cache::Store;

    fn assert_send_sync_static<T: Send + Sync + 'static>() {}
    fn assert_send<T: Send>(_: &T) {}

    /// Never called: it only has to compile, proving the futures users spawn are `Send`.
    #[allow(dead_code)]
    fn futures_are_send(factory: &Factory, informer: &SharedInformer<Pod>) {
        assert_send(&factory.wait_for_sync());
        assert_send(&factory.shutdown());
        assert_send(&informer.wait_for_sync());
        assert_send(&informer.shutdown());
    }

    #[test]
    fn an_informer_url_lists_its_resource_in_its_namespace_or_in_all() {
        assert!(lists(
            "/api/v1/namespaces/a/configmaps",
            "configmaps",
            Some("a")
        ));
        assert!(!lists(
            "/api/v1/namespaces/a/configmaps",
            "configmaps",
            Some("b")
        ));
        assert!(lists("/api/v1/configmaps", "configmaps", Some("b")));
        assert!(!lists("/api/v1/configmaps", "secrets", Some("b")));
        let widgets = "/apis/example.com/v1/namespaces/a/widgets";
        assert!(lists(widgets, "widgets.example.com", Some("a")));
        assert!(!lists(widgets, "widgets", Some("a")));
        assert!(lists(
            "/apis/example.com/v1/gadgets",
            "gadgets.example.com",
            None
        ));
    }

    #[test]
    fn handles_can_be_shared_across_tasks() {
        assert_send_sync_static::<Factory>();
        assert_send_sync_static::<SharedInformer<Pod>>();
        assert_send_sync_static::<Store<Pod>>();
        let _ = futures_are_send as fn(&Factory, &SharedInformer<Pod>);
    }
}
