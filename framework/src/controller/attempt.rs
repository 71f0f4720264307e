//! Runs one attempt at an object: the finalizer steps and the user's reconcile or cleanup, within the timeout.

use std::sync::Arc;
use std::time::Duration;

use super::{Action, Context, Error, Reconciler, Watchable, finalizer};

/// Reconciles `obj` once with `reconciler`: with a `finalizer`, adds it first, or on deletion
/// runs cleanup and removes it; the whole attempt fails with [`Error::Timeout`] after `timeout`.
pub(crate) async fn attempt<K, R>(
    reconciler: &R,
    obj: Arc<K>,
    ctx: &Context<K>,
    finalizer: Option<&str>,
    timeout: Option<Duration>,
) -> Result<Action, Error<R::Error>>
where
    K: Watchable,
    R: Reconciler<K>,
{
    let run = steps(reconciler, obj, ctx, finalizer);
    match timeout {
        None => run.await,
        Some(limit) => tokio::time::timeout(limit, run)
            .await
            .unwrap_or(Err(Error::Timeout(limit))),
    }
}

async fn steps<K, R>(
    reconciler: &R,
    obj: Arc<K>,
    ctx: &Context<K>,
    finalizer: Option<&str>,
) -> Result<Action, Error<R::Error>>
where
    K: Watchable,
    R: Reconciler<K>,
{
    let Some(finalizer) = finalizer else {
        return reconciler
            .reconcile(obj, ctx)
            .await
            .map_err(Error::Reconcile);
    };
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
        // `None`: the object is already gone, which is what removing the finalizer is for.
        finalizer::remove(&client, obj.as_ref(), finalizer)
            .await
            .map_err(|source| Error::RemoveFinalizer {
                finalizer: finalizer.to_owned(),
                source,
            })?;
        return Ok(Action::await_change());
    }
    let obj = if has_finalizer {
        obj
    } else {
        let added = finalizer::add(&client, obj.as_ref(), finalizer)
            .await
            .map_err(|source| Error::AddFinalizer {
                finalizer: finalizer.to_owned(),
                source,
            })?;
        Arc::new(added)
    };
    reconciler
        .reconcile(obj, ctx)
        .await
        .map_err(Error::Reconcile)
}
