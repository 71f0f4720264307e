//! Kinds an informer can cache, and those whose scope is known at compile time.

use std::fmt::Debug;

use kube::Resource;
use kube::core::{ClusterResourceScope, NamespaceResourceScope};
use serde::de::DeserializeOwned;

/// A type whose objects a shared informer can cache and a controller can reconcile: any kube
/// `Resource` that decodes from JSON and can be shared between tasks. That includes kinds known
/// only at run time, such as `DynamicObject`, whose API resource a controller is given (see
/// [`Controller::dynamic`](crate::controller::Controller::dynamic)); kinds known at compile time
/// are also [`Watchable`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kubernetes resource a controller can reconcile",
    label = "not a Kubernetes resource",
    note = "controllers run over k8s-openapi types, kube `CustomResource`s and `DynamicObject` (they implement `kube::Resource`)"
)]
pub trait Cacheable: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static {}

impl<K> Cacheable for K where K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static {}

/// A kind that a controller can watch: a k8s-openapi type or a kube `CustomResource`, namespaced
/// or cluster-wide, known at compile time.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kubernetes resource a controller can watch",
    label = "not a Kubernetes resource",
    note = "owned and watched kinds are k8s-openapi types or kube `CustomResource`s (they implement `kube::Resource`)"
)]
// Not `Watchable: Cacheable`: every watchable kind is cacheable through the blanket impl, and the
// bounds spelled out keep the compiler's message for a type that is no resource as it was.
pub trait Watchable:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// Whether objects of this kind live in namespaces.
    const NAMESPACED: bool;
}

impl<K> Watchable for K
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::Scope: Scope,
{
    const NAMESPACED: bool = <K::Scope as Scope>::NAMESPACED;
}

/// The scopes of kinds known at compile time.
pub(crate) trait Scope {
    /// Whether objects of this scope live in namespaces.
    const NAMESPACED: bool;
}

impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}
