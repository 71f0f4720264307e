//! Hides the user's reconciler type behind one object-safe trait.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::attempt::attempt;
use super::error::is_conflict;
use super::{Action, Context, ErrorAction, Reconciler, Watchable};

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
    /// One attempt at `obj` (see [`attempt`]), its error judged by the reconciler's policy.
    fn run<'a>(
        &'a self,
        obj: Arc<K>,
        ctx: &'a Context<K>,
        finalizer: Option<&'a str>,
        timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Action, Failure>>;
}

struct Erased<R>(R);

pub(crate) fn erase<K, R>(reconciler: R) -> Arc<dyn ErasedReconciler<K>>
where
    K: Watchable,
    R: Reconciler<K>,
{
    Arc::new(Erased(reconciler))
}

impl<K, R> ErasedReconciler<K> for Erased<R>
where
    K: Watchable,
    R: Reconciler<K>,
{
    fn run<'a>(
        &'a self,
        obj: Arc<K>,
        ctx: &'a Context<K>,
        finalizer: Option<&'a str>,
        timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Action, Failure>> {
        Box::pin(async move {
            let result = attempt(&self.0, Arc::clone(&obj), ctx, finalizer, timeout).await;
            result.map_err(|error| {
                let next = if is_conflict(&error) {
                    Next::Conflict
                } else {
                    Next::Policy(self.0.error_policy(&obj, &error, ctx))
                };
                Failure {
                    step: error.step(),
                    error: Box::new(error),
                    next,
                }
            })
        })
    }
}
