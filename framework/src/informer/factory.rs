//! Shares one informer per resource, namespace and selectors between all its users.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::future::{join_all, try_join_all};
use kube::core::PartialObjectMeta;
use kube::{Api, Client, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;

use super::{Config, Result, SharedInformer, Stats};

/// Hands out shared informers: asking twice for the same type, namespace and selectors gives
/// the same informer (one list, one watch), whoever asks.
#[doc(alias = "SharedInformerFactory")]
pub struct Factory {
    client: Client,
    config: Config,
    informers: Mutex<HashMap<InformerKey, Entry>>,
}

/// Type, URL (group, version, resource, namespace) and selectors.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct InformerKey {
    type_id: TypeId,
    url: String,
    labels: Option<String>,
    fields: Option<String>,
}

struct Entry {
    typed: Box<dyn Any + Send + Sync>,
    erased: Box<dyn ErasedInformer>,
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the factory does with every informer, whatever its type.
trait ErasedInformer: Send + Sync {
    fn start(&self) -> Result<()>;
    fn wait_for_sync(&self) -> BoxFuture<'_, Result<()>>;
    fn shutdown(&self) -> BoxFuture<'_, ()>;
    fn clone_box(&self) -> Box<dyn ErasedInformer>;
    fn observe(&self) -> (Arc<Stats>, usize);
}

impl<K> ErasedInformer for SharedInformer<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    fn start(&self) -> Result<()> {
        SharedInformer::start(self)
    }

    fn wait_for_sync(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(SharedInformer::wait_for_sync(self))
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(SharedInformer::shutdown(self))
    }

    fn clone_box(&self) -> Box<dyn ErasedInformer> {
        Box::new(self.clone())
    }

    fn observe(&self) -> (Arc<Stats>, usize) {
        (SharedInformer::stats(self), self.store().len())
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
            informers: Mutex::new(HashMap::new()),
        }
    }

    /// The config of informers made without one of their own (e.g. a resync period).
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// The client the informers use.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The informer of `K` in all namespaces (or of a cluster-scoped `K`).
    #[must_use]
    pub fn informer<K>(&self) -> SharedInformer<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Default,
    {
        self.informer_with(Api::all(self.client.clone()), self.config.clone())
    }

    /// The informer of `K` in one namespace.
    #[must_use]
    pub fn namespaced_informer<K>(&self, namespace: &str) -> SharedInformer<K>
    where
        K: Resource<Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        K::DynamicType: Default,
    {
        self.informer_with(
            Api::namespaced(self.client.clone(), namespace),
            self.config.clone(),
        )
    }

    /// The informer of the metadata of `K` in all namespaces: lists and watches ask for
    /// `PartialObjectMetadata`, so only names, labels, annotations, owners and the like are
    /// transferred and cached.
    #[must_use]
    pub fn metadata_informer<K>(&self) -> SharedInformer<PartialObjectMeta<K>>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Default,
    {
        let config = self.config.clone().metadata_only(true);
        self.informer_with(Api::all(self.client.clone()), config)
    }

    /// The informer of the metadata of `K` in one namespace.
    #[must_use]
    pub fn namespaced_metadata_informer<K>(
        &self,
        namespace: &str,
    ) -> SharedInformer<PartialObjectMeta<K>>
    where
        K: Resource<Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        K::DynamicType: Default,
    {
        let config = self.config.clone().metadata_only(true);
        self.informer_with(Api::namespaced(self.client.clone(), namespace), config)
    }

    /// The informer over `api` (any type, e.g. `Api::<DynamicObject>::all_with(client, &resource)`)
    /// with the selectors of `config`. If that informer exists already it is returned, and the
    /// rest of `config` is ignored.
    ///
    /// # Panics
    /// Never: an informer is stored under the `TypeId` of its own type.
    #[must_use]
    pub fn informer_with<K>(&self, api: Api<K>, config: Config) -> SharedInformer<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    {
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            url: api.resource_url().to_owned(),
            labels: config.label_selector.clone(),
            fields: config.field_selector.clone(),
        };
        let mut informers = self.informers.lock();
        let entry = informers.entry(key).or_insert_with(|| {
            let informer = SharedInformer::new(api, config);
            Entry {
                typed: Box::new(informer.clone()),
                erased: Box::new(informer),
            }
        });
        entry
            .typed
            .downcast_ref::<SharedInformer<K>>()
            .cloned()
            .expect("invariant: a factory entry's key holds the TypeId of its informer's type")
    }

    /// The informer of `K` over the URL path `url` without selectors, if one was made; never
    /// makes one.
    pub(crate) fn existing<K: 'static>(&self, url: &str) -> Option<SharedInformer<K>> {
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            url: url.to_owned(),
            labels: None,
            fields: None,
        };
        let informers = self.informers.lock();
        informers
            .get(&key)?
            .typed
            .downcast_ref::<SharedInformer<K>>()
            .cloned()
    }

    /// Starts every informer made so far that is not running yet; call again after making more.
    ///
    /// # Errors
    /// [`Error::NoRuntime`](super::Error::NoRuntime) outside a tokio runtime.
    pub fn start(&self) -> Result<()> {
        for entry in self.informers.lock().values() {
            entry.erased.start()?;
        }
        Ok(())
    }

    /// Waits until every informer made so far has synced.
    ///
    /// # Errors
    /// [`Error::ShutDown`](super::Error::ShutDown) if one is shut down first.
    pub async fn wait_for_sync(&self) -> Result<()> {
        let erased = self.erased();
        try_join_all(erased.iter().map(|informer| informer.wait_for_sync())).await?;
        Ok(())
    }

    /// Shuts every informer down and waits until none of their tasks runs.
    pub async fn shutdown(&self) {
        let erased = self.erased();
        join_all(erased.iter().map(|informer| informer.shutdown())).await;
    }

    /// Every informer made so far: its resource (URL path, then its selectors, if any), its
    /// reflector's [`Stats`] and how many objects its store holds. The metrics read this.
    /// Informers of one resource but different types (typed, metadata-only) come in an order
    /// that stays the same for the life of the process.
    #[must_use]
    pub fn observe(&self) -> Vec<(String, Arc<Stats>, usize)> {
        let informers = self.informers.lock();
        let mut keys: Vec<&InformerKey> = informers.keys().collect();
        keys.sort_by_key(|key| (&key.url, &key.labels, &key.fields, key.type_id));
        keys.into_iter()
            .filter_map(|key| Some((key, informers.get(key)?)))
            .map(|(key, entry)| {
                let selectors: Vec<String> = [
                    ("labelSelector", &key.labels),
                    ("fieldSelector", &key.fields),
                ]
                .into_iter()
                .filter_map(|(name, value)| Some(format!("{name}={}", value.as_ref()?)))
                .collect();
                let resource = if selectors.is_empty() {
                    key.url.clone()
                } else {
                    format!("{}?{}", key.url, selectors.join("&"))
                };
                let (stats, objects) = entry.erased.observe();
                (resource, stats, objects)
            })
            .collect()
    }

    fn erased(&self) -> Vec<Box<dyn ErasedInformer>> {
        self.informers
            .lock()
            .values()
            .map(|entry| entry.erased.clone_box())
            .collect()
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
    fn handles_can_be_shared_across_tasks() {
        assert_send_sync_static::<Factory>();
        assert_send_sync_static::<SharedInformer<Pod>>();
        assert_send_sync_static::<Store<Pod>>();
        let _ = futures_are_send as fn(&Factory, &SharedInformer<Pod>);
    }
}
