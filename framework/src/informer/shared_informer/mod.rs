//! One reflector, one store and the handlers behind it, composed into a shared informer.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube::{Api, Client, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::cache_scope::Source;
use super::fan_out::FanOut;
use super::listener::Listener;
use super::progress::Progress;
use super::reflector::Reflector;
use super::sink::{ChangeFns, UserHandler};
use super::synced::Synced;
use super::transforms::Transforms;
use super::{Config, Error, EventHandler, Registration, Result, Stats};
use crate::cache::{self, Decode, Store};

/// Lists and watches one resource into a [`Store`] and delivers every change to its handlers.
///
/// The store is updated before any handler hears of the change. Each handler has its own
/// buffer and delivery task: a slow handler delays neither the reflector nor other handlers,
/// and its buffer keeps one pending change per object (the latest state; an update keeps the
/// oldest old state the handler has not seen), so it never holds more than the cache does.
/// Handlers run on the tokio runtime, so one that blocks holds a runtime thread: hand blocking
/// work to [`tokio::task::spawn_blocking`].
/// Cheap to clone; clones share everything.
///
/// Get one from a [`Factory`](super::Factory), which shares it with everyone asking for the
/// same resource, namespace and selectors. [`SharedInformer::new`] makes a private one, with
/// its own list and watch, for the rare case that must not share.
#[doc(alias = "SharedIndexInformer")]
pub struct SharedInformer<K> {
    inner: Arc<Inner<K>>,
}

/// The pieces, wired one way: the reflector feeds the fan-out (store, then handlers) and
/// records its progress; this type starts and stops them and answers for them.
struct Inner<K> {
    /// The URL path of each reflector (one per namespace of a namespace set); none without a
    /// reflector (tests of the fan-out).
    urls: Vec<String>,
    /// The handlers' default resync period.
    resync: Option<Duration>,
    fan_out: Arc<FanOut<K>>,
    transforms: Arc<Transforms<K>>,
    progress: Arc<Progress>,
    tasks: Mutex<Tasks<K>>,
    shutdown: CancellationToken,
}

struct Tasks<K> {
    started: bool,
    /// Taken when the informer starts.
    reflectors: Vec<Reflector<K>>,
    handles: Vec<JoinHandle<()>>,
}

impl<K> Clone for SharedInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K: Resource + Send + Sync + 'static> fmt::Debug for SharedInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformer")
            .field("urls", &self.inner.urls)
            .field("synced", &self.inner.progress.has_synced())
            .field("handlers", &self.inner.fan_out.handlers())
            .finish_non_exhaustive()
    }
}

impl<K> SharedInformer<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    /// A private informer over `api` (its namespace, or all namespaces), not started yet: the
    /// escape hatch for an informer nobody else shares. Prefer
    /// [`Factory::informer`](super::Factory::informer), which shares one list and one watch
    /// between everyone asking for the same resource.
    ///
    /// An `Api<PartialObjectMeta<K>>` lists and watches metadata only.
    #[must_use]
    #[allow(
        clippy::needless_pass_by_value,
        reason = "a config is handed over when built, as `Factory::informer_with` takes it"
    )]
    pub fn new(api: Api<K>, config: Config) -> Self {
        let url = api.resource_url().to_owned();
        Self::at(api.into_client(), vec![(url, None)], &config)
    }

    /// An informer filled from each of `sources`: a URL path, and the namespace it lists when
    /// it is one of several (see [`CacheScope`](super::CacheScope)).
    pub(crate) fn at(client: Client, sources: Vec<Source>, config: &Config) -> Self {
        Self::build(config, Some(client), sources)
    }

    /// An informer without a reflector: changes come only from its fan-out (tests of the
    /// fan-out).
    #[cfg(test)]
    pub(crate) fn without_reflector(config: &Config) -> Self {
        Self::build(config, None, Vec::new())
    }

    fn build(config: &Config, client: Option<Client>, sources: Vec<Source>) -> Self {
        let transforms = Arc::new(Transforms::new(config.strip_managed_fields));
        let store = match config.compact_hot {
            Some(hot) => cache::compact_store_with(hot, decoder(Arc::clone(&transforms))),
            None => cache::store(),
        };
        let progress = Arc::new(Progress::new(sources.len().max(1)));
        let fan_out = Arc::new(FanOut::new(store, Arc::clone(&progress)));
        let resync = config.resync;
        // One reflector alone fills (and relists) the whole store.
        let alone = sources.len() == 1;
        let urls = sources.iter().map(|(url, _)| url.clone()).collect();
        let reflectors = client
            .map(|client| {
                sources
                    .into_iter()
                    .map(|(url, namespace)| {
                        Reflector::new(
                            client.clone(),
                            (&url, namespace.filter(|_| !alone)),
                            config.clone(),
                            Arc::clone(&transforms),
                            Arc::clone(&fan_out),
                            Arc::clone(&progress),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            inner: Arc::new(Inner {
                urls,
                resync,
                fan_out,
                transforms,
                progress,
                tasks: Mutex::new(Tasks {
                    started: false,
                    reflectors,
                    handles: Vec::new(),
                }),
                shutdown: CancellationToken::new(),
            }),
        }
    }

    /// Stores `obj` as if its watch had brought it, without telling the handlers (for the
    /// crate's tests of what reads the store).
    #[cfg(test)]
    pub(crate) fn apply_quietly(&self, obj: K) {
        let _ = self.inner.fan_out.writer().apply(Arc::new(obj));
    }

    /// The read-only cache (a lister with index queries).
    #[must_use]
    pub fn store(&self) -> Store<K> {
        self.inner.fan_out.store().clone()
    }

    /// Adds a named index, e.g. Pods by node name.
    ///
    /// # Errors
    /// [`Error::Index`] if the name is taken.
    #[doc(alias = "AddIndexers")]
    pub fn add_index<F>(&self, name: &str, function: F) -> Result<()>
    where
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        self.inner
            .fan_out
            .writer()
            .add_index(name, function)
            .map_err(Error::Index)
    }

    /// Changes every object before it is cached (after `managedFields` are stripped), in the
    /// order transforms are added. Add them before the informer starts.
    ///
    /// # Errors
    /// [`Error::Started`] once the informer has started: objects already cached did not go
    /// through the transform, so it is refused rather than applied to some objects only.
    #[doc(alias = "SetTransform")]
    pub fn add_transform(&self, transform: impl Fn(&mut K) + Send + Sync + 'static) -> Result<()> {
        self.inner.transforms.add(transform)
    }

    /// Adds a handler with the informer's resync period. If the informer holds objects already,
    /// the handler first gets an add for each of them.
    #[must_use = "the registration tells how far behind the handler is; ignore it with `let _ =`"]
    pub fn add_handler(&self, handler: impl EventHandler<K>) -> Registration<K> {
        self.add_handler_with_resync(handler, self.inner.resync)
    }

    /// Adds a handler with its own resync period (`None`: never).
    #[must_use = "the registration tells how far behind the handler is; ignore it with `let _ =`"]
    pub fn add_handler_with_resync(
        &self,
        handler: impl EventHandler<K>,
        resync: Option<Duration>,
    ) -> Registration<K> {
        let sink = UserHandler(Box::new(handler));
        self.add_listener(Listener::new(Box::new(sink), resync))
    }

    /// Adds one of the framework's own handlers, with the informer's resync period: like a
    /// user's, it runs on a task of its own, and also hears how each change came about.
    pub(crate) fn add_change_handler(&self, handler: ChangeFns<K>) -> Registration<K> {
        self.add_listener(Listener::new(Box::new(handler), self.inner.resync))
    }

    fn add_listener(&self, listener: Listener<K>) -> Registration<K> {
        let listener = Arc::new(listener);
        // Lock order: tasks, then the fan-out's handlers (as in `start`), so a concurrent
        // start cannot spawn this listener a second time.
        let mut tasks = self.inner.tasks.lock();
        self.inner.fan_out.register(&listener);
        if tasks.started {
            let spawned = self.spawn_listener(&listener);
            tasks.handles.extend(spawned);
        }
        Registration::new(listener, Arc::clone(&self.inner.fan_out))
    }

    /// Removes a handler: it gets no change after this returns (one it is handling finishes),
    /// its delivery task and resync timer end, and its buffer is dropped. `false` if it was
    /// not a handler of this informer, or was removed already.
    #[doc(alias = "RemoveEventHandler")]
    #[allow(
        clippy::must_use_candidate,
        reason = "removing is the point; the answer is optional"
    )]
    pub fn remove_handler(&self, registration: &Registration<K>) -> bool {
        self.inner.fan_out.remove(registration.listener())
    }

    /// Starts listing, watching and delivering; does nothing if already started.
    ///
    /// # Errors
    /// [`Error::NoRuntime`] outside a tokio runtime.
    pub fn start(&self) -> Result<()> {
        tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let mut tasks = self.inner.tasks.lock();
        if tasks.started || self.inner.shutdown.is_cancelled() {
            return Ok(());
        }
        tasks.started = true;
        // Before the reflector runs: every object it caches goes through the same transforms.
        self.inner.transforms.freeze();
        for listener in self.inner.fan_out.listeners() {
            let spawned = self.spawn_listener(&listener);
            tasks.handles.extend(spawned);
        }
        for reflector in std::mem::take(&mut tasks.reflectors) {
            let shutdown = self.inner.shutdown.clone();
            tasks.handles.push(crate::task::spawn(async move {
                shutdown.run_until_cancelled(reflector.run()).await;
            }));
        }
        Ok(())
    }

    /// Whether the first complete list is in the store.
    #[doc(alias = "HasSynced")]
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.inner.progress.has_synced()
    }

    /// Waits until the first complete list is in the store.
    ///
    /// # Errors
    /// [`Error::ShutDown`] if the informer is shut down first.
    #[doc(alias = "WaitForCacheSync")]
    pub async fn wait_for_sync(&self) -> Result<()> {
        self.synced().wait().await
    }

    /// Whether this informer has synced, without its type, to wait on many kinds at once.
    pub(crate) fn synced(&self) -> Synced {
        Synced::new(self.inner.progress.subscribe(), self.inner.shutdown.clone())
    }

    /// The resourceVersion of the latest list, event or bookmark the informer has seen (over a
    /// namespace set, the latest any namespace's reflector has seen).
    #[doc(alias = "LastSyncResourceVersion")]
    #[must_use]
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.inner.progress.resource_version()
    }

    /// Request and decode counters of the reflector.
    #[must_use]
    pub fn stats(&self) -> Arc<Stats> {
        Arc::clone(self.inner.progress.stats())
    }

    /// Stops the reflector, the resync timers and every handler's delivery (after the change a
    /// handler is handling), and waits until all of them have ended.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        self.inner.fan_out.stop();
        let handles = std::mem::take(&mut self.inner.tasks.lock().handles);
        for handle in handles {
            if let Err(err) = handle.await {
                tracing::error!(error = %err, "an informer task ended abnormally");
            }
        }
    }

    /// Whether two handles are the same informer.
    #[must_use]
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    fn spawn_listener(&self, listener: &Arc<Listener<K>>) -> Vec<JoinHandle<()>> {
        let (fan_out, delivered) = (Arc::clone(&self.inner.fan_out), Arc::clone(listener));
        let mut handles = vec![crate::task::spawn(async move {
            fan_out.deliver(&delivered).await;
        })];
        if let Some(period) = listener.resync_period() {
            let fan_out = Arc::clone(&self.inner.fan_out);
            let listener = Arc::clone(listener);
            let shutdown = self.inner.shutdown.clone();
            handles.push(crate::task::spawn(async move {
                shutdown
                    .run_until_cancelled(async move {
                        let mut ticks = tokio::time::interval(period);
                        ticks.tick().await;
                        loop {
                            ticks.tick().await;
                            if !fan_out.resync(&listener) {
                                break;
                            }
                        }
                    })
                    .await;
            }));
        }
        handles
    }
}

/// How a compact informer store turns the JSON it keeps back into the cached object: decode,
/// then what the reflector did before caching it (strip `managedFields`, apply the transforms).
fn decoder<K>(transforms: Arc<Transforms<K>>) -> Decode<K>
where
    K: Resource + DeserializeOwned + 'static,
{
    Arc::new(move |json: &[u8]| {
        let mut obj: K = serde_json::from_slice(json)?;
        transforms.apply(&mut obj);
        Ok(obj)
    })
}

#[cfg(test)]
mod tests;
