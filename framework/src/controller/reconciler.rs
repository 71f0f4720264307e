//! Defines the trait users implement: reconcile an object towards its desired state.

use std::future::Future;
use std::sync::Arc;

use super::{Action, Context, ErrorAction};

/// Brings the world in line with one object of kind `K`.
///
/// `reconcile` is called with the latest cached state of an object whenever it (or something it
/// owns or watches) changes, after a requested requeue, and after failures with backoff. It must
/// be idempotent: it sees the current state, not the event that caused the call. At most one
/// reconcile of a given object runs at a time.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeward::controller::{Action, Context, Controller, Reconciler};
///
/// struct Audit;
///
/// impl Reconciler<ConfigMap> for Audit {
///     type Error = kube::Error;
///
///     async fn reconcile(&self, cm: Arc<ConfigMap>, ctx: &Context<ConfigMap>) -> Result<Action, kube::Error> {
///         tracing::info!(name = ?cm.metadata.name, controller = ctx.name(), "seen");
///         Ok(Action::await_change())
///     }
/// }
///
/// let controller = Controller::new(Audit).concurrency(4);
/// # let _ = controller;
/// ```
pub trait Reconciler<K>: Send + Sync + 'static {
    /// The reconciler's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Reconciles `obj`.
    ///
    /// # Errors
    /// Any error: the controller logs it, counts it, and asks [`Self::error_policy`] what next.
    fn reconcile(
        &self,
        obj: Arc<K>,
        ctx: &Context<K>,
    ) -> impl Future<Output = Result<Action, Self::Error>> + Send;

    /// Cleans up after `obj`, which is being deleted while the controller's finalizer is still on
    /// it. The finalizer is removed when this succeeds; failures are retried with backoff.
    /// Called only when the controller declares a finalizer.
    ///
    /// # Errors
    /// Any error: the cleanup is retried with backoff and the object stays.
    fn cleanup(
        &self,
        obj: Arc<K>,
        ctx: &Context<K>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let _ = (obj, ctx);
        async { Ok(()) }
    }

    /// What to do after `error`: by default, retry with the rate limiter.
    fn error_policy(&self, obj: &K, error: &Self::Error, ctx: &Context<K>) -> ErrorAction {
        let _ = (obj, error, ctx);
        ErrorAction::Retry
    }
}
