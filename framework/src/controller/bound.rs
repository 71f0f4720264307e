//! Binds a controller to a cluster: its handlers on the shared informers, the intake its queues
//! are fed through, its context and metrics.

use std::sync::Arc;

use kube::api::ObjectMeta;
use parking_lot::Mutex;

use super::intake::Intake;
use super::own_writes::{OwnWrites, target_of};
use super::pause::{PausedObjects, passes_any_predicate, requested};
use super::trigger::Wired;
use super::why::{EventType, Reason, Recorder, Trigger};
use super::wiring::{Queues, Wiring};
use super::worker::Shared;
use super::{Cacheable, Cluster, Context, Controller, DEFAULT_CONCURRENCY, Invalid};
use crate::cache::ObjectKey;
use crate::informer::{Hints, change_fns};
use crate::queue::{AddOptions, Priority};

/// A controller bound to a [`Cluster`]: its handlers are registered on the shared informers, so
/// its caches fill as soon as they start; [`Self::run`] works its queue.
///
/// Cheap to clone: clones are the same controller.
pub struct Bound<K> {
    pub(crate) wiring: Arc<Wiring<K>>,
}

impl<K> Clone for Bound<K> {
    fn clone(&self) -> Self {
        Self {
            wiring: Arc::clone(&self.wiring),
        }
    }
}

impl<K> std::fmt::Debug for Bound<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("name", &self.wiring.name)
            .field("concurrency", &self.wiring.concurrency)
            .finish_non_exhaustive()
    }
}

impl<K: Cacheable> Controller<K> {
    /// Binds the controller to `cluster` without a Manager (kube-runtime's `Controller::run`):
    /// registers its handlers on the shared informers of its kind and of what it owns and
    /// watches. Then [`Bound::run`] reconciles until a shutdown future completes.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kubeward::controller::{Action, Cluster, Context, Controller, Reconciler};
    /// # use kubeward::informer::Factory;
    /// # struct Audit;
    /// # impl Reconciler<ConfigMap> for Audit {
    /// #     type Error = kube::Error;
    /// #     async fn reconcile(&self, _: Arc<ConfigMap>, _: &Context<ConfigMap>) -> Result<Action, kube::Error> { Ok(Action::await_change()) }
    /// # }
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = kube::Client::try_default().await?;
    /// let cluster = Cluster::new(Arc::new(Factory::new(client)));
    /// let controller = Controller::new(Audit).bind(&cluster)?;
    /// let ctrl_c = async { tokio::signal::ctrl_c().await.unwrap_or_default() };
    /// controller.run(ctrl_c).await?; // until Ctrl-C, then the reconciles in flight finish
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The first [`Invalid`] value a builder method was given (see
    /// [`check`](Controller::check)); nothing is registered then.
    #[must_use = "a bound controller reconciles nothing until it runs"]
    pub fn bind(self, cluster: &Cluster) -> Result<Bound<K>, Invalid> {
        self.check()?;
        Ok(self.bind_unchecked(cluster))
    }

    /// As [`bind`](Self::bind), for a controller already checked (the Manager checks one when
    /// it is added, before it turns it into a shard).
    pub(crate) fn bind_unchecked(self, cluster: &Cluster) -> Bound<K> {
        debug_assert!(
            self.invalid.is_none(),
            "invariant: a controller is checked before it is bound"
        );
        let name = self.resolved_name();
        let concurrency = self.concurrency.unwrap_or(DEFAULT_CONCURRENCY);
        let factory = &cluster.factory;
        let scope = &cluster.scope;
        let metrics = &cluster.metrics_or_own();

        // The queue belongs to a run (see running.rs): until one runs, and between runs, the
        // handlers below queue nothing.
        let intake = Intake::default();
        let queues = Queues::new(metrics.workqueue(&name), self.rate_limiter);

        let informer = self.kind.watched::<K>(factory, scope);
        let predicate = self.predicate;
        let own_writes = Arc::new(OwnWrites::new(intake.clone(), metrics.echoes(&name)));
        let (own, kind) = (Arc::clone(&own_writes), self.kind.name().to_owned());
        let (on_add, on_update, on_delete) = (intake.clone(), intake.clone(), intake.clone());
        let paused = Arc::new(PausedObjects::new(metrics.paused(&name)));
        let (added, updated, deleted) = (Arc::clone(&paused), Arc::clone(&paused), paused);
        // On the controller's own task (see informer::Listener), never under the informer's
        // lock: the handler turns a change into a key for the queue, after the predicate.
        let registration = informer.add_change_handler(
            change_fns()
                .on_add(move |obj: Arc<K>, hints: Hints| {
                    added.observe(&hints.key, obj.meta());
                    let (options, why) = own_added(hints.listed, obj.meta());
                    on_add.add_with(hints.key, options, why);
                })
                .on_update(move |old: Arc<K>, new: Arc<K>, hints: Hints| {
                    updated.observe(&hints.key, new.meta());
                    // Pausing, resuming and a request for a reconcile get through any predicate.
                    if predicate.as_ref().is_some_and(|p| !p.test(&old, &new))
                        && !passes_any_predicate(old.meta(), new.meta())
                    {
                        return;
                    }
                    let key = hints.key;
                    if Arc::ptr_eq(&old, &new) {
                        // A resync waits behind live changes.
                        let why = Trigger::bare(Reason::Resync);
                        on_update.add_with(key, AddOptions::new().priority(Priority::LOW), why);
                        return;
                    }
                    let why = own_modified(old.meta(), new.meta());
                    // The controller's own status writes and failure reports are no reason to
                    // reconcile again.
                    let target = target_of(&kind, new.meta());
                    if hints.coalesced {
                        own.trigger_coalesced(&target, new.meta(), vec![key], why);
                    } else {
                        own.trigger(&target, new.meta(), vec![key], why);
                    }
                })
                .on_delete(move |gone| {
                    let key = ObjectKey::of(gone.object().as_ref());
                    deleted.forget(&key);
                    let version = gone.object().meta().resource_version.as_deref();
                    let why = Trigger::event(Reason::Event, EventType::Deleted, version);
                    on_delete.add(key, why);
                }),
        );

        let mut wired: Vec<_> = self
            .triggers
            .into_iter()
            .map(|t| t(factory, scope, &intake, &own_writes))
            .collect();
        wired.push(Wired::new(&informer, registration));

        let ctx = Context::new(
            name.clone(),
            informer.store(),
            Arc::clone(factory),
            scope.clone(),
            metrics,
            own_writes,
            self.kind,
        )
        .with_client(cluster.client.clone())
        .with_read_your_writes(self.read_your_writes)
        .with_reporting(self.reporting.clone(), self.to_json);
        #[cfg(feature = "sharding")]
        let ctx = ctx.with_owned_labels(self.owned_labels);
        let recorder = recorder(cluster, self.recorded_reconciles, &name, ctx.kind());
        let shared = Arc::new(Shared {
            ctx,
            reconciler: self.reconciler,
            timeout: self.timeout,
            metrics: metrics.controller(&name, concurrency),
            reporting: self.reporting,
            to_json: self.to_json,
            pending: Arc::clone(intake.pending()),
            recorder,
        });
        Bound {
            wiring: Arc::new(Wiring {
                name,
                factory: Arc::clone(factory),
                informer,
                intake,
                queues,
                shared,
                concurrency,
                wired,
                sources: Mutex::new(self.sources),
                forwarding: Mutex::new(None),
            }),
        }
    }
}

/// How an add of the controller's own kind is queued: objects of the initial list wait behind
/// live changes (with aging).
fn own_added(listed: bool, meta: &ObjectMeta) -> (AddOptions, Trigger) {
    let version = meta.resource_version.as_deref();
    if listed {
        let why = Trigger::event(Reason::Listed, EventType::Added, version);
        (AddOptions::new().priority(Priority::LOW), why)
    } else {
        (
            AddOptions::new(),
            Trigger::event(Reason::Event, EventType::Added, version),
        )
    }
}

/// The trigger of an update of the controller's own kind from `old` to `new`.
fn own_modified(old: &ObjectMeta, new: &ObjectMeta) -> Trigger {
    let reason = if requested(old, new) {
        Reason::Requested
    } else {
        Reason::Event
    };
    Trigger::event(reason, EventType::Modified, new.resource_version.as_deref())
}

/// The flight recorder of the controller `name` of `kind`, keeping `n` reconciles per object,
/// registered where `cluster` says.
fn recorder(cluster: &Cluster, n: usize, name: &str, kind: &super::Kind) -> Arc<Recorder> {
    let recorder = Arc::new(Recorder::new(n));
    if let Some(reconciles) = &cluster.reconciles {
        reconciles.register(name, kind.name(), Arc::clone(&recorder));
    }
    recorder
}

impl<K: Cacheable> Bound<K> {
    /// The controller's name, as in its logs, metrics and Events.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.wiring.name
    }

    /// Whether the cache of the controller's kind has its first complete list (for a readiness
    /// check).
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.wiring.informer.has_synced()
    }

    /// Whether the API server answered the last list or watch of the controller's kind with
    /// 404: it does not serve it (its CRD is not installed), and the controller waits for it.
    pub(crate) fn waits_for_its_kind(&self) -> bool {
        self.wiring.informer.stats().not_served()
    }
}
