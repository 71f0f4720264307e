//! Defines the trait users implement: reconcile an object towards its desired state.

use std::future::Future;
use std::sync::Arc;

use super::{Action, Context, Error, ErrorAction};

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
    /// Any error: the controller logs it, counts it, reports it on the object (a Warning Event
    /// and, for custom resources, a `Ready=False` condition), and asks [`Self::error_policy`]
    /// what next.
    fn reconcile(
        &self,
        obj: Arc<K>,
        ctx: &Context<K>,
    ) -> impl Future<Output = Result<Action, Self::Error>> + Send;

    /// What to do after a failed attempt at `obj`; `error` says which step failed (the
    /// reconcile, the [cleanup](super::Cleanup), a finalizer write, the timeout) and carries the reconciler's own
    /// error. By default, [`Error::default_action`]: requests the API server refused as invalid
    /// or forbidden (400, 403, 413, 422) are [`ErrorAction::Terminal`], all else is retried with
    /// backoff. A 409 Conflict never gets here: the controller looks at the object again soon,
    /// without counting or reporting an error.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kubeward::controller::{self, Action, Context, ErrorAction, Reconciler};
    /// # struct Mirror;
    /// impl Reconciler<ConfigMap> for Mirror {
    ///     type Error = kube::Error;
    /// #   async fn reconcile(&self, _: Arc<ConfigMap>, _: &Context<ConfigMap>) -> Result<Action, kube::Error> { Ok(Action::await_change()) }
    ///     fn error_policy(
    ///         &self,
    ///         _: &ConfigMap,
    ///         error: &controller::Error<kube::Error>,
    ///         _: &Context<ConfigMap>,
    ///     ) -> ErrorAction {
    ///         match error.status_code() {
    ///             // Forbidden here means RBAC is being rolled out: try again in a minute.
    ///             Some(403) => ErrorAction::RetryAfter(std::time::Duration::from_secs(60)),
    ///             _ => error.default_action(),
    ///         }
    ///     }
    /// }
    /// # let _ = kubeward::controller::Controller::new(Mirror);
    /// ```
    fn error_policy(&self, obj: &K, error: &Error<Self::Error>, ctx: &Context<K>) -> ErrorAction {
        let _ = (obj, ctx);
        error.default_action()
    }
}
