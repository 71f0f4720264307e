//! Runs a bound controller until shutdown: a fresh queue, every cached object queued once, N
//! workers; a later run (say, the next term of leadership) gets a fresh queue again.

use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, try_join_all};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::trigger::Wired;
use super::why::{Reason, Trigger};
use super::worker::work;
use super::{Bound, Cacheable};
use crate::informer::{self, SharedInformer};
use crate::metrics::WorkqueueMetrics;
use crate::queue::{AddOptions, Priority};

/// How often the unfinished-work gauges of a running controller's queue are updated.
const UNFINISHED_WORK_PERIOD: Duration = Duration::from_millis(500);

/// Sets the queue's gauges back to zero when a run ends (also when its task is aborted): the
/// queue is gone, so nothing waits and nothing is being worked on.
struct ResetGauges(Arc<WorkqueueMetrics>);

impl Drop for ResetGauges {
    fn drop(&mut self) {
        self.0.reset();
    }
}

impl<K: Cacheable> Bound<K> {
    /// Reconciles until `shutdown` completes: starts the informers that are not running yet,
    /// waits until the caches of the controller's kind and of what it owns and watches have
    /// synced, then works a fresh queue with the controller's concurrency. Each run reconciles
    /// every cached object at least once.
    ///
    /// Once `shutdown` completes, no new reconcile starts, and the future completes when the
    /// reconciles in flight have finished. Run it again afterwards (e.g. for another term of
    /// leadership) to start over with a fresh queue; never run it twice at once.
    ///
    /// # Errors
    /// [`informer::Error::NoRuntime`] outside a tokio runtime, and
    /// [`informer::Error::ShutDown`] when an informer it waits for is shut down before syncing.
    ///
    /// # Cancel safety
    /// Dropping the future stops the workers at their next `.await` without finishing what
    /// they were reconciling; complete `shutdown` instead for a graceful stop.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> Result<(), informer::Error> {
        let token = CancellationToken::new();
        let work = self.work(token.clone());
        tokio::pin!(work);
        tokio::select! {
            // Before shutdown, only an error ends the work.
            ended = &mut work => return ended,
            () = shutdown => token.cancel(),
        }
        work.await
    }

    async fn work(&self, shutdown: CancellationToken) -> Result<(), informer::Error> {
        let wiring = &self.wiring;
        let name = wiring.name.as_str();
        let _reset = ResetGauges(Arc::clone(wiring.queues.metrics()));
        wiring.queues.metrics().run().start();
        // Open before the informers start, so that the handlers' first keys land in this queue.
        let opened = wiring.intake.open(wiring.queues.build());
        wiring.forward_sources();
        wiring.factory.start()?;
        tokio::select! {
            synced = wait_for_caches(&wiring.informer, &wiring.wired) => synced?,
            () = shutdown.cancelled() => return Ok(()),
        }
        let queue = opened.queue().clone();
        if opened.missed() {
            // Whatever changed before this run, each cached object is reconciled once, as
            // after an initial list; keys of deleted objects are not queued.
            for key in wiring.informer.store().keys() {
                let listed = Trigger::bare(Reason::Listed);
                wiring
                    .intake
                    .add_with(key, AddOptions::new().priority(Priority::LOW), listed);
            }
        }
        wiring.queues.metrics().run().backlog(queue.len());
        tracing::info!(controller = %name, workers = wiring.concurrency, queued = queue.len(), "starting workers");
        let mut workers = JoinSet::new();
        for _ in 0..wiring.concurrency {
            crate::task::spawn_in(
                &mut workers,
                work(queue.clone(), Arc::clone(&wiring.shared), shutdown.clone()),
            );
        }
        // Keeps workqueue_unfinished_work_seconds and ..._longest_running_processor_seconds
        // current while a reconcile runs, as client-go's queue does.
        let mut ticks = tokio::time::interval(UNFINISHED_WORK_PERIOD);
        while shutdown.run_until_cancelled(ticks.tick()).await.is_some() {
            queue.update_unfinished_work();
        }
        drop(opened);
        while workers.join_next().await.is_some() {}
        tracing::info!(controller = %name, "workers stopped");
        Ok(())
    }
}

/// Waits until the controller's informer and those of its triggers have synced.
pub(super) async fn wait_for_caches<K: Cacheable>(
    informer: &SharedInformer<K>,
    wired: &[Wired],
) -> Result<(), informer::Error> {
    informer.wait_for_sync().await?;
    let waits: Vec<BoxFuture<'static, Result<(), informer::Error>>> =
        wired.iter().map(|w| (w.synced)()).collect();
    try_join_all(waits).await?;
    Ok(())
}
