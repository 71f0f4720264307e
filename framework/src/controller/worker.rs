//! Works a controller's queue: each worker takes keys and reconciles them.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::erased::ErasedReconciler;
use super::failure::{self, Reporting, ToJson};
use super::pause::{self, Gate};
use super::{Cacheable, Context};
use crate::cache::ObjectKey;
use crate::metrics::{ControllerMetrics, Outcome};
use crate::queue::WorkQueue;

/// What every worker of one controller uses.
pub(crate) struct Shared<K> {
    pub(crate) ctx: Context<K>,
    pub(crate) reconciler: Arc<dyn ErasedReconciler<K>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) metrics: ControllerMetrics,
    /// Where failed reconciles are reported.
    pub(crate) reporting: Reporting,
    /// Reads an object as JSON, for the failure report on its status.
    pub(crate) to_json: ToJson<K>,
}

/// One worker: takes keys until shutdown; a key it took is always finished.
pub(super) async fn work<K: Cacheable>(
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
        if process(&queue, &shared, &key).await == Finished::Forget {
            queue.forget_and_done(&key);
        } else {
            queue.done(&key);
        }
    }
}

/// What the worker does with the rate limiter's record of a key it finished.
#[derive(Debug, PartialEq, Eq)]
enum Finished {
    /// Its failures are history: forgotten under the same lock as `done`.
    Forget,
    /// Kept: the key was requeued rate limited, or it failed.
    Keep,
}

async fn process<K: Cacheable>(
    queue: &WorkQueue<ObjectKey>,
    shared: &Shared<K>,
    key: &ObjectKey,
) -> Finished {
    // After a write of its own (a status, a finalizer), the object as the controller left it,
    // and the objects its last reconcile created with generateName, wrote as their controller or
    // deleted (see expectations).
    shared.ctx.before_reconcile(key).await;
    let Some(mut obj) = shared.ctx.store().get(key) else {
        // Deleted: nothing to reconcile, and its failures are history.
        return Finished::Forget;
    };
    let span = tracing::info_span!(
        "reconcile",
        controller = shared.ctx.name(),
        kind = %shared.ctx.kind().name(),
        namespace = key.namespace().unwrap_or_default(),
        object = key.name(),
        reconcile_id = %super::reconcile_id::next(),
    );
    let gate = pause::gate(&shared.ctx, &shared.reporting, shared.to_json, &obj);
    match gate.instrument(span.clone()).await {
        Gate::Open => {}
        // Its resume (or its deletion) queues it again; until then nothing is retried.
        Gate::Paused => return Finished::Forget,
        Gate::Resumed => {
            // Reconciled as the cache has it after the condition's write.
            (shared.ctx)
                .fence_object(shared.ctx.store(), shared.ctx.own_resource(), key)
                .await;
            match shared.ctx.store().get(key) {
                Some(resumed) if !pause::is_paused(resumed.meta()) => obj = resumed,
                // Gone, or paused again meanwhile: that change queued the key again.
                _ => return Finished::Forget,
            }
        }
    }
    shared.metrics.started();
    let started = tokio::time::Instant::now();
    let attempt = shared
        .reconciler
        .run(Arc::clone(&obj), &shared.ctx, shared.timeout);
    let attempt = super::expectations::reconciling(key.clone(), attempt);
    let outcome = AssertUnwindSafe(attempt)
        .catch_unwind()
        .instrument(span.clone())
        .await;
    let entered = span.enter();
    let mut failed = None;
    let mut finished = Finished::Keep;
    let counted = match outcome {
        Ok(Ok(action)) => match action.requeue_after() {
            // "Again now" is rate limited, as controller-runtime's `Requeue: true`.
            Some(Duration::ZERO) => {
                queue.add_rate_limited(key.clone());
                Outcome::Requeue
            }
            Some(delay) => {
                queue.add_after(key.clone(), delay);
                finished = Finished::Forget;
                Outcome::RequeueAfter
            }
            None => {
                finished = Finished::Forget;
                Outcome::Success
            }
        },
        Ok(Err(failure)) => {
            // `Error::Timeout`'s step: the attempt was cut off by the controller's timeout.
            if failure.step == "timeout" {
                shared.metrics.timed_out();
            }
            let connectivity = shared.ctx.factory().connectivity();
            if failure::is_outage(connectivity, &failure) {
                failure::wait_for_server(queue, key, connectivity, &failure)
            } else {
                failure::settle(queue, key, failed.insert(failure))
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
    drop(entered);
    if let Some(failure) = failed {
        // After the result is counted and the key requeued: reporting changes neither.
        failure::report(
            &shared.ctx,
            &shared.reporting,
            shared.to_json,
            &obj,
            &failure,
        )
        .instrument(span)
        .await;
    }
    finished
}
