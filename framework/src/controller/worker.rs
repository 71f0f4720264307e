//! Runs a controller: waits for its caches, then N workers take keys and reconcile them.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::erased::ErasedReconciler;
use super::failure::{self, Echoes, Reporting};
use super::source::{Source, forward};
use super::trigger::Wired;
use super::{Context, Watchable};
use crate::cache::ObjectKey;
use crate::informer::SharedInformer;
use crate::manager::{BoxError, Runnable};
use crate::metrics::{ControllerMetrics, Outcome};
use crate::queue::WorkQueue;

/// How often the unfinished-work gauges of a running controller's queue are updated.
const UNFINISHED_WORK_PERIOD: Duration = Duration::from_millis(500);

/// A controller wired to its informers and queue, ready to run.
pub(crate) struct Running<K> {
    pub(crate) name: String,
    pub(crate) informer: SharedInformer<K>,
    pub(crate) queue: WorkQueue<ObjectKey>,
    pub(crate) shared: Arc<Shared<K>>,
    pub(crate) concurrency: u16,
    pub(crate) wired: Vec<Wired>,
    pub(crate) sources: Vec<Source>,
}

/// What every worker of one controller uses.
pub(crate) struct Shared<K> {
    pub(crate) ctx: Context<K>,
    pub(crate) reconciler: Arc<dyn ErasedReconciler<K>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) finalizer: Option<String>,
    pub(crate) metrics: ControllerMetrics,
    /// Where failed reconciles are reported.
    pub(crate) reporting: Reporting,
    /// Status writes of failure reports, whose watch events the controller ignores.
    pub(crate) echoes: Arc<Echoes<K>>,
}

impl<K: Watchable> Runnable for Running<K> {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async move {
            let Running {
                name,
                informer,
                queue,
                shared,
                concurrency,
                wired,
                sources,
            } = *self;
            let forwarding = forward(sources, &queue);
            tokio::select! {
                synced = wait_for_caches(&informer, &wired) => synced?,
                () = shutdown.cancelled() => return Ok(()),
            }
            tracing::info!(controller = %name, workers = concurrency, "starting workers");
            let mut workers = JoinSet::new();
            for _ in 0..concurrency {
                workers.spawn(work(queue.clone(), Arc::clone(&shared), shutdown.clone()));
            }
            // Keeps workqueue_unfinished_work_seconds and ..._longest_running_processor_seconds
            // current while a reconcile runs, as client-go's queue does.
            let mut ticks = tokio::time::interval(UNFINISHED_WORK_PERIOD);
            while shutdown.run_until_cancelled(ticks.tick()).await.is_some() {
                queue.update_unfinished_work();
            }
            queue.shutdown();
            while workers.join_next().await.is_some() {}
            drop(wired);
            drop(forwarding);
            tracing::info!(controller = %name, "workers stopped");
            Ok(())
        })
    }
}

async fn wait_for_caches<K: Watchable>(
    informer: &SharedInformer<K>,
    wired: &[Wired],
) -> Result<(), BoxError> {
    informer.wait_for_sync().await?;
    while !wired.iter().all(|w| (w.synced)()) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// One worker: takes keys until shutdown; a key it took is always finished.
async fn work<K: Watchable>(
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
        namespace = key.namespace().unwrap_or_default(),
        object = key.name(),
    );
    shared.metrics.started();
    let started = tokio::time::Instant::now();
    let attempt = shared.reconciler.run(
        Arc::clone(&obj),
        &shared.ctx,
        shared.finalizer.as_deref(),
        shared.timeout,
    );
    let outcome = AssertUnwindSafe(attempt)
        .catch_unwind()
        .instrument(span.clone())
        .await;
    let entered = span.enter();
    let mut failed = None;
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
        Ok(Err(failure)) => failure::settle(queue, key, failed.insert(failure)),
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
        failure::report(shared, &obj, &failure)
            .instrument(span)
            .await;
    }
}
