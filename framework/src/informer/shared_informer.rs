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
mod tests {
    use std::collections::HashMap;
    use std::sync::mpsc;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;
    use crate::cache::ObjectKey;
    use crate::informer::handler_fns;

    fn cm(name: &str, rv: u64) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some(name.into()),
                resource_version: Some(rv.to_string()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    fn rv(obj: &ConfigMap) -> u64 {
        obj.metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok())
            .unwrap_or_default()
    }

    fn name(obj: &ConfigMap) -> String {
        obj.metadata.name.clone().unwrap_or_default()
    }

    /// Polls `done` (the handlers run on their own threads) for up to 10 s.
    async fn eventually(what: &str, done: impl Fn() -> bool) {
        for _ in 0..1000 {
            if done() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("timed out waiting for {what}");
    }

    /// Latest resourceVersion each handler saw per object name.
    fn recording_handler(seen: &Arc<Mutex<HashMap<String, u64>>>) -> impl EventHandler<ConfigMap> {
        let (on_add, on_update) = (Arc::clone(seen), Arc::clone(seen));
        handler_fns()
            .on_add(move |obj: Arc<ConfigMap>| {
                on_add.lock().insert(name(&obj), rv(&obj));
            })
            .on_update(move |_, new: Arc<ConfigMap>| {
                on_update.lock().insert(name(&new), rv(&new));
            })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_removed_handler_gets_nothing_more_and_the_others_keep_receiving() {
        let informer = SharedInformer::<ConfigMap>::with_source(None, Config::default());
        let (kept_seen, removed_seen) = (Arc::default(), Arc::default());
        let _kept = informer.add_handler(recording_handler(&kept_seen));
        let removed = informer.add_handler(recording_handler(&removed_seen));
        informer.start().expect("inside a runtime");
        informer.inner.apply(cm("before", 1), None);
        eventually("both handlers to see the first object", || {
            kept_seen.lock().contains_key("before") && removed_seen.lock().contains_key("before")
        })
        .await;

        assert!(informer.remove_handler(&removed), "it was registered");
        assert!(!informer.remove_handler(&removed), "it is gone already");
        informer.inner.apply(cm("after", 2), None);
        assert_eq!(
            removed.pending(),
            0,
            "nothing is buffered for a removed handler"
        );
        eventually("the kept handler to see the second object", || {
            kept_seen.lock().contains_key("after")
        })
        .await;
        assert!(!removed_seen.lock().contains_key("after"));
        informer.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_blocked_handler_delays_no_other_and_buffers_at_most_one_change_per_object() {
        let informer = SharedInformer::<ConfigMap>::with_source(None, Config::default());
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let gate_rx = Mutex::new(gate_rx);
        let slow_seen = Arc::new(Mutex::new(HashMap::new()));
        let slow_record = Arc::clone(&slow_seen);
        let slow = informer.add_handler(
            handler_fns()
                .on_add(move |obj: Arc<ConfigMap>| {
                    // Blocks on the first change until the test opens the gate: a handler stuck in I/O.
                    let _ = gate_rx.lock().recv();
                    slow_record.lock().insert(name(&obj), rv(&obj));
                })
                .on_update({
                    let seen = Arc::clone(&slow_seen);
                    move |_, new: Arc<ConfigMap>| {
                        seen.lock().insert(name(&new), rv(&new));
                    }
                }),
        );
        let fast_seen = Arc::new(Mutex::new(HashMap::new()));
        let _fast = informer.add_handler(recording_handler(&fast_seen));
        informer.start().expect("inside a runtime");

        let mut version = 0;
        for i in 0..100 {
            version += 1;
            informer.inner.apply(cm(&format!("cm-{i}"), version), None);
        }
        for round in 0..1000 {
            for i in 0..100 {
                version += 1;
                informer.inner.apply(cm(&format!("cm-{i}"), version), None);
            }
            assert!(
                slow.pending() <= 100,
                "round {round}: {} pending",
                slow.pending()
            );
        }
        let last = version;
        let expected = |seen: &Mutex<HashMap<String, u64>>| {
            let seen = seen.lock();
            seen.len() == 100
                && (0..100).all(|i| seen.get(&format!("cm-{i}")) == Some(&(last - 99 + i)))
        };
        eventually(
            "the fast handler to see the last state of all 100 objects",
            || expected(&fast_seen),
        )
        .await;
        assert!(
            slow_seen.lock().is_empty(),
            "the slow handler is still blocked on its first change"
        );
        assert!(
            slow.pending() <= 100,
            "{} pending changes for 100 objects",
            slow.pending()
        );

        drop(gate_tx);
        eventually(
            "the slow handler to catch up with the latest states",
            || expected(&slow_seen),
        )
        .await;
        informer.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_handler_added_after_start_first_gets_an_add_for_each_cached_object() {
        let informer = SharedInformer::<ConfigMap>::with_source(None, Config::default());
        informer.start().expect("inside a runtime");
        informer.inner.apply(cm("a", 1), None);
        informer.inner.apply(cm("b", 2), None);

        let store = informer.store();
        let events = Arc::new(Mutex::new(Vec::new()));
        let (adds, updates) = (Arc::clone(&events), Arc::clone(&events));
        let _late = informer.add_handler(
            handler_fns()
                .on_add(move |obj: Arc<ConfigMap>| {
                    // Panics in handlers are caught, so a broken promise is recorded instead.
                    let cached = store.get(&ObjectKey::of(obj.as_ref())).is_some();
                    let uncached = if cached {
                        ""
                    } else {
                        " (not in the store yet)"
                    };
                    adds.lock()
                        .push(format!("add {} {}{uncached}", name(&obj), rv(&obj)));
                })
                .on_update(move |old: Arc<ConfigMap>, new: Arc<ConfigMap>| {
                    updates.lock().push(format!(
                        "update {} {}->{}",
                        name(&new),
                        rv(&old),
                        rv(&new)
                    ));
                }),
        );
        informer.inner.apply(cm("a", 3), None);
        let finished = |seen: &[String]| {
            seen.iter().any(|e| e == "add b 2")
                && seen.iter().any(|e| e == "add a 3" || e == "update a 1->3")
        };
        eventually("the replay and the later update", || {
            finished(&events.lock())
        })
        .await;
        let mut seen = events.lock().clone();
        seen.sort();
        // The update to `a` may coalesce with its replayed add into one add of the latest state.
        assert!(
            seen == ["add a 1", "add b 2", "update a 1->3"] || seen == ["add a 3", "add b 2"],
            "unexpected deliveries: {seen:?}"
        );
        informer.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn resync_redelivers_every_cached_object_as_an_update_of_itself() {
        let informer = SharedInformer::<ConfigMap>::with_source(None, Config::default());
        informer.inner.apply(cm("a", 1), None);
        informer.inner.apply(cm("b", 1), None);
        let resyncs = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
        let record = Arc::clone(&resyncs);
        let _registration = informer.add_handler_with_resync(
            handler_fns().on_update(move |old: Arc<ConfigMap>, new: Arc<ConfigMap>| {
                // A resync hands the cached object as both old and new.
                let what = if Arc::ptr_eq(&old, &new) {
                    name(&new)
                } else {
                    "a real update".into()
                };
                *record.lock().entry(what).or_default() += 1;
            }),
            Some(Duration::from_millis(100)),
        );
        let unwanted = Arc::new(Mutex::new(0));
        let count_unwanted = Arc::clone(&unwanted);
        let _without = informer.add_handler_with_resync(
            handler_fns().on_update(move |_, _: Arc<ConfigMap>| *count_unwanted.lock() += 1),
            None,
        );
        informer.start().expect("inside a runtime");
        eventually("two resyncs of both objects", || {
            let resyncs = resyncs.lock();
            resyncs.len() == 2 && resyncs.values().all(|n| *n >= 2)
        })
        .await;
        assert_eq!(
            resyncs.lock().len(),
            2,
            "only resyncs of a and b: {:?}",
            resyncs.lock()
        );
        assert_eq!(
            *unwanted.lock(),
            0,
            "a handler without a resync period got updates"
        );
        informer.shutdown().await;
    }

    #[tokio::test]
    async fn a_compact_informer_reads_back_what_it_cached_with_the_transforms_applied()
    -> anyhow::Result<()> {
        let informer = SharedInformer::<ConfigMap>::with_source(None, Config::default().compact(4));
        informer.add_transform(|obj: &mut ConfigMap| {
            obj.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert("seen".into(), "yes".into());
        });
        let added = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&added);
        let _registration = informer
            .add_handler(handler_fns().on_add(move |obj: Arc<ConfigMap>| record.lock().push(obj)));
        informer.start()?;
        let raw = serde_json::json!({
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7",
                         "managedFields": [{"manager": "kubectl"}]},
            "data": {"k": "v"}
        });
        // What the reflector caches: decoded, stripped, transformed; and the raw JSON.
        let mut cached: ConfigMap = serde_json::from_value(raw.clone())?;
        cached.metadata.managed_fields = None;
        cached
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("seen".into(), "yes".into());
        informer
            .inner
            .apply(Arc::new(cached.clone()), Some(serde_json::to_vec(&raw)?));

        let store = informer.store();
        assert!(store.is_compact());
        assert_eq!(
            store.get(&ObjectKey::new(Some("ns"), "a")).as_deref(),
            Some(&cached)
        );
        eventually("the handler to hear of the add", || added.lock().len() == 1).await;
        assert_eq!(added.lock().first().map(AsRef::as_ref), Some(&cached));
        informer.shutdown().await;
        Ok(())
    }

    #[tokio::test]
    async fn shutdown_ends_every_task_and_wait_for_sync_reports_it() {
        let informer = SharedInformer::<ConfigMap>::with_source(
            None,
            Config::default().resync(Duration::from_secs(1)),
        );
        let _registration = informer.add_handler(handler_fns());
        informer.start().expect("inside a runtime");
        assert!(!informer.has_synced());
        informer.shutdown().await;
        assert!(informer.inner.tasks.lock().handles.is_empty());
        assert!(matches!(
            informer.wait_for_sync().await,
            Err(Error::ShutDown)
        ));
    }
}
