//! Starts an object from its name, for the reconcile kit's applies.

use kube::Resource;

/// Starts an object of any kind from its name: `ConfigMap::named("settings")` (the prelude
/// brings it into scope).
pub trait Named: Sized {
    /// An object with only `metadata.name` set: the start of a child to
    /// [`apply`](crate::controller::Context::apply), which fills in the namespace and the owner.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kubeward::reconcile::Named as _;
    ///
    /// let mut cm = ConfigMap::named("settings");
    /// cm.data = Some([("mode".to_owned(), "fast".to_owned())].into());
    /// assert_eq!(cm.metadata.name.as_deref(), Some("settings"));
    /// ```
    #[must_use]
    fn named(name: impl Into<String>) -> Self;
}

impl<C: Resource + Default> Named for C {
    fn named(name: impl Into<String>) -> Self {
        let mut object = C::default();
        object.meta_mut().name = Some(name.into());
        object
    }
}
