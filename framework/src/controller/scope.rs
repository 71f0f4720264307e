//! Picks the shared informer a controller uses from its kind's scope and the watch namespace.

use std::fmt::Debug;

use kube::Resource;
use kube::core::{ClusterResourceScope, NamespaceResourceScope};
use serde::de::DeserializeOwned;

use crate::informer::{Factory, SharedInformer};

/// A kind that a controller can watch: namespaced or cluster-wide, known at compile time.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kubernetes resource a controller can watch",
    label = "not a Kubernetes resource",
    note = "owned and watched kinds are k8s-openapi types or kube `CustomResource`s (they implement `kube::Resource`)"
)]
pub trait Watchable:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// Whether objects of this kind live in namespaces.
    const NAMESPACED: bool;

    /// The shared informer of this kind in `namespace` (all namespaces when `None`; always all
    /// for a cluster-scoped kind).
    fn informer(factory: &Factory, namespace: Option<&str>) -> SharedInformer<Self>;
}

/// Dispatches [`Watchable::informer`] on the kind's scope.
pub trait WatchScope {
    /// Whether objects of this scope live in namespaces.
    const NAMESPACED: bool;

    /// See [`Watchable::informer`].
    fn informer<K>(factory: &Factory, namespace: Option<&str>) -> SharedInformer<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + Debug
            + Send
            + Sync
            + 'static;
}

impl WatchScope for NamespaceResourceScope {
    const NAMESPACED: bool = true;

    fn informer<K>(factory: &Factory, namespace: Option<&str>) -> SharedInformer<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + Debug
            + Send
            + Sync
            + 'static,
    {
        match namespace {
            Some(ns) => factory.namespaced_informer(ns),
            None => factory.informer(),
        }
    }
}

impl WatchScope for ClusterResourceScope {
    const NAMESPACED: bool = false;

    fn informer<K>(factory: &Factory, _namespace: Option<&str>) -> SharedInformer<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + Debug
            + Send
            + Sync
            + 'static,
    {
        factory.informer()
    }
}

impl<K> Watchable for K
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::Scope: WatchScope,
{
    const NAMESPACED: bool = <K::Scope as WatchScope>::NAMESPACED;

    fn informer(factory: &Factory, namespace: Option<&str>) -> SharedInformer<Self> {
        <K::Scope as WatchScope>::informer(factory, namespace)
    }
}
