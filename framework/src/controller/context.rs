//! Gives a reconcile what it needs: the client, cached listers, an event recorder, its name.

use std::fmt;
use std::sync::Arc;

use kube::{Client, Resource};

use super::Watchable;
use super::own_writes::OwnWrites;
use crate::cache::{ObjectKey, Store};
use crate::events::{Recorder, Subject};
use crate::informer::Factory;
use crate::metrics::Metrics;

/// Handed to every reconcile: cheap to clone, shared by all of a controller's workers.
pub struct Context<K> {
    inner: Arc<Inner<K>>,
}

struct Inner<K> {
    name: String,
    client: Client,
    store: Store<K>,
    factory: Arc<Factory>,
    namespace: Option<String>,
    recorder: Recorder,
    own_writes: Arc<OwnWrites>,
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

impl<K: Resource<DynamicType = ()>> Context<K> {
    pub(crate) fn new(
        name: String,
        client: Client,
        store: Store<K>,
        factory: Arc<Factory>,
        namespace: Option<String>,
        metrics: &Metrics,
        own_writes: Arc<OwnWrites>,
    ) -> Self {
        let recorder = Recorder::new(client.clone(), name.clone()).metrics(metrics);
        Self {
            inner: Arc::new(Inner {
                name,
                client,
                store,
                factory,
                namespace,
                recorder,
                own_writes,
            }),
        }
    }

    /// The controller's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The client, to read and write the cluster.
    #[must_use]
    pub fn client(&self) -> Client {
        self.inner.client.clone()
    }

    /// The cache of `K`: `get`, `list` and index queries, without calling the API server.
    #[must_use]
    pub fn store(&self) -> &Store<K> {
        &self.inner.store
    }

    /// The cached state of the object with `key`.
    #[must_use]
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.inner.store.get(key)
    }

    /// The cache of another kind, e.g. one the controller owns or watches; it shares the informer
    /// those use. For a kind nothing watched yet, the informer is started now.
    #[must_use]
    pub fn lister<C: Watchable>(&self) -> Store<C> {
        let informer = C::informer(&self.inner.factory, self.inner.namespace.as_deref());
        // Starting twice is refused and harmless: the informer is already running.
        let _ = informer.start();
        informer.store()
    }

    /// The manager's informer factory (for the reconcile kit's cache look-ups).
    pub(crate) fn factory(&self) -> &Factory {
        &self.inner.factory
    }

    /// The owned objects this controller's reconciles wrote (for the reconcile kit's applies).
    pub(crate) fn own_writes(&self) -> &OwnWrites {
        &self.inner.own_writes
    }

    /// The one namespace the manager watches, `None` for all.
    pub(crate) fn namespace(&self) -> Option<&str> {
        self.inner.namespace.as_deref()
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
        self.inner.recorder.about(obj.object_ref(&()))
    }
}
