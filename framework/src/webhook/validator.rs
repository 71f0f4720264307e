//! Defines the trait that checks objects before the API server stores or deletes them.

use std::future::Future;

use kube::core::admission::AdmissionRequest;

use super::{Admissible, Verdict};

/// Checks objects of kind `K` as the API server is about to create, update or delete them; a
/// refusal reaches the client as the API server's error (`admission webhook "..." denied the
/// request: MESSAGE`).
///
/// Each method gets the typed object(s) and kube's [`AdmissionRequest`] (who asks, the
/// operation, the namespace, whether it is a `dryRun`). The framework has no side effects; a
/// validator that has some must skip them when `request.dry_run` is set. Every method admits
/// unless overridden.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::core::admission::AdmissionRequest;
/// use kubeward::webhook::{Validator, Verdict};
///
/// /// Refuses ConfigMaps holding more than 16 keys.
/// struct AtMostSixteenKeys;
///
/// impl Validator<ConfigMap> for AtMostSixteenKeys {
///     async fn validate_create(&self, cm: &ConfigMap, _: &AdmissionRequest<ConfigMap>) -> Verdict {
///         match cm.data.as_ref().map_or(0, |data| data.len()) {
///             0..=16 => Verdict::allow(),
///             n => Verdict::deny(format!("{n} keys; at most 16 are allowed")),
///         }
///     }
///
///     async fn validate_update(&self, _old: &ConfigMap, new: &ConfigMap, request: &AdmissionRequest<ConfigMap>) -> Verdict {
///         self.validate_create(new, request).await
///     }
/// }
///
/// let webhook = kubeward::webhook::Admission::validator::<ConfigMap>(AtMostSixteenKeys);
/// # let _ = webhook;
/// ```
pub trait Validator<K: Admissible>: Send + Sync + 'static {
    /// Checks an object about to be created.
    fn validate_create(
        &self,
        object: &K,
        request: &AdmissionRequest<K>,
    ) -> impl Future<Output = Verdict> + Send {
        let _ = (object, request);
        async { Verdict::allow() }
    }

    /// Checks an update from `old` to `new`.
    fn validate_update(
        &self,
        old: &K,
        new: &K,
        request: &AdmissionRequest<K>,
    ) -> impl Future<Output = Verdict> + Send {
        let _ = (old, new, request);
        async { Verdict::allow() }
    }

    /// Checks an object about to be deleted (called only when the webhook's
    /// [operations](super::Admission::operations) include `DELETE`).
    fn validate_delete(
        &self,
        object: &K,
        request: &AdmissionRequest<K>,
    ) -> impl Future<Output = Verdict> + Send {
        let _ = (object, request);
        async { Verdict::allow() }
    }
}
