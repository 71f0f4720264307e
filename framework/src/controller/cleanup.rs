//! Defines what a finalizer guards: the cleanup that runs before a deleted object goes away.

use std::future::Future;
use std::sync::Arc;

use super::{Context, Reconciler};

/// Cleans up after an object of kind `K` that is being deleted, before the controller's
/// finalizer comes off it.
///
/// A cleanup runs only behind a finalizer, and a finalizer is declared only with a cleanup:
/// [`Controller::with_finalizer`](super::Controller::with_finalizer) (and the derive's
/// `finalizer = "..."`) takes a reconciler that implements this trait, so neither can be
/// forgotten. It shares the reconciler's error type and
/// [`error_policy`](Reconciler::error_policy), where its failures arrive as
/// [`Error::Cleanup`](super::Error::Cleanup).
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeward::controller::{Action, Cleanup, Context, Controller, Reconciler};
///
/// struct Mirror;
///
/// impl Reconciler<ConfigMap> for Mirror {
///     type Error = kube::Error;
///
///     async fn reconcile(&self, _: Arc<ConfigMap>, _: &Context<ConfigMap>) -> Result<Action, kube::Error> {
///         Ok(Action::await_change()) // copy the ConfigMap somewhere outside the cluster
///     }
/// }
///
/// impl Cleanup<ConfigMap> for Mirror {
///     async fn cleanup(&self, _: Arc<ConfigMap>, _: &Context<ConfigMap>) -> Result<(), kube::Error> {
///         Ok(()) // delete the copy; "already gone" counts as done
///     }
/// }
///
/// let controller = Controller::with_finalizer(Mirror, "example.com/mirror");
/// # let _ = controller;
/// ```
///
/// A finalizer without a cleanup does not compile:
///
/// ```compile_fail,E0277
/// # use std::sync::Arc;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # use kubeward::controller::{Action, Context, Controller, Reconciler};
/// struct Forgetful;
///
/// impl Reconciler<ConfigMap> for Forgetful {
///     type Error = kube::Error;
///     async fn reconcile(&self, _: Arc<ConfigMap>, _: &Context<ConfigMap>) -> Result<Action, kube::Error> {
///         Ok(Action::await_change())
///     }
/// }
///
/// let controller = Controller::with_finalizer(Forgetful, "example.com/mirror");
/// ```
///
/// Nor does a cleanup written where no finalizer would ever call it, in the `Reconciler`:
///
/// ```compile_fail,E0407
/// # use std::sync::Arc;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # use kubeward::controller::{Action, Context, Reconciler};
/// struct Misplaced;
///
/// impl Reconciler<ConfigMap> for Misplaced {
///     type Error = kube::Error;
///     async fn reconcile(&self, _: Arc<ConfigMap>, _: &Context<ConfigMap>) -> Result<Action, kube::Error> {
///         Ok(Action::await_change())
///     }
///     async fn cleanup(&self, _: Arc<ConfigMap>, _: &Context<ConfigMap>) -> Result<(), kube::Error> {
///         Ok(())
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no cleanup for its finalizer to run",
    label = "a finalizer needs a cleanup",
    note = "implement `kubeward::controller::Cleanup<{K}>` for `{Self}`: the finalizer keeps a deleted object until that cleanup succeeds"
)]
pub trait Cleanup<K>: Reconciler<K> {
    /// Cleans up after `obj`, which is being deleted while the controller's finalizer is still
    /// on it. The finalizer is removed when this succeeds. It must be idempotent, like
    /// [`reconcile`](Reconciler::reconcile): it runs again if the process stops between a
    /// successful cleanup and the removal of the finalizer.
    ///
    /// # Errors
    /// Any error: the object stays, and by default the cleanup is retried with backoff (see
    /// [`Reconciler::error_policy`]).
    fn cleanup(
        &self,
        obj: Arc<K>,
        ctx: &Context<K>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
