//! Assigns a ring's objects to its shards, from their metadata alone.
//!
//! The sharder runs in one replica (under leader election). It caches the ring's shard Leases
//! and the metadata of every object of the ring's kinds, nothing more. Each kind has a work
//! queue fed with an object whenever its labels change, and with every object whenever the set
//! of available shards changes ([`watch_ring`]); its workers apply [`decide`] (to an owned
//! kind, [`decide_owned`]) with a merge patch guarded by the resourceVersion they read. A write
//! that fails is retried with a per-object backoff, and a burst of failures is logged once
//! ([`Failures`]).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{ApiResource, Patch, PatchParams};
use kube::core::{ObjectMeta, PartialObjectMeta, Request};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::SharderMetrics;
use super::assignment::decide_owned;
use super::failures::Failures;
use super::key::KeyOf;
use super::ring_watch::{Ring, View, watch_ring};
use super::shard_leases::tend_shard_leases;
use super::{Decision, controller_key, decide, drain_label, object_key, shard_label};
use crate::cache::ObjectKey;
use crate::error::chain;
use crate::informer::{self, CacheScope, Factory, SharedInformer, Watchable, handler_fns};
use crate::queue::WorkQueue;
use crate::queue::rate_limiter::{ExponentialBackoff, MaxOf, TokenBucket};
#[cfg(feature = "webhooks")]
use crate::webhook::Admission;

/// How the sharder finds an object's ring key: its own, or its controller owner's.
#[derive(Clone)]
pub(crate) struct KindSharder {
    bind: fn(&Factory, &CacheScope, &str, Ring, SharderMetrics) -> Box<dyn SharderRun>,
    /// The kind's assignment webhook in a ring, reading the ring's view.
    #[cfg(feature = "webhooks")]
    admission: fn(&str, Ring, SharderMetrics) -> Admission,
    /// The kind's `group/Kind`.
    group_kind: fn() -> String,
    /// Whether it shards the ring's main kind (by each object's own key).
    main: bool,
    /// The kind, and whether it is namespaced, for the ring's view.
    pub(crate) resource: (ApiResource, bool),
}

impl std::fmt::Debug for KindSharder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KindSharder")
    }
}

impl KindSharder {
    /// The sharder of a ring's main kind `K`, hashed by each object's own key.
    pub(crate) fn main<K: Watchable>() -> Self {
        Self {
            bind: |factory, scope, ring, view, metrics| {
                bind::<K>(factory, scope, ring, view, metrics, (own_key::<K>, true))
            },
            #[cfg(feature = "webhooks")]
            admission: |ring, view, metrics| {
                super::admission::admission::<K>(ring, view, metrics, own_key::<K>)
            },
            group_kind: group_kind::<K>,
            main: true,
            resource: resource_of::<K>(),
        }
    }

    /// Whether it shards the ring's main kind.
    pub(crate) fn is_main(&self) -> bool {
        self.main
    }

    /// The sharder of a kind `C` the ring's controller owns, hashed by each object's controller
    /// owner's key (objects without one are not sharded).
    pub(crate) fn owned<C: Watchable>() -> Self {
        Self {
            bind: |factory, scope, ring, view, metrics| {
                bind::<C>(factory, scope, ring, view, metrics, (controller_key, false))
            },
            #[cfg(feature = "webhooks")]
            admission: |ring, view, metrics| {
                super::admission::admission::<C>(ring, view, metrics, controller_key)
            },
            group_kind: group_kind::<C>,
            main: false,
            resource: resource_of::<C>(),
        }
    }

    /// The webhook that assigns objects of this kind to a shard of `ring` as they are created,
    /// from the available shards in `view`, counted in `metrics`.
    #[cfg(feature = "webhooks")]
    pub(crate) fn admission(&self, ring: &str, view: Ring, metrics: SharderMetrics) -> Admission {
        (self.admission)(ring, view, metrics)
    }

    /// The kind's `group/Kind` (empty group for the core group).
    pub(crate) fn group_kind(&self) -> String {
        (self.group_kind)()
    }
}

/// The ring key of an object of the ring's main kind: its own.
fn own_key<K: Watchable>(meta: &ObjectMeta) -> Option<String> {
    Some(object_key::<K>(
        meta.namespace.as_deref(),
        meta.name.as_deref().filter(|n| !n.is_empty())?,
    ))
}

/// `group/Kind` of `K`.
fn group_kind<K: Watchable>() -> String {
    format!("{}/{}", K::group(&()), K::kind(&()))
}

/// The API resource of `K` and whether it is namespaced.
fn resource_of<K: Watchable>() -> (ApiResource, bool) {
    (ApiResource::erase::<K>(&()), K::NAMESPACED)
}

/// A kind's sharder, bound to its informer, without its kind.
pub(crate) trait SharderRun: Send + Sync {
    /// Assigns objects until `shutdown` is cancelled.
    fn run(&self, shutdown: CancellationToken) -> BoxFuture<'static, Result<(), informer::Error>>;
}

/// The sharder of one ring: its kinds' sharders and the Leases they share.
pub(crate) struct Sharder {
    ring: String,
    leases: SharedInformer<Lease>,
    kinds: Vec<KindSharder>,
    metrics: SharderMetrics,
    dead_lease_ttl: std::time::Duration,
}

impl Sharder {
    /// The sharder of `ring` over `kinds`, reading the ring's Leases through `leases` (an
    /// informer selecting them by [`RING_LABEL`](super::RING_LABEL)), deleting dead Leases
    /// `dead_lease_ttl` after their expiry.
    pub(crate) fn new(
        ring: String,
        leases: SharedInformer<Lease>,
        kinds: Vec<KindSharder>,
        metrics: SharderMetrics,
        dead_lease_ttl: std::time::Duration,
    ) -> Self {
        Self {
            ring,
            leases,
            kinds,
            metrics,
            dead_lease_ttl,
        }
    }

    /// Assigns objects until `shutdown` is cancelled, over the metadata-only informers `factory`
    /// shares in `scope` (the controllers' own).
    ///
    /// # Errors
    /// An informer that shuts down before it synced.
    pub(crate) async fn run(
        self,
        factory: &Factory,
        scope: &CacheScope,
        shutdown: CancellationToken,
    ) -> Result<(), informer::Error> {
        let (tx, rx) = watch::channel(Arc::new(View::default()));
        let sharders: Vec<Box<dyn SharderRun>> = self
            .kinds
            .iter()
            .map(|kind| (kind.bind)(factory, scope, &self.ring, rx.clone(), self.metrics.clone()))
            .collect();
        self.leases.start()?;
        self.leases.wait_for_sync().await?;
        let ring_watch = tokio::spawn(watch_ring(
            self.leases.clone(),
            tx,
            Some(self.metrics.clone()),
            shutdown.clone(),
        ));
        let lease_keeper = tokio::spawn(tend_shard_leases(
            self.leases.clone(),
            factory.client().clone(),
            self.dead_lease_ttl,
            self.metrics.clone(),
            shutdown.clone(),
        ));
        let runs = sharders.iter().map(|s| s.run(shutdown.clone()));
        let results = futures::future::join_all(runs).await;
        ring_watch.abort();
        lease_keeper.abort();
        results.into_iter().collect()
    }
}

/// How many objects of one kind the sharder patches at once.
const WORKERS: usize = 4;

/// How soon a failed label write is retried, doubling per failure of the same object up to
/// [`RETRY_MAX`]. A 409 Conflict means the sharder's cache is behind the API server (it is
/// after a restart of the API server, for a few seconds): retrying within milliseconds, as a
/// controller's queue does, only fails again.
const RETRY_BASE: Duration = Duration::from_millis(250);

/// The longest wait before a failed label write is retried.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// The sharder of objects of `K` in `ring`, keyed by `key_of`, over the metadata-only informer
/// of `K` that `factory` shares in `scope`; `main` when `K` is the ring's main kind (else an
/// owned kind, never drained).
fn bind<K: Watchable>(
    factory: &Factory,
    scope: &CacheScope,
    ring: &str,
    view: Ring,
    metrics: SharderMetrics,
    (key_of, main): (KeyOf, bool),
) -> Box<dyn SharderRun> {
    let sources = scope.sources::<K>();
    Box::new(KindRun {
        informer: factory.informer_over::<PartialObjectMeta<K>>(sources, scope),
        assigner: Arc::new(Assigner {
            shard_label: shard_label(ring),
            drain_label: drain_label(ring),
            view,
            key_of,
            main,
            client: factory.client().clone(),
            metrics,
            failures: Failures::default(),
        }),
    })
}

/// One kind's sharder: its informer and what it does with each object.
struct KindRun<K> {
    informer: SharedInformer<PartialObjectMeta<K>>,
    assigner: Arc<Assigner>,
}

impl<K: Watchable> SharderRun for KindRun<K> {
    fn run(&self, shutdown: CancellationToken) -> BoxFuture<'static, Result<(), informer::Error>> {
        let (informer, assigner) = (self.informer.clone(), Arc::clone(&self.assigner));
        Box::pin(async move {
            let queue: WorkQueue<ObjectKey> = WorkQueue::builder()
                .rate_limiter(MaxOf::new(vec![
                    Box::new(ExponentialBackoff::new(RETRY_BASE, RETRY_MAX)),
                    Box::new(TokenBucket::new(10.0, 100)),
                ]))
                .build();
            let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
            let gone = Arc::clone(&assigner);
            // Only an object's labels matter to the sharder.
            let _registration = informer.add_handler(
                handler_fns()
                    .on_add(move |obj: Arc<PartialObjectMeta<K>>| {
                        on_add.add(ObjectKey::of(obj.as_ref()));
                    })
                    .on_update(
                        move |old: Arc<PartialObjectMeta<K>>, new: Arc<PartialObjectMeta<K>>| {
                            if old.metadata.labels != new.metadata.labels {
                                on_update.add(ObjectKey::of(new.as_ref()));
                            }
                        },
                    )
                    .on_delete(move |deleted| {
                        let meta = &deleted.object().metadata;
                        gone.metrics.forget(&Assigner::object::<K>(meta));
                        on_delete.forget(&ObjectKey::of(deleted.object().as_ref()));
                    }),
            );
            informer.start()?;
            informer.wait_for_sync().await?;
            let store = informer.store();
            let mut tasks = JoinSet::new();
            // Every object again whenever the ring changes.
            let (mut view, everything) = (assigner.view.clone(), queue.clone());
            let all = store.clone();
            tasks.spawn(async move {
                while view.changed().await.is_ok() {
                    for key in all.keys() {
                        everything.add(key);
                    }
                }
            });
            for _ in 0..WORKERS {
                let (queue, store, assigner) =
                    (queue.clone(), store.clone(), Arc::clone(&assigner));
                tasks.spawn(async move {
                    while let Some(key) = queue.get().await {
                        if let Some(obj) = store.get(&key) {
                            match assigner.assign::<K>(&obj.metadata).await {
                                Ok(()) => {
                                    queue.forget(&key);
                                    assigner.failures.succeeded();
                                }
                                Err(error) => {
                                    assigner.failures.failed(&key, &chain(&error));
                                    queue.add_rate_limited(key.clone());
                                }
                            }
                        }
                        queue.done(&key);
                    }
                });
            }
            shutdown.cancelled().await;
            queue.shutdown();
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
            Ok(())
        })
    }
}

/// Assigns, drains or keeps one object at a time.
struct Assigner {
    shard_label: String,
    drain_label: String,
    view: Ring,
    key_of: KeyOf,
    /// Whether the kind is the ring's main kind; objects of an owned kind are never drained.
    main: bool,
    client: Client,
    metrics: SharderMetrics,
    /// The writes that failed since the last success.
    failures: Failures,
}

impl Assigner {
    /// How the metrics name the object of kind `K` with metadata `meta`.
    fn object<K: Watchable>(meta: &ObjectMeta) -> String {
        format!(
            "{}/{}/{}",
            K::plural(&()),
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        )
    }

    /// Applies [`decide`] (or [`decide_owned`]) to the object of kind `K` with metadata `meta`.
    async fn assign<K: Watchable>(&self, meta: &ObjectMeta) -> Result<(), kube::Error> {
        let Some(key) = (self.key_of)(meta) else {
            return Ok(());
        };
        let labels = meta.labels.as_ref();
        let current = labels
            .and_then(|l| l.get(&self.shard_label))
            .map(String::as_str);
        let draining = labels.is_some_and(|l| l.contains_key(&self.drain_label));
        let view = Arc::clone(&self.view.borrow());
        let desired = view.ring.shard_for(&key);
        let decision = if self.main {
            decide(current, draining, desired, &view.available)
        } else {
            decide_owned(current, draining, desired)
        };
        let object = Self::object::<K>(meta);
        let labels = match &decision {
            Decision::Keep => {
                if current.is_some() && !draining {
                    // Handed back and assigned by someone else (the assignment webhook, in the
                    // write that removed the labels): the handover has ended all the same.
                    self.metrics.handed_over(&object);
                }
                return Ok(());
            }
            Decision::Assign(shard) => serde_json::json!({
                self.shard_label.as_str(): shard,
                self.drain_label.as_str(): null,
            }),
            Decision::Drain => serde_json::json!({ self.drain_label.as_str(): "true" }),
        };
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": meta.resource_version, "labels": labels }
        });
        let name = meta.name.as_deref().unwrap_or_default();
        let request = Request::new(K::url_path(&(), meta.namespace.as_deref()))
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .map_err(kube::Error::BuildRequest)?;
        self.client.request_text(request).await?;
        match decision {
            Decision::Assign(shard) => {
                self.metrics.assigned(&shard);
                self.metrics.handed_over(&object);
            }
            Decision::Drain => self.metrics.drained(&object),
            Decision::Keep => {}
        }
        Ok(())
    }
}

// They run the sharder against the testing kit's fake API server.
#[cfg(test)]
#[path = "tests/sharder.rs"]
mod tests;
