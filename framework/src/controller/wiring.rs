//! What every run of one bound controller shares: its informers and handlers, the intake its
//! keys go through, and the way each run's fresh queue is built.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::intake::Intake;
use super::source::{Source, forward};
use super::trigger::Wired;
use super::worker::Shared;
use crate::cache::ObjectKey;
use crate::informer::{Factory, SharedInformer};
use crate::metrics::WorkqueueMetrics;
use crate::queue::{RateLimiter, WorkQueue};

/// What every run of one controller shares: informers and handlers stay registered, caches
/// stay warm; only the queue and the workers belong to a run.
pub(crate) struct Wiring<K> {
    pub(crate) name: String,
    pub(crate) factory: Arc<Factory>,
    pub(crate) informer: SharedInformer<K>,
    pub(crate) intake: Intake,
    pub(crate) queues: Queues,
    pub(crate) shared: Arc<Shared<K>>,
    pub(crate) concurrency: u16,
    pub(crate) wired: Vec<Wired>,
    /// The external sources until the first run forwards them; then the forwarding tasks.
    pub(crate) sources: Mutex<Vec<Source>>,
    pub(crate) forwarding: Mutex<Option<JoinSet<()>>>,
}

/// Builds each run's queue, with the controller's metrics and rate limiter.
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

    /// The metrics every run's queue reports to.
    pub(crate) fn metrics(&self) -> &Arc<WorkqueueMetrics> {
        &self.metrics
    }

    /// A run's fresh queue.
    pub(crate) fn build(&self) -> WorkQueue<ObjectKey> {
        let mut queue = WorkQueue::builder().hooks(self.metrics.clone());
        if let Some(limiter) = &self.limiter {
            // A limiter cannot be cloned: the runs share it, failure counts included.
            queue = queue.rate_limiter(SharedLimiter(Arc::clone(limiter)));
        }
        queue.build()
    }
}

/// The user's rate limiter behind the queues of successive runs.
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

impl<K> Wiring<K> {
    /// Starts forwarding the external sources, on the first run; they outlive the run.
    pub(crate) fn forward_sources(&self) {
        let mut forwarding = self.forwarding.lock();
        if forwarding.is_none() {
            let sources = std::mem::take(&mut *self.sources.lock());
            *forwarding = Some(forward(sources, &self.intake));
        }
    }
}
