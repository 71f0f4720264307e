//! One reflector and one store shared by any number of event handlers.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kube::{Api, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::listener::Listener;
use super::reflector::Reflector;
use super::{Config, Error, EventHandler, Registration, Result, Stats};
use crate::cache::{self, Change, Decode, Relist, Store, Writer};

/// Changes an object before it is cached (e.g. drops fields nobody reads).
pub(crate) type Transform<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// Lists and watches one resource into a [`Store`] and delivers every change to its handlers.
///
/// The store is updated before any handler hears of the change. Each handler has its own
/// buffer and delivery thread: a slow handler delays neither the reflector nor other handlers,
/// and its buffer keeps one pending change per object (the latest state; an update keeps the
/// oldest old state the handler has not seen), so it never holds more than the cache does.
/// Cheap to clone; clones share everything.
#[doc(alias = "SharedIndexInformer")]
pub struct SharedInformer<K> {
    inner: Arc<Inner<K>>,
}

pub(crate) struct Inner<K> {
    source: Option<Api<K>>,
    url: Option<String>,
    config: Config,
    writer: Writer<K>,
    store: Store<K>,
    /// The handlers; held while the store changes and the change is fanned out, so a handler
    /// added meanwhile sees every change exactly once.
    listeners: Mutex<Vec<Arc<Listener<K>>>>,
    transforms: Mutex<Vec<Transform<K>>>,
    /// The transforms as they were at start, for a compact store to apply when it decodes.
    started_transforms: Arc<OnceLock<Vec<Transform<K>>>>,
    synced: watch::Sender<bool>,
    last_sync_resource_version: Mutex<Option<String>>,
    stats: Arc<Stats>,
    tasks: Mutex<Tasks>,
    shutdown: CancellationToken,
}

#[derive(Default)]
struct Tasks {
    started: bool,
    handles: Vec<JoinHandle<()>>,
}

impl<K> Clone for SharedInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for SharedInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformer")
            .field("url", &self.inner.url)
            .field("synced", &*self.inner.synced.borrow())
            .field("handlers", &self.inner.listeners.lock().len())
            .finish_non_exhaustive()
    }
}

impl<K> SharedInformer<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    /// An informer over `api` (its namespace, or all namespaces), not started yet.
    #[must_use]
    pub fn new(api: Api<K>, config: Config) -> Self {
        Self::with_source(Some(api), config)
    }

    /// An informer without a reflector: changes come only from the crate-private feeding
    /// methods (tests and benchmarks of the fan-out).
    pub(crate) fn with_source(source: Option<Api<K>>, config: Config) -> Self {
        let started_transforms = Arc::default();
        let (store, writer) = match config.compact_hot {
            Some(hot) => cache::compact_store_with(
                hot,
                decoder(Arc::clone(&started_transforms), config.strip_managed_fields),
            ),
            None => cache::store(),
        };
        Self {
            inner: Arc::new(Inner {
                url: source.as_ref().map(|api| api.resource_url().to_owned()),
                source,
                config,
                writer,
                store,
                listeners: Mutex::new(Vec::new()),
                transforms: Mutex::new(Vec::new()),
                started_transforms,
                synced: watch::Sender::new(false),
                last_sync_resource_version: Mutex::new(None),
                stats: Arc::new(Stats::default()),
                tasks: Mutex::new(Tasks::default()),
                shutdown: CancellationToken::new(),
            }),
        }
    }

    /// The read-only cache (a lister with index queries).
    #[must_use]
    pub fn store(&self) -> Store<K> {
        self.inner.store.clone()
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
            .writer
            .add_index(name, function)
            .map_err(Error::Index)
    }

    /// Changes every object before it is cached (after `managedFields` are stripped); takes
    /// effect for objects received after the informer starts.
    #[doc(alias = "SetTransform")]
    pub fn add_transform(&self, transform: impl Fn(&mut K) + Send + Sync + 'static) {
        self.inner.transforms.lock().push(Arc::new(transform));
    }

    /// Adds a handler with the informer's resync period. If the informer holds objects already,
    /// the handler first gets an add for each of them.
    #[must_use = "the registration tells how far behind the handler is; ignore it with `let _ =`"]
    pub fn add_handler(&self, handler: impl EventHandler<K>) -> Registration<K> {
        self.add_handler_with_resync(handler, self.inner.config.resync)
    }

    /// Adds a handler with its own resync period (`None`: never).
    #[must_use = "the registration tells how far behind the handler is; ignore it with `let _ =`"]
    pub fn add_handler_with_resync(
        &self,
        handler: impl EventHandler<K>,
        resync: Option<Duration>,
    ) -> Registration<K> {
        let listener = Arc::new(Listener::new(Box::new(handler), resync));
        // Lock order: tasks, then listeners (as in `start`), so a concurrent start cannot
        // spawn this listener a second time.
        let mut tasks = self.inner.tasks.lock();
        let mut listeners = self.inner.listeners.lock();
        for obj in self.inner.store.list() {
            listener.push(Change::Added(obj));
        }
        listeners.push(Arc::clone(&listener));
        drop(listeners);
        if tasks.started {
            let spawned = self.spawn_listener(&listener);
            tasks.handles.extend(spawned);
        }
        Registration::new(listener)
    }

    /// Removes a handler: it gets no change after this returns (one it is handling finishes),
    /// its delivery thread and resync timer end, and its buffer is dropped. `false` if it was
    /// not a handler of this informer, or was removed already.
    #[doc(alias = "RemoveEventHandler")]
    #[allow(
        clippy::must_use_candidate,
        reason = "removing is the point; the answer is optional"
    )]
    pub fn remove_handler(&self, registration: &Registration<K>) -> bool {
        let target = registration.listener();
        let mut listeners = self.inner.listeners.lock();
        let before = listeners.len();
        listeners.retain(|l| !Arc::ptr_eq(l, target));
        let removed = listeners.len() < before;
        drop(listeners);
        if removed {
            target.stop();
        }
        removed
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
        for listener in self.inner.listeners.lock().iter() {
            let spawned = self.spawn_listener(listener);
            tasks.handles.extend(spawned);
        }
        // Set once: a second start returned early above.
        let _ = self
            .inner
            .started_transforms
            .set(self.inner.transforms.lock().clone());
        if let Some(api) = &self.inner.source {
            let transforms = self.inner.transforms.lock().clone();
            let reflector = Reflector::new(api.clone(), Arc::clone(&self.inner), transforms);
            let shutdown = self.inner.shutdown.clone();
            tasks.handles.push(tokio::spawn(async move {
                shutdown.run_until_cancelled(reflector.run()).await;
            }));
        }
        Ok(())
    }

    /// Whether the first complete list is in the store.
    #[doc(alias = "HasSynced")]
    #[must_use]
    pub fn has_synced(&self) -> bool {
        *self.inner.synced.borrow()
    }

    /// Waits until the first complete list is in the store.
    ///
    /// # Errors
    /// [`Error::ShutDown`] if the informer is shut down first.
    #[doc(alias = "WaitForCacheSync")]
    pub async fn wait_for_sync(&self) -> Result<()> {
        let mut synced = self.inner.synced.subscribe();
        tokio::select! {
            result = synced.wait_for(|synced| *synced) => result.map(drop).map_err(|_| Error::ShutDown),
            () = self.inner.shutdown.cancelled() => Err(Error::ShutDown),
        }
    }

    /// The resourceVersion of the latest list, event or bookmark the informer has seen.
    #[doc(alias = "LastSyncResourceVersion")]
    #[must_use]
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.inner.last_sync_resource_version.lock().clone()
    }

    /// Request and decode counters of the reflector.
    #[must_use]
    pub fn stats(&self) -> Arc<Stats> {
        Arc::clone(&self.inner.stats)
    }

    /// Stops the reflector, the resync timers and every handler's delivery (after the change a
    /// handler is handling), and waits until all of them have ended.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        for listener in self.inner.listeners.lock().iter() {
            listener.stop();
        }
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
        let mut handles = vec![listener.spawn()];
        if let Some(period) = listener.resync_period() {
            let inner = Arc::clone(&self.inner);
            let listener = Arc::clone(listener);
            let shutdown = self.inner.shutdown.clone();
            handles.push(tokio::spawn(async move {
                shutdown
                    .run_until_cancelled(async move {
                        let mut ticks = tokio::time::interval(period);
                        ticks.tick().await;
                        loop {
                            ticks.tick().await;
                            let _listeners = inner.listeners.lock();
                            if listener.is_stopped() {
                                break;
                            }
                            listener.push_resync(&inner.store.list());
                        }
                    })
                    .await;
            }));
        }
        handles
    }
}

impl<K: Resource + Send + Sync + 'static> Inner<K> {
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    pub(crate) fn stats(&self) -> &Stats {
        &self.stats
    }

    pub(crate) fn writer(&self) -> &Writer<K> {
        &self.writer
    }

    /// Stores a watched object (with its JSON, for a compact store) and tells every handler
    /// what changed.
    pub(crate) fn apply(&self, obj: Arc<K>, json: Option<Vec<u8>>) {
        let listeners = self.listeners.lock();
        if let Some(change) = self.writer.apply_with_json(obj, json) {
            fan_out(&listeners, &change);
        }
    }

    /// Removes a deleted object and tells every handler.
    pub(crate) fn delete(&self, obj: Arc<K>) {
        let listeners = self.listeners.lock();
        if let Some(change) = self.writer.delete(obj) {
            fan_out(&listeners, &change);
        }
    }

    /// Stores one object of a list page (with its JSON, for a compact store).
    pub(crate) fn relist_apply(
        &self,
        relist: &mut Relist<'_, K>,
        obj: Arc<K>,
        json: Option<Vec<u8>>,
    ) {
        let listeners = self.listeners.lock();
        if let Some(change) = relist.apply_with_json(obj, json) {
            fan_out(&listeners, &change);
        }
    }

    /// Ends a complete list: removes what vanished and marks the cache synced.
    pub(crate) fn relist_finish(&self, relist: Relist<'_, K>, resource_version: Option<String>) {
        let listeners = self.listeners.lock();
        for change in relist.finish() {
            fan_out(&listeners, &change);
        }
        drop(listeners);
        self.set_resource_version(resource_version);
        self.synced.send_replace(true);
        self.stats.synced_now();
    }

    pub(crate) fn set_resource_version(&self, resource_version: Option<String>) {
        if let Some(rv) = resource_version {
            *self.last_sync_resource_version.lock() = Some(rv);
        }
    }
}

/// How a compact informer store turns the JSON it keeps back into the cached object: decode,
/// then what the reflector did before caching it (strip `managedFields`, apply the transforms).
fn decoder<K>(transforms: Arc<OnceLock<Vec<Transform<K>>>>, strip_managed_fields: bool) -> Decode<K>
where
    K: Resource + DeserializeOwned + 'static,
{
    Arc::new(move |json: &[u8]| {
        let mut obj: K = serde_json::from_slice(json)?;
        if strip_managed_fields {
            obj.meta_mut().managed_fields = None;
        }
        for transform in transforms.get().into_iter().flatten() {
            transform(&mut obj);
        }
        Ok(obj)
    })
}

fn fan_out<K>(listeners: &[Arc<Listener<K>>], change: &Change<K>)
where
    K: Resource + Send + Sync + 'static,
{
    for listener in listeners {
        listener.push(change.clone());
    }
}

#[cfg(test)]
mod tests;
