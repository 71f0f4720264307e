//! Works a controller's queue: each worker takes keys and reconciles them.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::erased::{ErasedReconciler, Failure};
use super::finalizer;
use super::{Action, Context, ErrorAction, Watchable};
use crate::cache::ObjectKey;
use crate::metrics::{ControllerMetrics, Outcome};
use crate::queue::WorkQueue;

/// What every worker of one controller uses.
pub(crate) struct Shared<K> {
    pub(crate) ctx: Context<K>,
    pub(crate) reconciler: Arc<dyn ErasedReconciler<K>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) finalizer: Option<String>,
    pub(crate) metrics: ControllerMetrics,
}

/// One worker: takes keys until shutdown; a key it took is always finished.
pub(super) async fn work<K: Watchable>(
    queue: WorkQueue<ObjectKey>,
    shared: Arc<Shared<K>>,
    shutdown: CancellationToken,
) {
    loop {
        let key = tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            key = queue.get() => match key {
                Some(key) => key,
                None => return,
            },
        };
        process(&queue, &shared, &key).await;
        queue.done(&key);
    }
}

async fn process<K: Watchable>(queue: &WorkQueue<ObjectKey>, shared: &Shared<K>, key: &ObjectKey) {
    let Some(obj) = shared.ctx.get(key) else {
        // Deleted: nothing to reconcile, and its failures are history.
        queue.forget(key);
        return;
    };
    let span = tracing::info_span!(
        "reconcile",
        controller = shared.ctx.name(),
        kind = %K::kind(&()),
        namespace = key.namespace().unwrap_or_default(),
        object = key.name(),
        reconcile_id = %super::reconcile_id::next(),
    );
    shared.metrics.started();
    let started = tokio::time::Instant::now();
    let outcome = AssertUnwindSafe(reconcile(shared, obj))
        .catch_unwind()
        .instrument(span.clone())
        .await;
    let _entered = span.enter();
    let counted = match outcome {
        Ok(Ok(action)) => match action.requeue_after() {
            // "Again now" is rate limited, as controller-runtime's `Requeue: true`.
            Some(Duration::ZERO) => {
                queue.add_rate_limited(key.clone());
                Outcome::Requeue
            }
            Some(delay) => {
                queue.forget(key);
                queue.add_after(key.clone(), delay);
                Outcome::RequeueAfter
            }
            None => {
                queue.forget(key);
                Outcome::Success
            }
        },
        Ok(Err(failure)) => {
            tracing::warn!(error = %failure.error, "reconcile failed");
            match failure.action {
                ErrorAction::Retry => queue.add_rate_limited(key.clone()),
                ErrorAction::RetryAfter(delay) => queue.add_after(key.clone(), delay),
                ErrorAction::Terminal => queue.forget(key),
            }
            Outcome::Error {
                terminal: failure.action == ErrorAction::Terminal,
            }
        }
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(panic = %message, "reconcile panicked; retrying with backoff");
            queue.add_rate_limited(key.clone());
            Outcome::Panic
        }
    };
    shared.metrics.finished(counted, started.elapsed());
}

/// Runs the finalizer steps and the user's reconcile (or cleanup), within the timeout.
async fn reconcile<K: Watchable>(shared: &Shared<K>, obj: Arc<K>) -> Result<Action, Failure> {
    let run = async {
        let client = shared.ctx.client();
        let Some(finalizer) = &shared.finalizer else {
            return shared.reconciler.reconcile(obj, &shared.ctx).await;
        };
        let has_finalizer = finalizer::has(obj.meta(), finalizer);
        if obj.meta().deletion_timestamp.is_some() {
            if !has_finalizer {
                return Ok(Action::await_change());
            }
            shared
                .reconciler
                .cleanup(Arc::clone(&obj), &shared.ctx)
                .await?;
            // `None`: the object is already gone, which is what removing the finalizer is for.
            finalizer::remove(&client, obj.as_ref(), finalizer)
                .await
                .map_err(retry)?;
            return Ok(Action::await_change());
        }
        let obj = if has_finalizer {
            obj
        } else {
            Arc::new(
                finalizer::add(&client, obj.as_ref(), finalizer)
                    .await
                    .map_err(retry)?,
            )
        };
        shared.reconciler.reconcile(obj, &shared.ctx).await
    };
    match shared.timeout {
        None => run.await,
        Some(limit) => tokio::time::timeout(limit, run).await.unwrap_or_else(|_| {
            Err(Failure {
                error: format!("reconcile timed out after {limit:?}").into(),
                action: ErrorAction::Retry,
            })
        }),
    }
}

fn retry(error: kube::Error) -> Failure {
    Failure {
        error: Box::new(error),
        action: ErrorAction::Retry,
    }
}
