//! A reconciler that does nothing, for tests where a controller must exist but not act.

use std::convert::Infallible;
use std::sync::Arc;

use crate::controller::{Action, Cleanup, Context, Reconciler};

/// Reconciles any kind by doing nothing and waiting for the next change, and cleans up by doing
/// nothing: for tests of what a controller is rather than what it does (its manifests, its name,
/// its queue, its finalizer, the derive).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopReconciler;

impl<K: Send + Sync + 'static> Reconciler<K> for NoopReconciler {
    type Error = Infallible;

    async fn reconcile(&self, _obj: Arc<K>, _ctx: &Context<K>) -> Result<Action, Infallible> {
        Ok(Action::await_change())
    }
}

impl<K: Send + Sync + 'static> Cleanup<K> for NoopReconciler {
    async fn cleanup(&self, _obj: Arc<K>, _ctx: &Context<K>) -> Result<(), Infallible> {
        Ok(())
    }
}
