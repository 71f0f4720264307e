//! Hides the user's reconciler type behind one object-safe trait.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Action, Context, ErrorAction, Reconciler};

/// A failed reconcile or cleanup: the error, and what the reconciler's policy says to do.
pub(crate) struct Failure {
    pub(crate) error: Box<dyn std::error::Error + Send + Sync>,
    pub(crate) action: ErrorAction,
}

/// [`Reconciler`] without its associated error type, so a controller needs no type parameter for it.
pub(crate) trait ErasedReconciler<K>: Send + Sync {
    fn reconcile<'a>(
        &'a self,
        obj: Arc<K>,
        ctx: &'a Context<K>,
    ) -> BoxFuture<'a, Result<Action, Failure>>;
    fn cleanup<'a>(
        &'a self,
        obj: Arc<K>,
        ctx: &'a Context<K>,
    ) -> BoxFuture<'a, Result<(), Failure>>;
}

struct Erased<R>(R);

pub(crate) fn erase<K, R>(reconciler: R) -> Arc<dyn ErasedReconciler<K>>
where
    K: Send + Sync + 'static,
    R: Reconciler<K>,
{
    Arc::new(Erased(reconciler))
}

impl<K, R> ErasedReconciler<K> for Erased<R>
where
    K: Send + Sync + 'static,
    R: Reconciler<K>,
{
    fn reconcile<'a>(
        &'a self,
        obj: Arc<K>,
        ctx: &'a Context<K>,
    ) -> BoxFuture<'a, Result<Action, Failure>> {
        Box::pin(async move {
            let result = self.0.reconcile(Arc::clone(&obj), ctx).await;
            result.map_err(|e| self.failure(&obj, e, ctx))
        })
    }

    fn cleanup<'a>(
        &'a self,
        obj: Arc<K>,
        ctx: &'a Context<K>,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(async move {
            let result = self.0.cleanup(Arc::clone(&obj), ctx).await;
            result.map_err(|e| self.failure(&obj, e, ctx))
        })
    }
}

impl<R> Erased<R> {
    fn failure<K>(&self, obj: &K, error: R::Error, ctx: &Context<K>) -> Failure
    where
        R: Reconciler<K>,
    {
        let action = self.0.error_policy(obj, &error, ctx);
        Failure {
            error: Box::new(error),
            action,
        }
    }
}
