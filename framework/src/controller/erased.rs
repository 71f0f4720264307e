//! Hides the user's reconciler type behind one object-safe trait.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::attempt::{finalized, reconcile, within};
use super::error::is_conflict;
use super::first_state;
use super::{Action, Cacheable, Cleanup, Context, Error, ErrorAction, Reconciler};

/// A failed attempt: the [`Error`](super::Error), erased, and what to do next.
pub(crate) struct Failure {
    /// The typed `controller::Error<E>`; its source chain is intact.
    pub(crate) error: Box<dyn std::error::Error + Send + Sync>,
    /// The step that failed, for logs.
    pub(crate) step: &'static str,
    pub(crate) next: Next,
}

/// What follows a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// A 409 Conflict: the object changed under the attempt; look again soon, it is no failure.
    Conflict,
    /// What the reconciler's error policy chose.
    Policy(ErrorAction),
}

/// [`Reconciler`] without its associated error type, so a controller needs no type parameter for it.
pub(crate) trait ErasedReconciler<K>: Send + Sync {
    /// One attempt at `obj`, failing after `timeout`, its error judged by the reconciler's policy.
    fn run<'a>(
        &'a self,
        obj: Arc<K>,
        ctx: &'a Context<K>,
        timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Action, Failure>>;
}

/// A reconciler without a finalizer.
struct Plain<R>(R);

/// A reconciler behind a finalizer, which runs its [`Cleanup`].
struct Finalized<R> {
    reconciler: R,
    finalizer: String,
}

/// `reconciler`, erased.
pub(crate) fn erase<K, R>(reconciler: R) -> Arc<dyn ErasedReconciler<K>>
where
    K: Cacheable,
    R: Reconciler<K>,
{
    Arc::new(Plain(reconciler))
}

/// `reconciler` behind `finalizer`, erased.
pub(crate) fn erase_finalized<K, R>(
    reconciler: R,
    finalizer: String,
) -> Arc<dyn ErasedReconciler<K>>
where
    K: Cacheable,
    R: Cleanup<K>,
{
    Arc::new(Finalized {
        reconciler,
        finalizer,
    })
}

impl<K, R> ErasedReconciler<K> for Plain<R>
where
    K: Cacheable,
    R: Reconciler<K>,
{
    fn run<'a>(
        &'a self,
        obj: Arc<K>,
        ctx: &'a Context<K>,
        timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Action, Failure>> {
        Box::pin(async move {
            let attempt = within(timeout, reconcile(&self.0, Arc::clone(&obj), ctx));
            let result = first_state::settle(ctx, &obj, attempt).await;
            result.map_err(|error| judge(&self.0, &obj, ctx, error))
        })
    }
}

impl<K, R> ErasedReconciler<K> for Finalized<R>
where
    K: Cacheable,
    R: Cleanup<K>,
{
    fn run<'a>(
        &'a self,
        obj: Arc<K>,
        ctx: &'a Context<K>,
        timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Action, Failure>> {
        Box::pin(async move {
            let steps = finalized(&self.reconciler, &self.finalizer, Arc::clone(&obj), ctx);
            let result = first_state::settle(ctx, &obj, within(timeout, steps)).await;
            result.map_err(|error| judge(&self.reconciler, &obj, ctx, error))
        })
    }
}

/// What follows `error`: a conflict is looked at again; anything else goes to the policy.
fn judge<K, R>(reconciler: &R, obj: &K, ctx: &Context<K>, error: Error<R::Error>) -> Failure
where
    K: Cacheable,
    R: Reconciler<K>,
{
    let next = if is_conflict(&error) {
        Next::Conflict
    } else {
        Next::Policy(reconciler.error_policy(obj, &error, ctx))
    };
    Failure {
        step: error.step(),
        error: Box::new(error),
        next,
    }
}
