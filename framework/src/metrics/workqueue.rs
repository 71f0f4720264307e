//! Reports a work queue's measurements in the `workqueue_*` families.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use prometheus::{Counter, Gauge, Histogram, IntCounter, IntGauge};

use super::Metrics;
use super::run::RunMetrics;
use crate::queue::{Priority, QueueHooks};

/// Queue hooks for one queue, labelled `name` and `controller` with the controller's name.
#[derive(Debug)]
pub(crate) struct WorkqueueMetrics {
    /// The sum of the ready keys at every priority.
    depth: IntGauge,
    /// Ready keys at [`Priority::NORMAL`], where live changes go: kept without a lock, since
    /// the queue reports it on every add and every get.
    normal_depth: AtomicUsize,
    /// Ready keys at each other priority, and their sum.
    other_depths: Mutex<Vec<(Priority, usize)>>,
    other_total: AtomicUsize,
    adds: IntCounter,
    queue_duration: Histogram,
    work_duration: Histogram,
    unfinished: Gauge,
    longest: Gauge,
    retries: Counter,
    /// How the controller's current run gets going (first reconcile, backlog, drain).
    run: RunMetrics,
}

impl WorkqueueMetrics {
    pub(crate) fn new(metrics: &Metrics, name: &str) -> Self {
        let labels = [name, name];
        Self {
            depth: metrics.depth.with_label_values(&labels),
            normal_depth: AtomicUsize::new(0),
            other_depths: Mutex::default(),
            other_total: AtomicUsize::new(0),
            adds: metrics.adds.with_label_values(&labels),
            queue_duration: metrics.queue_duration.with_label_values(&labels),
            work_duration: metrics.work_duration.with_label_values(&labels),
            unfinished: metrics.unfinished.with_label_values(&labels),
            longest: metrics.longest.with_label_values(&labels),
            retries: metrics.retries.with_label_values(&labels),
            run: RunMetrics::new(metrics, name),
        }
    }
}

impl WorkqueueMetrics {
    /// The families of the controller's current run.
    pub(crate) fn run(&self) -> &RunMetrics {
        &self.run
    }

    /// Sets the gauges back to zero once the queue they describe is gone: a dropped queue holds
    /// no keys and no work (its counters and histograms keep their history).
    pub(crate) fn reset(&self) {
        self.run.end();
        self.other_depths.lock().clear();
        self.other_total.store(0, Ordering::Relaxed);
        self.normal_depth.store(0, Ordering::Relaxed);
        self.depth.set(0);
        self.unfinished.set(0.0);
        self.longest.set(0.0);
    }
}

impl QueueHooks for WorkqueueMetrics {
    /// The queue reports depths under its lock, one at a time, so the sum it sets is never
    /// mixed from two reports.
    fn depth(&self, priority: Priority, depth: usize) {
        let total = if priority == Priority::NORMAL {
            self.normal_depth.store(depth, Ordering::Relaxed);
            depth + self.other_total.load(Ordering::Relaxed)
        } else {
            let mut others = self.other_depths.lock();
            match others.iter_mut().find(|(p, _)| *p == priority) {
                Some(entry) => entry.1 = depth,
                None => others.push((priority, depth)),
            }
            let others: usize = others.iter().map(|(_, d)| d).sum();
            self.other_total.store(others, Ordering::Relaxed);
            others + self.normal_depth.load(Ordering::Relaxed)
        };
        self.depth.set(i64::try_from(total).unwrap_or(i64::MAX));
    }

    fn add(&self, _priority: Priority) {
        self.adds.inc();
    }

    fn queue_duration(&self, _priority: Priority, waited: Duration) {
        self.queue_duration.observe(waited.as_secs_f64());
        self.run.took();
    }

    fn work_duration(&self, worked: Duration) {
        self.work_duration.observe(worked.as_secs_f64());
        self.run.done();
    }

    fn unfinished_work(&self, total: Duration) {
        self.unfinished.set(total.as_secs_f64());
        let ready =
            self.normal_depth.load(Ordering::Relaxed) + self.other_total.load(Ordering::Relaxed);
        self.run.tick(ready);
    }

    fn longest_running_processor(&self, longest: Duration) {
        self.longest.set(longest.as_secs_f64());
    }

    fn retry(&self) {
        self.retries.inc();
    }
}

#[cfg(test)]
mod tests {
    use prometheus::Registry;

    use super::*;

    fn depth(registry: &Registry) -> f64 {
        registry
            .gather()
            .iter()
            .filter(|f| f.name() == "workqueue_depth")
            .flat_map(|f| f.get_metric().iter())
            .map(|m| m.get_gauge().get_value())
            .sum()
    }

    #[test]
    fn the_depth_is_the_sum_of_the_latest_report_of_every_priority() -> anyhow::Result<()> {
        let registry = Registry::new();
        let hooks = WorkqueueMetrics::new(&Metrics::new(&registry)?, "q");
        hooks.depth(Priority::NORMAL, 3);
        hooks.depth(Priority::LOW, 2);
        hooks.depth(Priority(7), 4);
        assert!((depth(&registry) - 9.0).abs() < f64::EPSILON);
        hooks.depth(Priority::NORMAL, 1);
        hooks.depth(Priority::LOW, 0);
        assert!((depth(&registry) - 5.0).abs() < f64::EPSILON);
        hooks.reset();
        assert!(depth(&registry).abs() < f64::EPSILON);
        hooks.depth(Priority::LOW, 1);
        assert!(
            (depth(&registry) - 1.0).abs() < f64::EPSILON,
            "a reset forgets every priority's depth"
        );
        Ok(())
    }
}
