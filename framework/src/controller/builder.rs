//! Builds a controller: its kind, what it owns and watches, predicates, concurrency and limits.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt as _};
use kube::core::PartialObjectMeta;

#[cfg(feature = "sharding")]
use super::drain::Draining;
use super::erased::{ErasedReconciler, erase, erase_finalized};
use super::failure::{Reporting, ToJson};
use super::invalid::Invalid;
use super::source::Source;
use super::trigger::{Wire, owner_trigger, watch_trigger};
use super::why::DEFAULT_RECORDED_RECONCILES;
use super::{Cacheable, Cleanup, Kind, Predicate, Reconciler, Watchable};
use crate::cache::ObjectKey;
use crate::crd::CustomResourceDefinition;
use crate::queue::RateLimiter;
use crate::rbac::PolicyRule;
#[cfg(feature = "sharding")]
use crate::sharding::{KindSharder, OwnedLabels, drain_label};

/// How many reconciles of one controller run at once unless set: one, as in controller-runtime
/// (`--max-concurrent-reconciles` raises the default for every controller of a manager).
pub const DEFAULT_CONCURRENCY: u16 = 1;

/// How long a cached read of a reconcile waits at most for the informer to bring in the
/// controller's own writes, unless set (see [`Controller::read_your_writes_timeout`]).
pub const DEFAULT_READ_YOUR_WRITES_TIMEOUT: Duration = Duration::from_secs(5);

/// A controller of kind `K`: reconciles each object of `K` whenever it, an object it owns or one
/// it watches changes. Hand it to a Manager, or [bind](Self::bind) it to a [`Cluster`](super::Cluster)
/// and run it yourself.
///
/// Its methods chain: one given a value the controller cannot run with (`concurrency(0)`, a
/// finalizer without a domain) keeps the mistake as an [`Invalid`](super::Invalid), which
/// [`check`](Self::check) and `bind` return and a Manager fails with.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use k8s_openapi::api::{apps::v1::Deployment, core::v1::{ConfigMap, Pod}};
/// # use kubeward::controller::{Action, Cleanup, Context, Controller, Predicate, Reconciler};
/// # use kubeward::cache::ObjectKey;
/// # struct R;
/// # impl Reconciler<Deployment> for R {
/// #     type Error = kube::Error;
/// #     async fn reconcile(&self, _: Arc<Deployment>, _: &Context<Deployment>) -> Result<Action, kube::Error> { Ok(Action::await_change()) }
/// # }
/// # impl Cleanup<Deployment> for R {
/// #     async fn cleanup(&self, _: Arc<Deployment>, _: &Context<Deployment>) -> Result<(), kube::Error> { Ok(()) }
/// # }
/// let controller = Controller::with_finalizer(R, "example.com/cleanup")
///     .owns::<Pod>()
///     .watches::<ConfigMap>(|cm| vec![ObjectKey::new(cm.metadata.namespace.as_deref(), "web")])
///     .predicate(Predicate::generation_changed().or(Predicate::labels_changed()))
///     .concurrency(4);
/// # let _ = controller;
/// ```
#[must_use]
pub struct Controller<K> {
    /// The kind reconciled, from `K` or given at run time.
    pub(crate) kind: Kind,
    pub(crate) reconciler: Arc<dyn ErasedReconciler<K>>,
    pub(crate) name: Option<String>,
    pub(crate) concurrency: Option<u16>,
    pub(crate) rate_limiter: Option<Box<dyn RateLimiter<ObjectKey>>>,
    pub(crate) timeout: Option<Duration>,
    /// How many reconciles of each object the flight recorder keeps (0: none).
    pub(crate) recorded_reconciles: usize,
    /// How long a cached read waits for the controller's own writes; `None`: it never waits.
    pub(crate) read_your_writes: Option<Duration>,
    /// The finalizer the reconciler runs behind, for `Debug` (the erased reconciler holds it).
    pub(crate) finalizer: Option<String>,
    pub(crate) predicate: Option<Predicate<K>>,
    pub(crate) triggers: Vec<Wire>,
    pub(crate) sources: Vec<Source>,
    /// The kind's CRD, for the manager's `crd` and `manifests` subcommands.
    pub(crate) crd: Option<CustomResourceDefinition>,
    /// The controller's RBAC rules, for the manager's `manifests` subcommand.
    pub(crate) rbac: Option<Vec<PolicyRule>>,
    pub(crate) reporting: Reporting,
    pub(crate) to_json: ToJson<K>,
    /// The controller ring it belongs to, if it can be sharded.
    pub(crate) ring: Option<String>,
    /// The first value a builder method was given that the controller cannot run with.
    pub(crate) invalid: Option<Invalid>,
    /// The sharders of its kind and the kinds it owns, for a sharded run.
    #[cfg(feature = "sharding")]
    pub(crate) kinds: Vec<KindSharder>,
    /// On a shard: the label it sets on the owned objects it applies.
    #[cfg(feature = "sharding")]
    pub(crate) owned_labels: Option<Arc<OwnedLabels>>,
}

impl<K> std::fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("kind", &self.kind.name())
            .field("name", &self.name)
            .field("concurrency", &self.concurrency)
            .field("timeout", &self.timeout)
            .field("recorded_reconciles", &self.recorded_reconciles)
            .field("read_your_writes", &self.read_your_writes)
            .field("finalizer", &self.finalizer)
            .field("triggers", &self.triggers.len())
            .field("sources", &self.sources.len())
            .field("reporting", &self.reporting)
            .field("ring", &self.ring)
            .field("invalid", &self.invalid)
            .finish_non_exhaustive()
    }
}

impl<K: Watchable> Controller<K> {
    /// A controller that calls `reconciler` for objects of `K`. (`K: Serialize`, as every
    /// Kubernetes kind is: a failed reconcile is reported on the object's status.)
    pub fn new(reconciler: impl Reconciler<K>) -> Self
    where
        K: serde::Serialize,
    {
        Self::assemble(Kind::of::<K>(), erase(reconciler), None).shardable()
    }

    /// A controller that calls `reconciler` for objects of `K` behind the finalizer `finalizer`
    /// (a qualified name like `example.com/cleanup`): the finalizer is added before the first
    /// reconcile of an object; once the object is being deleted, [`Cleanup::cleanup`] runs
    /// instead of `reconcile`, and the finalizer is removed when it succeeds. The reconciler
    /// must implement [`Cleanup`], so a finalizer never lacks its cleanup, nor a cleanup its
    /// finalizer.
    ///
    /// # Errors
    /// If `finalizer` is not a qualified name with a domain, the controller keeps
    /// [`Invalid::Finalizer`], which [`check`](Self::check) and [`bind`](Self::bind) return.
    pub fn with_finalizer(reconciler: impl Cleanup<K>, finalizer: impl Into<String>) -> Self
    where
        K: serde::Serialize,
    {
        let finalizer = finalizer.into();
        let checked = check_finalizer("with_finalizer", &finalizer);
        Self::assemble(
            Kind::of::<K>(),
            erase_finalized(reconciler, finalizer.clone()),
            Some(finalizer),
        )
        .shardable()
        .keep_first(checked)
    }

    /// With the sharder of its own kind first among `kinds`: a controller of a compiled kind
    /// can be sharded (one over a kind found at run time cannot yet).
    #[cfg(feature = "sharding")]
    fn shardable(mut self) -> Self {
        self.kinds.insert(0, KindSharder::main::<K>());
        self
    }

    /// Without the feature `sharding`, the controller as it is.
    #[cfg(not(feature = "sharding"))]
    fn shardable(self) -> Self {
        self
    }
}

impl<K: Cacheable> Controller<K> {
    /// A controller of `kind` that runs `reconciler` (behind `finalizer`, if any).
    pub(super) fn assemble(
        kind: Kind,
        reconciler: Arc<dyn ErasedReconciler<K>>,
        finalizer: Option<String>,
    ) -> Self
    where
        K: serde::Serialize,
    {
        Self {
            kind,
            reconciler,
            name: None,
            concurrency: None,
            rate_limiter: None,
            timeout: None,
            recorded_reconciles: DEFAULT_RECORDED_RECONCILES,
            read_your_writes: Some(DEFAULT_READ_YOUR_WRITES_TIMEOUT),
            finalizer,
            predicate: None,
            triggers: Vec::new(),
            sources: Vec::new(),
            crd: None,
            rbac: None,
            reporting: Reporting::default(),
            to_json: |obj: &K| serde_json::to_value(obj),
            ring: None,
            invalid: None,
            #[cfg(feature = "sharding")]
            kinds: Vec::new(),
            #[cfg(feature = "sharding")]
            owned_labels: None,
        }
    }

    /// The controller's name, unique within a manager: in logs, metrics and Events. Defaults to
    /// the kind in lower case.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Reconciles running at once (different objects; one object is never reconciled twice at
    /// once). Defaults to [`DEFAULT_CONCURRENCY`] (under a Manager, to its
    /// `--max-concurrent-reconciles`).
    ///
    /// # Errors
    /// If `n` is 0 (a controller without workers would never reconcile anything), the
    /// controller keeps [`Invalid::ZeroConcurrency`], which [`check`](Self::check) and
    /// [`bind`](Self::bind) return.
    pub fn concurrency(mut self, n: u16) -> Self {
        if n == 0 {
            return self.keep_first(Err(Invalid::ZeroConcurrency));
        }
        self.concurrency = Some(n);
        self
    }

    /// How failed reconciles are spaced out; defaults to client-go's `DefaultControllerRateLimiter`.
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<ObjectKey> + 'static) -> Self {
        self.rate_limiter = Some(Box::new(limiter));
        self
    }

    /// A reconcile that runs longer fails with a timeout error (and is retried). None by default.
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How many reconciles of each object the flight recorder keeps (default
    /// [`DEFAULT_RECORDED_RECONCILES`]; 0 turns it off): their triggers, timing, result and
    /// writes, served at `/debug/reconciles/NAMESPACE/NAME` on the metrics port and printed by
    /// the operator's `why` subcommand. Writes are recorded when they go through the context's
    /// client with [read-your-writes](Self::read_your_writes) on (the default). See the book's
    /// Observability page.
    pub fn recorded_reconciles(mut self, n: usize) -> Self {
        self.recorded_reconciles = n;
        self
    }

    /// Whether a reconcile's cached reads wait for the controller's own writes (on by default).
    ///
    /// On, every write through the [`Context`](super::Context)'s client (its `client()`,
    /// `apply`, `patch_status`, `prune`, finalizers) notes the resourceVersion the API server
    /// returned, or the uid a delete removed; a later read of that object from the cache
    /// (the object a reconcile is handed, `ctx.get`, `ctx.list`) first waits until the informer
    /// has brought the write in, for at most [`Self::read_your_writes_timeout`]. So a reconcile
    /// never acts on a cache older than its controller's last write: no second object created
    /// with `generateName`, no 409 Conflict from a stale resourceVersion.
    ///
    /// On, it also keeps expectations: the creates with `generateName`, writes of objects the
    /// reconciled object controls, and deletes a reconcile makes through the context's client
    /// are expected of the object it reconciles, and that object's next reconcile waits until
    /// the owned kind's cache shows them (for at most the same timeout;
    /// `kubeward_expectations_timeouts_total` counts those it stopped waiting for), whatever
    /// way the reconcile then reads the cache (`ctx.store()`, `ctx.owned`, a lister).
    ///
    /// Off, reads never wait and nothing is expected, as in controller-runtime and kube-runtime
    /// by default. See the book's cache page.
    pub fn read_your_writes(mut self, on: bool) -> Self {
        self.read_your_writes = on.then_some(
            self.read_your_writes
                .unwrap_or(DEFAULT_READ_YOUR_WRITES_TIMEOUT),
        );
        self
    }

    /// How long a cached read waits at most for the controller's own writes (default
    /// [`DEFAULT_READ_YOUR_WRITES_TIMEOUT`]); then it reads the cache as it is, and
    /// `kubeward_cache_wait_timeouts_total` counts it. Turns [`Self::read_your_writes`] on.
    pub fn read_your_writes_timeout(mut self, timeout: Duration) -> Self {
        self.read_your_writes = Some(timeout);
        self
    }

    /// Filters updates of `K` (adds and deletes always pass). Combine predicates with
    /// [`Predicate::and`] / [`Predicate::or`].
    ///
    /// A predicate runs on the informer's task as each change is cached, before the key is
    /// queued: keep it a quick comparison of the two states, never I/O or a lock held elsewhere,
    /// or it delays every handler of the informer.
    pub fn predicate(mut self, predicate: Predicate<K>) -> Self {
        self.predicate = Some(predicate);
        self
    }

    /// Reconciles the controlling owner (an ownerReference of kind `K` with `controller: true`)
    /// whenever an object of `C` changes.
    pub fn owns<C: Watchable>(mut self) -> Self {
        self.triggers.push(owner_trigger::<C>(self.kind.clone()));
        #[cfg(feature = "sharding")]
        self.kinds.push(KindSharder::owned::<C>());
        self
    }

    /// As [`owns`](Self::owns), caching only the metadata of `C` (controller-runtime's
    /// `OnlyMetadata`): the owner and generation of an owned Secret or large ConfigMap without
    /// its body. Controllers owning the same kind this way share one metadata informer of it.
    pub fn owns_metadata<C: Watchable>(mut self) -> Self
    where
        PartialObjectMeta<C>: Watchable,
    {
        self.triggers
            .push(owner_trigger::<PartialObjectMeta<C>>(self.kind.clone()));
        #[cfg(feature = "sharding")]
        self.kinds.push(KindSharder::owned::<C>());
        self
    }

    /// Reconciles the objects of `K` that `mapper` names whenever an object of `W` changes.
    pub fn watches<W: Watchable>(
        mut self,
        mapper: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        self.triggers.push(watch_trigger::<W>(mapper));
        self
    }

    /// As [`watches`](Self::watches), caching only the metadata of `W`: `mapper` reads its
    /// names, labels, annotations and owners.
    pub fn watches_metadata<W: Watchable>(
        self,
        mapper: impl Fn(&PartialObjectMeta<W>) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self
    where
        PartialObjectMeta<W>: Watchable,
    {
        self.watches::<PartialObjectMeta<W>>(mapper)
    }

    /// Reconciles every key `keys` yields, from outside the informers: a timer, a webhook, another
    /// system's events (controller-runtime's channel source, kube-runtime's `reconcile_on`). Keys
    /// join the queue once the controller runs and are deduplicated like any other; a key whose
    /// object is not in the cache is skipped.
    pub fn reconcile_on(mut self, keys: impl Stream<Item = ObjectKey> + Send + 'static) -> Self {
        self.sources.push(keys.boxed());
        self
    }

    /// The CustomResourceDefinition of `K`, which the manager's `crd` subcommand prints and its
    /// `manifests` subcommand writes into the chart. `#[derive(Controller)]` sets it to
    /// [`Definition::definition`](crate::crd::Definition::definition); a controller of a built-in
    /// kind has none.
    pub fn crd(mut self, crd: CustomResourceDefinition) -> Self {
        self.crd = Some(crd);
        self
    }

    /// The RBAC rules the controller needs, which the manager's `manifests` subcommand merges
    /// with the other controllers' into the chart's rules file. `#[derive(Controller)]` sets them
    /// to `Kind::rbac_rules()`; for a controller built by hand, make them with
    /// [`rbac::Rules`](crate::rbac::Rules).
    pub fn rbac_rules(mut self, rules: Vec<PolicyRule>) -> Self {
        self.rbac = Some(rules);
        self
    }

    /// Whether a failed reconcile records a Warning Event with reason `ReconcileError` and the
    /// error's message about the object (shown by `kubectl describe`). On by default; the
    /// controller needs `create` and `patch` on `events.k8s.io` events (the derive's RBAC rules
    /// include them). A 409 Conflict is never reported.
    pub fn report_errors_as_events(mut self, on: bool) -> Self {
        self.reporting.events = on;
        self
    }

    /// Whether a failed reconcile of a custom resource sets its status condition ([`Self::condition`],
    /// `Ready` by default) to `False`, with the API error's reason (e.g. `Invalid`) or
    /// `ReconcileError` and the error's message, and its status' `observedGeneration` (when the
    /// status has one) to the generation that failed, by a merge patch of the status
    /// subresource. On by default; built-in kinds are never written. The update this write
    /// causes does not trigger another reconcile. Turn it off when the status has no
    /// `conditions` list of `metav1.Condition`s.
    pub fn report_errors_on_status(mut self, on: bool) -> Self {
        self.reporting.status = on;
        self
    }

    /// Whether the controller's condition ([`Self::condition`]) starts `Unknown`: on an object
    /// whose status lacks it, a reconcile sets it `Unknown` with reason `Reconciling`, in the
    /// status write of the reconcile kit ([`Context::report`](super::Context::report),
    /// [`Context::patch_status`](super::Context::patch_status)) when the reconcile makes one, or
    /// in a write of its own after a reconcile that succeeds without one (a failure sets it
    /// `False` anyway). What kubebuilder's tutorials write by hand first thing in every
    /// reconcile. On by default, for custom resources while
    /// [`report_errors_on_status`](Self::report_errors_on_status) is on;
    /// `#[controller(initial_condition = false)]` turns it off.
    pub fn initial_condition(mut self, on: bool) -> Self {
        self.reporting.initial = on;
        self
    }

    /// Whether each owned object [`Context::apply`](super::Context::apply) creates or updates
    /// records a Normal Event about the owner: reason `Created` or `Updated`, note `Created
    /// Deployment web`. Off by default; `#[controller(owned_events = true)]` turns it on.
    pub fn owned_events(mut self, on: bool) -> Self {
        self.reporting.owned_events = on;
        self
    }

    /// Names the status condition failures are reported on (`Ready` by default): `Available`
    /// for an operator that follows kubebuilder's convention, or any other type the reconciler
    /// keeps. `#[controller(condition = "...")]` sets it, and the CRD's printer columns show
    /// the same condition.
    ///
    /// # Errors
    /// If `type_` is not a valid condition type (a qualified name such as `Available` or
    /// `example.com/Synced`), the controller keeps [`Invalid::Condition`], which
    /// [`check`](Self::check) and [`bind`](Self::bind) return.
    pub fn condition(mut self, type_: &str) -> Self {
        if let Err(reason) = crate::names::qualified_name(type_) {
            return self.keep_first(Err(Invalid::Condition {
                type_: type_.to_owned(),
                reason,
            }));
        }
        self.reporting.condition = std::sync::Arc::from(type_);
        self
    }

    /// Puts the controller in the controller ring `ring` (by default, the ring named like the
    /// controller). On a manager that runs as a shard of its ring (`--shard-ring`), it
    /// reconciles and caches only the objects assigned to this shard (and the objects they
    /// own), and the manager's leader runs the sharder that assigns them; elsewhere it runs as
    /// any controller. See [`sharding`](crate::sharding). Without the feature `sharding` it
    /// only names the ring, and the controller always runs unsharded.
    ///
    /// # Errors
    /// If `ring` cannot name a Lease and a label value (1-63 lower-case letters, digits, `-` and
    /// `.`, each dot-separated part starting and ending with a letter or digit), the controller
    /// keeps [`Invalid::Ring`], which [`check`](Self::check) and [`bind`](Self::bind) return.
    pub fn ring(mut self, ring: impl Into<String>) -> Self {
        let ring = ring.into();
        if let Err(reason) = crate::names::short_dns_subdomain(&ring) {
            return self.keep_first(Err(Invalid::Ring { ring, reason }));
        }
        self.ring = Some(ring);
        self
    }

    /// Whether the controller can run as a shard of its ring: its own kind has a sharder.
    #[cfg(feature = "sharding")]
    pub(crate) fn can_shard(&self) -> bool {
        self.kinds.first().is_some_and(KindSharder::is_main)
    }

    /// The controller as one shard of its ring runs it: objects the sharder drains are handed
    /// back instead of reconciled, and the owned objects it applies carry their owner's shard.
    /// A drain label that appears always reaches the queue, whatever the controller's predicate
    /// (`generation_changed` would drop it, and the object would stay on this shard until its
    /// spec changes).
    #[cfg(feature = "sharding")]
    pub(crate) fn into_shard(mut self) -> Self {
        if let Some(ring) = &self.ring {
            self.reconciler = Arc::new(Draining::new(self.reconciler, ring));
            let owned = self.kinds.iter().filter(|k| !k.is_main());
            let owned = OwnedLabels::new(ring, owned.map(KindSharder::group_kind));
            self.owned_labels = Some(Arc::new(owned));
            if let Some(predicate) = self.predicate.take() {
                let drain = drain_label(ring);
                let drained = Predicate::new(move |old: &K, new: &K| {
                    let has = |o: &K| {
                        o.meta()
                            .labels
                            .as_ref()
                            .is_some_and(|l| l.contains_key(&drain))
                    };
                    has(new) && !has(old)
                });
                self.predicate = Some(predicate.or(drained));
            }
        }
        self
    }

    /// The controller's name: the one set, else the kind in lower case.
    pub(crate) fn resolved_name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| self.kind.name().to_ascii_lowercase())
    }

    /// Whether [`Self::concurrency`] was set.
    pub(crate) fn has_concurrency(&self) -> bool {
        self.concurrency.is_some()
    }
}

impl<K> Controller<K> {
    /// Whether the controller can run: the first value one of its builder methods was given
    /// that it cannot run with, as controller-runtime's `Complete` returns it.
    /// [`bind`](Self::bind) checks it too, and so does a Manager the controller is added to.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kubeward::controller::{Action, Context, Controller, Invalid, Reconciler};
    /// # struct Audit;
    /// # impl Reconciler<ConfigMap> for Audit {
    /// #     type Error = kube::Error;
    /// #     async fn reconcile(&self, _: Arc<ConfigMap>, _: &Context<ConfigMap>) -> Result<Action, kube::Error> { Ok(Action::await_change()) }
    /// # }
    /// let controller = Controller::new(Audit).concurrency(0).name("audit");
    /// assert_eq!(controller.check(), Err(Invalid::ZeroConcurrency));
    /// ```
    ///
    /// # Errors
    /// The first [`Invalid`] value given, naming the method and the value; later mistakes
    /// wait until it is fixed.
    pub fn check(&self) -> Result<(), Invalid> {
        self.invalid.clone().map_or(Ok(()), Err)
    }

    /// The controller with `checked`'s mistake kept, unless it keeps an earlier one.
    pub(super) fn keep_first(mut self, checked: Result<(), Invalid>) -> Self {
        if let Err(mistake) = checked {
            self.invalid.get_or_insert(mistake);
        }
        self
    }
}

/// Whether the API server would take `finalizer`, given to `method`: a qualified name with a
/// domain.
pub(super) fn check_finalizer(method: &'static str, finalizer: &str) -> Result<(), Invalid> {
    crate::names::domain_qualified_name(finalizer).map_err(|reason| Invalid::Finalizer {
        method,
        finalizer: finalizer.to_owned(),
        reason,
    })
}

// The tests use the testing kit's no-op reconciler.

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{ApiResource, DynamicObject, ObjectMeta};
    use kube::discovery::Scope;

    use super::{Controller, Invalid, Predicate, drain_label};
    use crate::controller::Cluster;
    use crate::informer::Factory;
    use crate::sharding::shard_label;
    use crate::testing::NoopReconciler as Nothing;

    /// The message of the mistake `controller` keeps.
    fn mistake<K>(controller: &Controller<K>) -> String {
        match controller.check() {
            Err(invalid) => invalid.to_string(),
            Ok(()) => panic!("the controller kept no mistake: {controller:?}"),
        }
    }

    #[test]
    fn a_controller_built_from_valid_values_checks() {
        let controller = Controller::<ConfigMap>::with_finalizer(Nothing, "example.com/cleanup")
            .concurrency(2)
            .condition("example.com/Synced")
            .ring("widgets.v1");
        assert_eq!(controller.check(), Ok(()));
    }

    #[test]
    fn a_concurrency_of_zero_is_kept_and_names_the_method() {
        let controller = Controller::<ConfigMap>::new(Nothing).concurrency(0);
        assert_eq!(controller.check(), Err(Invalid::ZeroConcurrency));
        assert_eq!(
            mistake(&controller),
            "Controller::concurrency(0): a controller needs at least one worker"
        );
    }

    #[test]
    fn a_finalizer_without_a_domain_is_kept_and_names_the_method_and_the_finalizer() {
        let controller = Controller::<ConfigMap>::with_finalizer(Nothing, "cleanup");
        assert_eq!(
            mistake(&controller),
            "Controller::with_finalizer: finalizer \"cleanup\" is not a qualified name like \
             `example.com/cleanup`: it needs a domain prefix and a slash"
        );
    }

    #[test]
    fn a_dynamic_finalizer_without_a_domain_names_the_dynamic_method() {
        let resource = ApiResource::erase::<ConfigMap>(&());
        let controller = Controller::<DynamicObject>::dynamic_with_finalizer(
            Nothing,
            "cleanup",
            &resource,
            &Scope::Namespaced,
        );
        assert!(
            mistake(&controller).starts_with(
                "Controller::dynamic_with_finalizer: finalizer \"cleanup\" is not a qualified name"
            ),
            "{}",
            mistake(&controller)
        );
    }

    #[test]
    fn a_condition_type_that_is_no_qualified_name_is_kept_and_names_the_type() {
        let controller = Controller::<ConfigMap>::new(Nothing).condition("Not Ready");
        assert!(
            mistake(&controller).starts_with(
                "Controller::condition(\"Not Ready\"): a condition type is a qualified name: "
            ),
            "{}",
            mistake(&controller)
        );
        assert_eq!(
            &*controller.reporting.condition,
            super::super::reporting::DEFAULT_CONDITION,
            "the bad type is not used"
        );
    }

    #[test]
    fn a_ring_that_cannot_name_a_lease_is_kept_and_names_the_ring() {
        let controller = Controller::<ConfigMap>::new(Nothing).ring("Widgets_");
        assert!(
            mistake(&controller).starts_with(
                "Controller::ring(\"Widgets_\"): a ring names a Lease, a label value and label keys: "
            ),
            "{}",
            mistake(&controller)
        );
    }

    #[test]
    fn the_first_mistake_is_kept_and_later_calls_still_chain() {
        let controller = Controller::<ConfigMap>::new(Nothing)
            .ring("Widgets_")
            .concurrency(0)
            .name("named-after-the-mistake");
        assert!(matches!(controller.check(), Err(Invalid::Ring { .. })));
        assert_eq!(controller.resolved_name(), "named-after-the-mistake");
    }

    #[tokio::test]
    async fn bind_refuses_a_controller_with_a_mistake_and_registers_nothing() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
        let client = kube::Client::try_from(config).expect("a plain HTTP config builds a client");
        let factory = Arc::new(Factory::new(client));
        let bound = Controller::<ConfigMap>::new(Nothing)
            .owns::<k8s_openapi::api::core::v1::Secret>()
            .concurrency(0)
            .bind(&Cluster::new(Arc::clone(&factory)));
        assert_eq!(bound.err(), Some(Invalid::ZeroConcurrency));
        assert!(factory.observe().is_empty(), "no informer was made");
    }

    fn config_map(generation: i64, labels: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                generation: Some(generation),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn on_a_shard_a_drain_label_passes_a_predicate_that_would_drop_it() {
        let controller = Controller::<ConfigMap>::new(Nothing)
            .predicate(Predicate::generation_changed())
            .ring("ring")
            .into_shard();
        let predicate = controller.predicate.expect("the predicate is kept");
        let (drain, shard) = (drain_label("ring"), shard_label("ring"));
        let assigned = config_map(1, &[(&shard, "a")]);
        let draining = config_map(1, &[(&shard, "a"), (&drain, "true")]);
        assert!(
            predicate.test(&assigned, &draining),
            "the drain label appeared"
        );
        // Other label changes are still dropped, and spec changes still pass.
        let relabelled = config_map(1, &[(&shard, "a"), ("other", "x")]);
        assert!(!predicate.test(&assigned, &relabelled));
        assert!(!predicate.test(&draining, &draining));
        assert!(predicate.test(&assigned, &config_map(2, &[(&shard, "a")])));
    }
}
