//! Runs a controller for one leadership term: a fresh queue, every cached object queued once,
//! N workers; the next term gets a fresh queue again.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Watchable;
use super::intake::Intake;
use super::source::{Source, forward};
use super::trigger::Wired;
use super::worker::{Shared, work};
use crate::cache::ObjectKey;
use crate::informer::SharedInformer;
use crate::manager::{BoxError, Runnable};
use crate::metrics::WorkqueueMetrics;
use crate::queue::{AddOptions, Priority, RateLimiter, WorkQueue};

/// How often the unfinished-work gauges of a running controller's queue are updated.
const UNFINISHED_WORK_PERIOD: Duration = Duration::from_millis(500);

/// A controller wired to its informers, ready to run one term; [`Runnable::next_term`] gives the
/// next one, sharing the wiring.
pub(crate) struct Running<K>(pub(crate) Arc<Wiring<K>>);

/// What every term of one controller shares: informers and handlers stay registered, caches
/// stay warm; only the queue and the workers belong to a term.
pub(crate) struct Wiring<K> {
    pub(crate) name: String,
    pub(crate) informer: SharedInformer<K>,
    pub(crate) intake: Intake,
    pub(crate) queues: Queues,
    pub(crate) shared: Arc<Shared<K>>,
    pub(crate) concurrency: u16,
    pub(crate) wired: Vec<Wired>,
    /// The external sources until the first term forwards them; then the forwarding tasks.
    pub(crate) sources: Mutex<Vec<Source>>,
    pub(crate) forwarding: Mutex<Option<JoinSet<()>>>,
}

/// Builds each term's queue, with the controller's metrics and rate limiter.
pub(crate) struct Queues {
    metrics: Arc<WorkqueueMetrics>,
    limiter: Option<Arc<Mutex<Box<dyn RateLimiter<ObjectKey>>>>>,
}

impl Queues {
    pub(crate) fn new(
        metrics: WorkqueueMetrics,
        limiter: Option<Box<dyn RateLimiter<ObjectKey>>>,
    ) -> Self {
        Self {
            metrics: Arc::new(metrics),
            limiter: limiter.map(|l| Arc::new(Mutex::new(l))),
        }
    }

    fn build(&self) -> WorkQueue<ObjectKey> {
        let mut queue = WorkQueue::builder().hooks(self.metrics.clone());
        if let Some(limiter) = &self.limiter {
            // A limiter cannot be cloned: the terms share it, failure counts included.
            queue = queue.rate_limiter(SharedLimiter(Arc::clone(limiter)));
        }
        queue.build()
    }
}

/// The user's rate limiter behind the queues of successive terms.
struct SharedLimiter(Arc<Mutex<Box<dyn RateLimiter<ObjectKey>>>>);

impl RateLimiter<ObjectKey> for SharedLimiter {
    fn when(&mut self, item: &ObjectKey, now: Instant) -> Duration {
        self.0.lock().when(item, now)
    }

    fn forget(&mut self, item: &ObjectKey) {
        self.0.lock().forget(item);
    }

    fn num_requeues(&self, item: &ObjectKey) -> u32 {
        self.0.lock().num_requeues(item)
    }
}

/// Sets the queue's gauges back to zero when a term ends (also when its task is aborted): the
/// queue is gone, so nothing waits and nothing is being worked on.
struct ResetGauges(Arc<WorkqueueMetrics>);

impl Drop for ResetGauges {
    fn drop(&mut self) {
        self.0.reset();
    }
}

impl<K: Watchable> Runnable for Running<K> {
    fn name(&self) -> String {
        self.0.name.clone()
    }

    fn next_term(&self) -> Option<Box<dyn Runnable>> {
        Some(Box::new(Running(Arc::clone(&self.0))))
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async move {
            let wiring = self.0;
            let name = wiring.name.as_str();
            wiring.forward_sources();
            let _reset = ResetGauges(Arc::clone(&wiring.queues.metrics));
            let opened = wiring.intake.open(wiring.queues.build());
            tokio::select! {
                synced = wait_for_caches(&wiring.informer, &wiring.wired) => synced?,
                () = shutdown.cancelled() => return Ok(()),
            }
            let queue = opened.queue().clone();
            if opened.missed() {
                // Whatever changed before this term, each cached object is reconciled once, as
                // after an initial list; keys of deleted objects are not queued.
                for key in wiring.informer.store().keys() {
                    queue.add_with(key, AddOptions::new().priority(Priority::LOW));
                }
            }
            tracing::info!(controller = %name, workers = wiring.concurrency, queued = queue.len(), "starting workers");
            let mut workers = JoinSet::new();
            for _ in 0..wiring.concurrency {
                workers.spawn(work(
                    queue.clone(),
                    Arc::clone(&wiring.shared),
                    shutdown.clone(),
                ));
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
        })
    }
}

impl<K> Wiring<K> {
    /// Starts forwarding the external sources, on the first term; they outlive the term.
    fn forward_sources(&self) {
        let mut forwarding = self.forwarding.lock();
        if forwarding.is_none() {
            let sources = std::mem::take(&mut *self.sources.lock());
            *forwarding = Some(forward(sources, &self.intake));
        }
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
