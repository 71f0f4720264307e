//! Serves the Kubernetes API from memory, so controllers can be unit-tested without a cluster.
//!
//! [`FakeApiServer`] is a `tower` service that a [`kube::Client`] talks to directly. It keeps
//! objects of the kinds registered with it and follows the API server's rules for the paths
//! controllers use: resourceVersions from one counter, 409 on conflicts, generation bumps on spec
//! changes, finalizers delaying deletion, the status subresource, selectors, pagination,
//! watches from a resourceVersion (410 Gone when it is too old) and streaming lists
//! (`sendInitialEvents`, as from Kubernetes 1.27). Faults can be injected.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::Api;
//! use kube::api::{ObjectMeta, PostParams};
//! use kubeward_testing::FakeApiServer;
//!
//! let fake = FakeApiServer::new();
//! fake.register::<ConfigMap>();
//! let configmaps: Api<ConfigMap> = Api::namespaced(fake.client(), "default");
//! let meta = ObjectMeta { name: Some("settings".into()), ..ObjectMeta::default() };
//! configmaps.create(&PostParams::default(), &ConfigMap { metadata: meta, ..ConfigMap::default() }).await?;
//! assert_eq!(configmaps.list(&Default::default()).await?.items.len(), 1);
//! # Ok(()) }
//! ```
//!
//! Tests set the scene with [`FakeApiServer::seed`] (which keeps a status, unlike create), read
//! it back with [`FakeApiServer::get`], and inject faults: [`FakeApiServer::fail_next`] answers
//! the next matching request with an error status, [`FakeApiServer::drop_watches`] ends every
//! open watch, [`FakeApiServer::expire_next_watch`], [`FakeApiServer::expire_watches`] and
//! [`FakeApiServer::compact`] make watches answer 410 Gone (and, for `compact`, continued lists),
//! [`FakeApiServer::stall_initial_events_after`] holds a streaming list amid its initial events
//! and [`FakeApiServer::hold_list_continues`] a paginated list between its pages. The same checks pass here and on a real kube-apiserver (see the `fake`
//! integration tests), so a test written against the fake can also run on a
//! [`ControlPlane`](super::ControlPlane).
//!
//! Not modelled: admission, defaulting and validation beyond names, RBAC, garbage collection
//! of dependents, `managedFields`, field ownership by non-apply writers in server-side apply,
//! strategic merge by list keys (it is a JSON merge patch), and consistent snapshots across
//! list pages (a continued list sees objects as they are now).

mod apply;
mod body;
mod discovery;
mod initial;
mod kind;
mod object;
mod route;
mod selector;
mod service;
mod state;
pub(crate) mod status;
pub(crate) mod watch;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response, StatusCode};
use kube::{CustomResourceExt, Resource};
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Duration;

pub use body::ResponseBody;
pub use kind::Scope;

use kind::Kind;
use state::{Fault, State};
use status::Failure;

/// An in-memory Kubernetes API server for unit tests; cheap to clone (clones share the state).
#[derive(Clone, Debug)]
#[doc(alias = "fake clientset")]
pub struct FakeApiServer {
    state: Arc<Mutex<State>>,
}

/// A kind of API request, for fault injection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verb {
    /// Read one object.
    Get,
    /// List objects.
    List,
    /// Open a watch.
    Watch,
    /// Create an object.
    Create,
    /// Replace an object (PUT).
    Update,
    /// Patch an object, including server-side apply.
    Patch,
    /// Delete an object.
    Delete,
    /// Delete the objects a selector matches.
    DeleteCollection,
}

/// Errors from seeding or reading the fake directly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The object's kind was not registered with [`FakeApiServer::register`].
    #[error("{kind} is not registered with the fake API server")]
    NotRegistered {
        /// The kind.
        kind: String,
    },
    /// The object could not be converted to or from JSON.
    #[error("converting a {kind} to or from JSON")]
    Json {
        /// The kind.
        kind: String,
        /// The conversion error.
        #[source]
        source: serde_json::Error,
    },
    /// The fake refused the object as the API server would (say, its name is taken).
    #[error("the fake API server refused the object ({code} {reason}): {message}")]
    Refused {
        /// The HTTP status code.
        code: u16,
        /// The `reason` of the `metav1.Status`.
        reason: &'static str,
        /// The `message` of the `metav1.Status`.
        message: String,
    },
}

/// The result of seeding or reading the fake.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Default for FakeApiServer {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeApiServer {
    /// An empty fake serving no kinds yet.
    #[must_use]
    pub fn new() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| {
                elapsed.as_secs() ^ u64::from(elapsed.subsec_nanos())
            });
        Self {
            state: Arc::new(Mutex::new(State::new(seed))),
        }
    }

    /// An empty fake whose every choice comes from `seed` and tokio's clock: uids and generated
    /// names from the seed, timestamps from tokio's clock counted from 2025-01-01T00:00:00Z at
    /// this call. Two fakes made alike, driven alike on a paused clock, store the same bytes: the
    /// ground of a [simulation](crate::sim).
    #[must_use]
    pub fn deterministic(seed: u64) -> Self {
        let mut state = State::new(seed);
        state.virtual_start = Some(tokio::time::Instant::now());
        Self {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// Keeps only the last `events` changes for watches to resume from (default 10 000); a watch
    /// from an older resourceVersion gets 410 Gone.
    #[must_use]
    pub fn with_history_limit(self, events: usize) -> Self {
        self.state.lock().history_limit = events.max(1);
        self
    }

    /// How often watches that allow bookmarks get a `BOOKMARK` event (default one second).
    #[must_use]
    pub fn with_bookmark_interval(self, interval: Duration) -> Self {
        self.state.lock().bookmark_interval = interval;
        self
    }

    /// Writes each watch event's object before its type, unlike the real server: for a client
    /// whose decoder must not depend on the order of the fields.
    #[must_use]
    pub fn with_objects_before_types(self) -> Self {
        self.state.lock().objects_before_types = true;
        self
    }

    /// Refuses streaming lists as an API server before 1.27 does (such as the local 1.20 one):
    /// a watch with `resourceVersionMatch` gets `422 Invalid`.
    #[must_use]
    pub fn without_streaming_lists(self) -> Self {
        self.state.lock().streaming_lists = false;
        self
    }

    /// Serves a built-in kind, such as `ConfigMap` or `Deployment`.
    ///
    /// Whether the kind has a status subresource and a generation follows the real API.
    pub fn register<K>(&self)
    where
        K: Resource<DynamicType = ()>,
        K::Scope: Scope,
    {
        let kind = Kind::built_in(
            &K::group(&()),
            &K::version(&()),
            &K::kind(&()),
            &K::plural(&()),
            <K::Scope as Scope>::NAMESPACED,
        );
        self.state.lock().register(kind);
    }

    /// Serves a custom resource, reading its scope and status subresource from its CRD.
    pub fn register_crd<K: CustomResourceExt>(&self) {
        let resource = K::api_resource();
        let crd = K::crd();
        let status_subresource = crd.spec.versions.iter().any(|version| {
            version.name == resource.version
                && version
                    .subresources
                    .as_ref()
                    .is_some_and(|sub| sub.status.is_some())
        });
        self.state.lock().register(Kind {
            group: resource.group,
            version: resource.version,
            name: resource.kind,
            plural: resource.plural,
            namespaced: crd.spec.scope == "Namespaced",
            status_subresource,
            generation: true,
            custom: true,
        });
    }

    /// A client whose requests this fake answers; its default namespace is `default`.
    ///
    /// # Panics
    /// Outside a tokio runtime: the client spawns its request buffer.
    #[must_use]
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.clone(), "default")
    }

    /// Stores an object as a create would, keeping its status, and returns it as stored.
    ///
    /// # Errors
    /// The kind is not registered, or the fake refuses the object (its name is taken or invalid).
    pub fn seed<K>(&self, object: &K) -> Result<K>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let kind = self.kind_of::<K>()?;
        let json = to_json(&kind, object)?;
        let namespace = object.meta().namespace.clone().unwrap_or_default();
        let namespace = if namespace.is_empty() {
            "default".to_owned()
        } else {
            namespace
        };
        let stored = self
            .state
            .lock()
            .create(&kind, &namespace, json, true)
            .map_err(refused)?;
        from_json(&kind, stored)
    }

    /// The stored object, read without going through a client; `namespace` is ignored for
    /// cluster-scoped kinds.
    ///
    /// # Errors
    /// The kind is not registered, or the stored object does not convert to `K`.
    pub fn get<K>(&self, namespace: &str, name: &str) -> Result<Option<K>>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let kind = self.kind_of::<K>()?;
        let stored = self.state.lock().get(&kind, namespace, name).ok();
        stored.map(|object| from_json(&kind, object)).transpose()
    }

    /// Every stored object of kind `K`, in namespace and name order, read without going through
    /// a client.
    ///
    /// # Errors
    /// The kind is not registered, or a stored object does not convert to `K`.
    pub fn list<K>(&self) -> Result<Vec<K>>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let kind = self.kind_of::<K>()?;
        let resource = kind.storage_key();
        let stored: Vec<serde_json::Value> = self
            .state
            .lock()
            .objects_after(&resource, None)
            .map(|(_, object)| object.clone())
            .collect();
        stored
            .into_iter()
            .map(|object| from_json(&kind, object))
            .collect()
    }

    /// The latest resourceVersion handed out.
    #[must_use]
    pub fn resource_version(&self) -> u64 {
        self.state.lock().revision()
    }

    /// Answers the next `verb` request on `plural` (any resource when empty) with an error status.
    pub fn fail_next(&self, verb: Verb, plural: &str, code: StatusCode) {
        let failure = Failure::new(code, Failure::reason_for(code), "injected by FakeApiServer");
        self.state.lock().faults.push(Fault {
            verb,
            plural: (!plural.is_empty()).then(|| plural.to_owned()),
            failure,
        });
    }

    /// Holds back every change from the watches open now (one opened during the pause is sent
    /// what happened before it opened, as usual): a benchmark makes its changes before its
    /// clock starts.
    pub fn pause_watches(&self) {
        self.state.lock().pause_watches();
    }

    /// Sends the open watches every change held back since [`pause_watches`](Self::pause_watches),
    /// in order, at once: many lines to a chunk of the response, as a client reading a backlog
    /// off its socket receives them.
    pub fn resume_watches(&self) {
        self.state.lock().resume_watches();
    }

    /// How many watches are open (closed ones are noticed at the next change).
    #[must_use]
    pub fn open_watches(&self) -> usize {
        self.state.lock().open_watches()
    }

    /// Ends every open watch, as a dropped connection would.
    pub fn drop_watches(&self) {
        self.state.lock().drop_watches();
    }

    /// Ends every open watch with 410 Gone, as a server does with watches that fell too far
    /// behind; a streaming list amid its initial events too.
    pub fn expire_watches(&self) {
        self.state.lock().expire_watches();
    }

    /// Streaming lists send at most `events` initial events each, then hold the rest (and
    /// their end) back, sending bookmarks without the end annotation meanwhile, until
    /// [`resume_initial_events`](Self::resume_initial_events): a test can act amid a stream.
    pub fn stall_initial_events_after(&self, events: usize) {
        self.state.lock().initial_events_limit = Some(events);
    }

    /// Lets streaming lists send the rest of their initial events, and their end.
    pub fn resume_initial_events(&self) {
        self.state.lock().initial_events_limit = None;
    }

    /// How many bookmarks the fake's watches have sent.
    #[must_use]
    pub fn bookmarks_sent(&self) -> u64 {
        self.state.lock().bookmarks_sent
    }

    /// Makes the next watch answer 410 Gone, whatever resourceVersion it asks for.
    pub fn expire_next_watch(&self) {
        self.state.lock().gone_next_watch = true;
    }

    /// Makes list requests for a page after the first (those with a `continue` token) wait
    /// until [`release_list_continues`](Self::release_list_continues): a test can act between
    /// a list's pages, e.g. [`compact`](Self::compact) to expire its token.
    pub fn hold_list_continues(&self) {
        self.state.lock().hold_continues.send_replace(true);
    }

    /// Lets the list requests held by [`hold_list_continues`](Self::hold_list_continues) go on,
    /// and those to come pass.
    pub fn release_list_continues(&self) {
        self.state.lock().hold_continues.send_replace(false);
    }

    /// How many list requests [`hold_list_continues`](Self::hold_list_continues) holds now.
    #[must_use]
    pub fn held_list_continues(&self) -> usize {
        self.state.lock().hold_continues.receiver_count()
    }

    /// Forgets the event history, as etcd compaction does: watches from any resourceVersion
    /// before now, and continue tokens of lists begun before now, get 410 Gone.
    pub fn compact(&self) {
        self.state.lock().compact();
    }

    fn kind_of<K: Resource<DynamicType = ()>>(&self) -> Result<Arc<Kind>> {
        self.state
            .lock()
            .kind_of(&K::group(&()), &K::kind(&()))
            .ok_or_else(|| Error::NotRegistered {
                kind: K::kind(&()).into_owned(),
            })
    }
}

fn to_json<K: Serialize>(kind: &Kind, object: &K) -> Result<serde_json::Value> {
    serde_json::to_value(object).map_err(|source| Error::Json {
        kind: kind.name.clone(),
        source,
    })
}

fn from_json<K: DeserializeOwned>(kind: &Kind, object: serde_json::Value) -> Result<K> {
    serde_json::from_value(object).map_err(|source| Error::Json {
        kind: kind.name.clone(),
        source,
    })
}

fn refused(failure: Failure) -> Error {
    Error::Refused {
        code: failure.code.as_u16(),
        reason: failure.reason,
        message: failure.message,
    }
}

impl tower_service::Service<Request<kube::client::Body>> for FakeApiServer {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<kube::client::Body>) -> Self::Future {
        let state = Arc::clone(&self.state);
        Box::pin(async move { Ok(service::handle(state, request).await) })
    }
}

#[cfg(test)]
mod tests;
