//! Defines the trait that fills in defaults of objects before the API server stores them.

use std::future::Future;

use kube::core::admission::AdmissionRequest;

use super::{Admissible, Verdict};

/// Fills in defaults of objects of kind `K` being created or updated by changing the object in
/// place; the framework sends the API server the JSON patch from the object as it came to the
/// object as it is afterwards.
///
/// Fields the type `K` does not know are left alone (never removed by the patch). A defaulter
/// may also refuse the request with [`Verdict::deny`] or add warnings. It must have no side
/// effects when `request.dry_run` is set.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::core::admission::AdmissionRequest;
/// use kubeward::webhook::{Defaulter, Verdict};
///
/// /// Labels every ConfigMap with its team, `unowned` when it has none.
/// struct TeamLabel;
///
/// impl Defaulter<ConfigMap> for TeamLabel {
///     async fn default(&self, cm: &mut ConfigMap, _: &AdmissionRequest<ConfigMap>) -> Verdict {
///         let labels = cm.metadata.labels.get_or_insert_with(Default::default);
///         labels.entry("team".into()).or_insert_with(|| "unowned".into());
///         Verdict::allow()
///     }
/// }
///
/// let webhook = kubeward::webhook::Admission::defaulter::<ConfigMap>(TeamLabel);
/// # let _ = webhook;
/// ```
pub trait Defaulter<K: Admissible>: Send + Sync + 'static {
    /// Sets the defaults of `object`, about to be created or updated.
    fn default(
        &self,
        object: &mut K,
        request: &AdmissionRequest<K>,
    ) -> impl Future<Output = Verdict> + Send;
}
