//! Runs one attempt at an object: the user's reconcile, or with a finalizer the finalizer steps
//! and the reconcile or cleanup, within the timeout.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::{Action, Cacheable, Cleanup, Context, Error, Reconciler, finalizer, target_of};

/// Runs `steps`, failing with [`Error::Timeout`] after `timeout`.
pub(crate) async fn within<E: std::error::Error + 'static>(
    timeout: Option<Duration>,
    steps: impl Future<Output = Result<Action, Error<E>>>,
) -> Result<Action, Error<E>> {
    match timeout {
        None => steps.await,
        Some(limit) => tokio::time::timeout(limit, steps)
            .await
            .unwrap_or(Err(Error::Timeout(limit))),
    }
}

/// Reconciles `obj` once with `reconciler`, which declares no finalizer.
pub(crate) async fn reconcile<K, R>(
    reconciler: &R,
    obj: Arc<K>,
    ctx: &Context<K>,
) -> Result<Action, Error<R::Error>>
where
    K: Cacheable,
    R: Reconciler<K>,
{
    reconciler
        .reconcile(obj, ctx)
        .await
        .map_err(Error::Reconcile)
}

/// Reconciles `obj` once behind `finalizer`: adds it first, or on deletion runs the cleanup and
/// removes it.
pub(crate) async fn finalized<K, R>(
    reconciler: &R,
    finalizer: &str,
    obj: Arc<K>,
    ctx: &Context<K>,
) -> Result<Action, Error<R::Error>>
where
    K: Cacheable,
    R: Cleanup<K>,
{
    let client = ctx.client();
    let has_finalizer = finalizer::has(obj.meta(), finalizer);
    if obj.meta().deletion_timestamp.is_some() {
        if !has_finalizer {
            return Ok(Action::await_change());
        }
        reconciler
            .cleanup(Arc::clone(&obj), ctx)
            .await
            .map_err(Error::Cleanup)?;
        // The controller's own writes are no reason to reconcile again.
        let ticket = ctx
            .own_writes()
            .begin(target_of(ctx.kind().name(), obj.meta()));
        // `None`: the object is already gone, which is what removing the finalizer is for.
        let removed = finalizer::remove(&client, ctx.kind(), obj.as_ref(), finalizer)
            .await
            .map_err(|source| Error::RemoveFinalizer {
                finalizer: finalizer.to_owned(),
                source,
            })?;
        if let Some(removed) = removed {
            ticket.finish(removed.meta());
        }
        return Ok(Action::await_change());
    }
    let obj = if has_finalizer {
        obj
    } else {
        let ticket = ctx
            .own_writes()
            .begin(target_of(ctx.kind().name(), obj.meta()));
        let added = finalizer::add(&client, ctx.kind(), obj.as_ref(), finalizer)
            .await
            .map_err(|source| Error::AddFinalizer {
                finalizer: finalizer.to_owned(),
                source,
            })?;
        ticket.finish(added.meta());
        Arc::new(added)
    };
    reconcile(reconciler, obj, ctx).await
}
