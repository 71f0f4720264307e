//! Starts an object from its name, for the reconcile kit's applies.

use kube::Resource;

/// An object of kind `C` with only `metadata.name` set: the start of a child to
/// [`apply`](crate::controller::Context::apply), which fills in the namespace and the owner.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeward::reconcile::named;
///
/// let mut cm: ConfigMap = named("settings");
/// cm.data = Some([("mode".to_owned(), "fast".to_owned())].into());
/// assert_eq!(cm.metadata.name.as_deref(), Some("settings"));
/// ```
#[must_use]
pub fn named<C: Resource + Default>(name: impl Into<String>) -> C {
    let mut object = C::default();
    object.meta_mut().name = Some(name.into());
    object
}
