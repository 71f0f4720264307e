//! Reports a work queue's measurements in the `workqueue_*` families.

use std::time::Duration;

use parking_lot::Mutex;
use prometheus::{Counter, Gauge, Histogram, IntCounter, IntGauge};

use super::Metrics;
use crate::queue::{Priority, QueueHooks};

/// Queue hooks for one queue, labelled `name` and `controller` with the controller's name.
#[derive(Debug)]
pub(crate) struct WorkqueueMetrics {
    depth: IntGauge,
    /// Ready keys per priority: `workqueue_depth` is their sum.
    depth_by_priority: Mutex<Vec<(Priority, usize)>>,
    adds: IntCounter,
    queue_duration: Histogram,
    work_duration: Histogram,
    unfinished: Gauge,
    longest: Gauge,
    retries: Counter,
}

impl WorkqueueMetrics {
    pub(crate) fn new(metrics: &Metrics, name: &str) -> Self {
        let labels = [name, name];
        Self {
            depth: metrics.depth.with_label_values(&labels),
            depth_by_priority: Mutex::default(),
            adds: metrics.adds.with_label_values(&labels),
            queue_duration: metrics.queue_duration.with_label_values(&labels),
            work_duration: metrics.work_duration.with_label_values(&labels),
            unfinished: metrics.unfinished.with_label_values(&labels),
            longest: metrics.longest.with_label_values(&labels),
            retries: metrics.retries.with_label_values(&labels),
        }
    }
}

impl WorkqueueMetrics {
    /// Sets the gauges back to zero once the queue they describe is gone: a dropped queue holds
    /// no keys and no work (its counters and histograms keep their history).
    pub(crate) fn reset(&self) {
        self.depth_by_priority.lock().clear();
        self.depth.set(0);
        self.unfinished.set(0.0);
        self.longest.set(0.0);
    }
}

impl QueueHooks for WorkqueueMetrics {
    fn depth(&self, priority: Priority, depth: usize) {
        let mut by_priority = self.depth_by_priority.lock();
        match by_priority.iter_mut().find(|(p, _)| *p == priority) {
            Some(entry) => entry.1 = depth,
            None => by_priority.push((priority, depth)),
        }
        let total: usize = by_priority.iter().map(|(_, d)| d).sum();
        self.depth.set(i64::try_from(total).unwrap_or(i64::MAX));
    }

    fn add(&self, _priority: Priority) {
        self.adds.inc();
    }

    fn queue_duration(&self, _priority: Priority, waited: Duration) {
        self.queue_duration.observe(waited.as_secs_f64());
    }

    fn work_duration(&self, worked: Duration) {
        self.work_duration.observe(worked.as_secs_f64());
    }

    fn unfinished_work(&self, total: Duration) {
        self.unfinished.set(total.as_secs_f64());
    }

    fn longest_running_processor(&self, longest: Duration) {
        self.longest.set(longest.as_secs_f64());
    }

    fn retry(&self) {
        self.retries.inc();
    }
}
