//! Works a controller's queue: each worker takes keys and reconciles them.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::erased::{ErasedReconciler, Failure};
use super::failure::{self, Reporting, ToJson};
use super::pause::{self, Gate};
use super::why::record::{Ended, Reconciled, TriggerRecord};
use super::why::{Pending, Reason, Recorder, Run, Taken, Trigger};
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
    /// The triggers of the keys in the queue.
    pub(crate) pending: Arc<Pending>,
    /// The controller's flight recorder.
    pub(crate) recorder: Arc<Recorder>,
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
        let taken = shared.pending.take(&key);
        if process(&queue, &shared, &key, taken).await == Finished::Forget {
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
    taken: Taken,
) -> Finished {
    // After a write of its own (a status, a finalizer), the object as the controller left it,
    // and the objects its last reconcile created with generateName, wrote as their controller or
    // deleted (see expectations).
    shared.ctx.before_reconcile(key).await;
    let Some(mut obj) = shared.ctx.store().get(key) else {
        // Deleted: nothing to reconcile, and its failures and history are history.
        shared.recorder.forget(key);
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
    let started_ms = super::why::now_ms();
    let queued = taken
        .since
        .map(|since| started.saturating_duration_since(since));
    let run = Arc::new(Run::new(
        taken.triggers,
        taken.dropped,
        shared.recorder.is_on(),
    ));
    let attempt = shared
        .reconciler
        .run(Arc::clone(&obj), &shared.ctx, shared.timeout);
    let attempt = super::why::running(Arc::clone(&run), attempt);
    let attempt = super::expectations::reconciling(key.clone(), attempt);
    let outcome = AssertUnwindSafe(attempt)
        .catch_unwind()
        .instrument(span.clone())
        .await;
    let entered = span.enter();
    let Settled {
        counted,
        finished,
        ended,
        failed,
    } = settle(queue, shared, key, outcome);
    let ran = started.elapsed();
    shared.metrics.finished(counted, ran);
    drop(entered);
    // The key is still ours (not `done` yet): the trigger of the requeue it just got is noted
    // before any worker can take the key again.
    requeued(&shared.pending, key, counted, &ended);
    if shared.recorder.is_on() {
        let record = Reconciled {
            started_ms,
            queued_ms: queued.map_or(0, millis),
            ran_ms: millis(ran),
            result: ended,
            triggers: run.triggers.iter().map(TriggerRecord::from).collect(),
            more_triggers: run.dropped,
            writes: run.take_writes(),
        };
        shared.recorder.record(key, &record);
    }
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

/// What became of a finished attempt.
struct Settled {
    counted: Outcome,
    finished: Finished,
    ended: Ended,
    /// A failure to report on the object.
    failed: Option<Failure>,
}

/// Requeues (or not) the key of an attempt that ended with `outcome`, and says how it ended.
fn settle<K: Cacheable>(
    queue: &WorkQueue<ObjectKey>,
    shared: &Shared<K>,
    key: &ObjectKey,
    outcome: std::thread::Result<Result<super::Action, Failure>>,
) -> Settled {
    let mut failed = None;
    let mut finished = Finished::Keep;
    let mut ended = Ended::Ok;
    let counted = match outcome {
        Ok(Ok(action)) => match action.requeue_after() {
            // "Again now" is rate limited, as controller-runtime's `Requeue: true`.
            Some(Duration::ZERO) => {
                queue.add_rate_limited(key.clone());
                ended = Ended::Requeue;
                Outcome::Requeue
            }
            Some(delay) => {
                queue.add_after(key.clone(), delay);
                finished = Finished::Forget;
                let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                ended = Ended::RequeueAfter { delay_ms };
                Outcome::RequeueAfter
            }
            None => {
                finished = Finished::Forget;
                Outcome::Success
            }
        },
        Ok(Err(failure)) => {
            // `Error::Timeout`'s step: the attempt was cut off by the controller's timeout.
            let message = crate::error::chain(&*failure.error);
            if failure.step == "timeout" {
                shared.metrics.timed_out();
                ended = Ended::Timeout { message };
            } else {
                ended = Ended::Error { message };
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
            ended = Ended::Panic { message };
            Outcome::Panic
        }
    };
    Settled {
        counted,
        finished,
        ended,
        failed,
    }
}

/// Notes the trigger of the requeue a reconcile of `key` that ended as `ended` asked for.
fn requeued(pending: &Pending, key: &ObjectKey, counted: Outcome, ended: &Ended) {
    let now = tokio::time::Instant::now();
    match (counted, ended) {
        (_, Ended::RequeueAfter { delay_ms }) => {
            let ready = now + Duration::from_millis(*delay_ms);
            pending.push_ready_at(key, Trigger::bare(Reason::RequeueAfter), Some(ready));
        }
        (Outcome::Requeue, _) => pending.push(key, Trigger::bare(Reason::Requeue)),
        (Outcome::Error { terminal: false } | Outcome::Panic, _) => {
            pending.push(key, Trigger::bare(Reason::Retry));
        }
        _ => {}
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
