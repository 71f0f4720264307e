//! Gives a reconcile what it needs: the client, cached listers, an event recorder, its name.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kube::api::ApiResource;
use kube::core::ObjectMeta;
use kube::{Client, Resource};

use super::Kind;
use super::condition::ToJson;
use super::expectations::Expectations;
use super::fenced_client::fenced;
use super::fences::Fences;
use super::own_writes::OwnWrites;
use super::reporting::Reporting;
use crate::cache::{Fence, ObjectKey, Store, Waited};
use crate::events::{Recorder, Subject};
use crate::informer::{self, CacheScope, Factory, Watchable};
use crate::metrics::{ExpectationMetrics, Metrics, ReadMetrics};
#[cfg(feature = "sharding")]
use crate::sharding::OwnedLabels;

/// Handed to every reconcile: cheap to clone, shared by all of a controller's workers.
pub struct Context<K> {
    inner: Arc<Inner<K>>,
}

struct Inner<K> {
    name: String,
    client: Client,
    store: Store<K>,
    factory: Arc<Factory>,
    scope: CacheScope,
    recorder: Recorder,
    own_writes: Arc<OwnWrites>,
    reads: ReadMetrics,
    kind: Kind,
    /// `plural` or `plural.group` of `kind`, as fences name it.
    own_resource: String,
    /// With read-your-writes on: the marks of the controller's writes, and how long a read
    /// waits for them at most.
    fences: Option<(Arc<Fences>, Duration)>,
    /// With read-your-writes on: the creates and deletes each owner's next reconcile waits for.
    expectations: Option<Arc<Expectations>>,
    expectation_metrics: ExpectationMetrics,
    /// The client whose writes leave marks in `fences`, made on first use (it spawns a task).
    fenced_client: OnceLock<Client>,
    /// What the controller reports on its objects: its condition, and which reports are on.
    reporting: Reporting,
    /// Reads an object of `K` as JSON, for the condition's first state.
    to_json: Option<ToJson<K>>,
    /// On a shard: the label the owned objects it applies get.
    #[cfg(feature = "sharding")]
    owned_labels: Option<Arc<OwnedLabels>>,
}

impl<K> Clone for Context<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for Context<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl<K: Resource> Context<K> {
    /// The context of the controller `name` of `kind`, on `factory`'s client.
    pub(crate) fn new(
        name: String,
        store: Store<K>,
        factory: Arc<Factory>,
        scope: CacheScope,
        metrics: &Metrics,
        own_writes: Arc<OwnWrites>,
        kind: Kind,
    ) -> Self {
        let client = factory.client().clone();
        let recorder = Recorder::new(client.clone(), name.clone()).metrics(metrics);
        let reads = metrics.reads(&name);
        let of = kind.resource();
        let own_resource = if of.group.is_empty() {
            of.plural.clone()
        } else {
            format!("{}.{}", of.plural, of.group)
        };
        reads.start_waits(&own_resource);
        let expectation_metrics = metrics.expectations(&name);
        Self {
            inner: Arc::new(Inner {
                name,
                client,
                store,
                factory,
                scope,
                recorder,
                own_writes,
                reads,
                kind,
                own_resource,
                fences: None,
                expectations: None,
                expectation_metrics,
                fenced_client: OnceLock::new(),
                reporting: Reporting::default(),
                to_json: None,
                #[cfg(feature = "sharding")]
                owned_labels: None,
            }),
        }
    }

    /// With `client` to read and write with instead of the factory's (see
    /// [`Cluster::client`](super::Cluster::client)).
    pub(crate) fn with_client(mut self, client: Option<Client>) -> Self {
        let Some(inner) = Arc::get_mut(&mut self.inner) else {
            unreachable!("invariant: a context is not shared before it is complete");
        };
        if let Some(client) = client {
            inner.client = client;
        }
        self
    }

    /// With its cached reads waiting for its own writes for at most `timeout` (never when
    /// `None`; see [`Controller::read_your_writes`](super::Controller::read_your_writes)).
    pub(crate) fn with_read_your_writes(mut self, timeout: Option<Duration>) -> Self {
        let Some(inner) = Arc::get_mut(&mut self.inner) else {
            unreachable!("invariant: a context is not shared before it is complete");
        };
        inner.fences = timeout.map(|timeout| (Arc::new(Fences::default()), timeout));
        inner.expectations = timeout.map(|timeout| {
            let metrics = inner.expectation_metrics.clone();
            Arc::new(Expectations::new(&inner.own_resource, timeout, metrics))
        });
        self
    }

    /// With the controller's `reporting` (its condition, which reports are on) and its way of
    /// reading an object as JSON.
    pub(crate) fn with_reporting(mut self, reporting: Reporting, to_json: ToJson<K>) -> Self {
        let Some(inner) = Arc::get_mut(&mut self.inner) else {
            unreachable!("invariant: a context is not shared before it is complete");
        };
        inner.reporting = reporting;
        inner.to_json = Some(to_json);
        self
    }

    /// The status condition the controller reports on: `Ready` unless it names another
    /// ([`Controller::condition`](super::Controller::condition), the derive's
    /// `condition = "..."`).
    #[must_use]
    pub fn condition(&self) -> &str {
        &self.inner.reporting.condition
    }

    /// What the controller reports on its objects.
    pub(crate) fn reporting(&self) -> &Reporting {
        &self.inner.reporting
    }

    /// Reads an object of `K` as JSON (captured where `K: Serialize` is known), if known.
    pub(crate) fn to_json(&self) -> Option<ToJson<K>> {
        self.inner.to_json
    }

    /// With `labels` set on the owned objects it applies (a shard's controller).
    #[cfg(feature = "sharding")]
    pub(crate) fn with_owned_labels(mut self, labels: Option<Arc<OwnedLabels>>) -> Self {
        let Some(inner) = Arc::get_mut(&mut self.inner) else {
            unreachable!("invariant: a context is not shared before it is complete");
        };
        inner.owned_labels = labels;
        self
    }

    /// The controller's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Why the reconcile running on this task runs: every trigger of its key since the last
    /// reconcile of it started, oldest first (watch events of the object with their type and
    /// resourceVersion, changes of owned and watched objects naming that object, resyncs,
    /// requeues and retries, a requested reconcile), at most
    /// [`MAX_TRIGGERS`](super::MAX_TRIGGERS) of them. Empty outside a reconcile (and in tasks
    /// a reconcile spawns).
    ///
    /// ```
    /// # use kubeward::controller::{Context, Reason};
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # #[allow(dead_code)]
    /// fn only_resynced(ctx: &Context<ConfigMap>) -> bool {
    ///     let triggers = ctx.triggers();
    ///     !triggers.is_empty() && triggers.iter().all(|t| t.reason() == Reason::Resync)
    /// }
    /// ```
    #[must_use]
    pub fn triggers(&self) -> Vec<super::Trigger> {
        super::why::triggers()
    }

    /// The client, to read and write the cluster. With
    /// [read-your-writes](super::Controller::read_your_writes) on (the default), every write
    /// through it is noted, and the context's cached reads wait until the informer has seen it.
    #[must_use]
    pub fn client(&self) -> Client {
        let (Some((fences, _)), Some(expectations)) =
            (&self.inner.fences, &self.inner.expectations)
        else {
            return self.inner.client.clone();
        };
        let client = self.inner.fenced_client.get_or_init(|| {
            let (fences, expectations) = (Arc::clone(fences), Arc::clone(expectations));
            fenced(self.inner.client.clone(), fences, expectations)
        });
        client.clone()
    }

    /// Waits until `store`, the cache of `resource` (`plural` or `plural.group`), has brought
    /// in the controller's writes of the object `key` (with read-your-writes on; for at most
    /// its timeout); says whether it waited.
    pub(crate) async fn fence_object<C: Resource>(
        &self,
        store: &Store<C>,
        resource: &str,
        key: &ObjectKey,
    ) -> bool {
        let Some((fences, _)) = &self.inner.fences else {
            return false;
        };
        let wanted = fences.of_object(resource, key);
        self.fence(store, resource, wanted).await
    }

    /// Before a reconcile of `key`: waits until the cache holds the controller's own writes of
    /// the object and, while it is still there, has seen the creates and deletes its last
    /// reconcile made (with read-your-writes on; for at most its timeout). A reconcile that
    /// waited is counted in `kubeward_controller_stale_sync_skips_total`.
    pub(crate) async fn before_reconcile(&self, key: &ObjectKey) {
        let fenced = (self.fence_object(self.store(), self.own_resource(), key)).await;
        let settled = match self.expectations() {
            None => false,
            Some(expectations) if expectations.is_empty() => false,
            Some(expectations) if self.store().get(key).is_some() => {
                expectations.settle(self.factory(), key).await
            }
            Some(expectations) => {
                expectations.forget(key);
                false
            }
        };
        if fenced || settled {
            self.reads().held_back();
        }
    }

    /// Waits until `store`, the cache of `resource`, has brought in the controller's writes of
    /// it in `namespace` (every namespace when `None`), deletes included.
    pub(crate) async fn fence_list<C: Resource>(
        &self,
        store: &Store<C>,
        resource: &str,
        namespace: Option<&str>,
    ) {
        let Some((fences, _)) = &self.inner.fences else {
            return;
        };
        let wanted = fences.of_list(resource, namespace);
        self.fence(store, resource, wanted).await;
    }

    /// With read-your-writes on: the creates and deletes each owner's next reconcile waits for.
    pub(crate) fn expectations(&self) -> Option<&Expectations> {
        self.inner.expectations.as_deref()
    }

    /// The name of the controller's own kind, as its fences name it.
    pub(crate) fn own_resource(&self) -> &str {
        &self.inner.own_resource
    }

    /// Waits until `store` has passed `wanted`, the fences of a read of `resource`, for at most
    /// the controller's timeout; says whether it waited.
    async fn fence<C: Resource>(
        &self,
        store: &Store<C>,
        resource: &str,
        wanted: Vec<Fence>,
    ) -> bool {
        let Some((fences, timeout)) = &self.inner.fences else {
            return false;
        };
        if wanted.is_empty() {
            return false;
        }
        let started = tokio::time::Instant::now();
        match store.wait_for(&wanted, *timeout).await {
            Waited::No => {
                fences.passed(resource, &wanted);
                false
            }
            Waited::CaughtUp => {
                fences.passed(resource, &wanted);
                self.reads().waited(resource, started.elapsed(), false);
                true
            }
            Waited::TimedOut => {
                tracing::debug!(
                    controller = %self.inner.name,
                    resource,
                    timeout = ?timeout,
                    "the cache did not bring in our own write in time; reading it as it is"
                );
                self.reads().waited(resource, started.elapsed(), true);
                true
            }
        }
    }

    /// The API resource of the controller's kind (group, version, kind, plural): what a
    /// reconciler of `DynamicObject`s passes to `Api::namespaced_with` or `Api::all_with`.
    #[must_use]
    pub fn resource(&self) -> &ApiResource {
        self.inner.kind.resource()
    }

    /// The cache of `K`: `get`, `list` and index queries, without calling the API server.
    #[must_use]
    pub fn store(&self) -> &Store<K> {
        &self.inner.store
    }

    /// The cache of another kind, e.g. one the controller owns or watches, once it has synced:
    /// a reconcile never sees a cache that is still filling as if the cluster were empty. It
    /// shares the informer those use; for a kind nothing watched yet, an informer is started
    /// now and this waits for its first list (as controller-runtime's cache reads block until
    /// the cache has synced).
    ///
    /// # Errors
    /// [`informer::Error::ShutDown`] when the informer is shut down before it synced (the
    /// manager is stopping).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future stops only the wait; the informer keeps running.
    pub async fn lister<C: Watchable>(&self) -> Result<Store<C>, informer::Error> {
        let informer = self.inner.factory.watched::<C>(&self.inner.scope);
        informer.start()?;
        informer.wait_for_sync().await?;
        Ok(informer.store())
    }

    /// The manager's informer factory (for the reconcile kit's cache look-ups).
    pub(crate) fn factory(&self) -> &Factory {
        &self.inner.factory
    }

    /// The owned objects this controller's reconciles wrote (for the reconcile kit's applies).
    pub(crate) fn own_writes(&self) -> &OwnWrites {
        &self.inner.own_writes
    }

    /// The kind the controller reconciles.
    pub(crate) fn kind(&self) -> &Kind {
        &self.inner.kind
    }

    /// What the controller caches: namespaces and selectors.
    pub(crate) fn scope(&self) -> &CacheScope {
        &self.inner.scope
    }

    /// Labels `meta`, of an object of `C` that `owner` owns, with the owner's shard (only on a
    /// shard of a ring that owns `C`).
    #[cfg_attr(
        not(feature = "sharding"),
        expect(unused_variables, clippy::unused_self, reason = "no shards")
    )]
    pub(crate) fn label_with_shard<C: Resource<DynamicType = ()>>(
        &self,
        owner: &ObjectMeta,
        meta: &mut ObjectMeta,
    ) {
        #[cfg(feature = "sharding")]
        if let Some(labels) = &self.inner.owned_labels {
            labels.label::<C>(owner, meta);
        }
    }

    /// The counters of the reads `get` and `list` serve.
    pub(crate) fn reads(&self) -> &ReadMetrics {
        &self.inner.reads
    }

    /// The controller's event recorder, for Kubernetes Events on any object.
    #[must_use]
    pub fn recorder(&self) -> &Recorder {
        &self.inner.recorder
    }

    /// Starts a Kubernetes Event about `obj` (shown by `kubectl events`):
    /// `ctx.event(&obj).normal("Generated", note)`. It never fails and never waits; see
    /// [`Recorder`] for aggregation, rate limits and failures.
    pub fn event(&self, obj: &K) -> Subject<'_> {
        self.inner
            .recorder
            .about(self.inner.kind.object_ref(obj.meta()))
    }
}

/// How the context's reads and its client's writes name `C`: `plural` or `plural.group`.
pub(crate) fn resource_of<C: Resource<DynamicType = ()>>() -> String {
    let group = C::group(&());
    let plural = C::plural(&());
    if group.is_empty() {
        plural.into_owned()
    } else {
        format!("{plural}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use kube::api::ObjectMeta;

    use super::super::intake::Intake;
    use super::*;
    use crate::testing::FakeApiServer;

    #[tokio::test(flavor = "current_thread")]
    async fn a_lister_hands_out_a_cache_of_a_new_kind_only_once_it_holds_the_first_list()
    -> anyhow::Result<()> {
        let fake = FakeApiServer::new();
        fake.register::<ConfigMap>();
        fake.register::<Secret>();
        for name in ["a", "b", "c"] {
            fake.seed(&Secret {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some("demo".into()),
                    ..ObjectMeta::default()
                },
                ..Secret::default()
            })?;
        }
        let client = fake.client();
        let factory = Arc::new(Factory::new(client.clone()));
        let scope = CacheScope::default().namespaces(["demo"]);
        let store = factory.watched::<ConfigMap>(&scope).store();
        let metrics = Metrics::new(&prometheus::Registry::new())?;
        let ctx = Context::<ConfigMap>::new(
            "lister".into(),
            store,
            Arc::clone(&factory),
            scope,
            &metrics,
            Arc::new(OwnWrites::new(Intake::default(), metrics.echoes("lister"))),
            Kind::of::<ConfigMap>(),
        );
        // Nothing watched Secrets before: the informer starts now, and on this one-thread
        // runtime it cannot have listed before the lister waits for it.
        let secrets =
            tokio::time::timeout(Duration::from_secs(30), ctx.lister::<Secret>()).await??;
        assert_eq!(
            secrets.len(),
            3,
            "the lister handed out a cache that had not synced"
        );
        factory.shutdown().await;
        Ok(())
    }
}
