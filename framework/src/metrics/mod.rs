//! Exposes controller-runtime's metric families, so existing dashboards and alerts work unchanged.
//!
//! Every family has controller-runtime's name, type, labels and buckets; [`REFERENCE`] lists them
//! for the book, and a test keeps it in step with what is registered.

mod controller;
mod workqueue;

use prometheus::{
    CounterVec, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};

pub use controller::{ControllerMetrics, Outcome};
pub use workqueue::WorkqueueMetrics;

/// Buckets of `controller_runtime_reconcile_time_seconds`, as controller-runtime defines them.
pub const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// Buckets of the work queue's duration histograms: 10 ns to 1000 s, ten times apart
/// (client-go's `ExponentialBuckets(10e-9, 10, 12)`).
pub const WORKQUEUE_DURATION_BUCKETS: [f64; 12] = [
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0,
];

/// Every family: name, type, labels, meaning.
pub const REFERENCE: &[(&str, &str, &str, &str)] = &[
    (
        "controller_runtime_reconcile_total",
        "counter",
        "controller, result",
        "Reconciles per controller and result (success, error, requeue, requeue_after).",
    ),
    (
        "controller_runtime_reconcile_errors_total",
        "counter",
        "controller",
        "Reconciles that returned an error.",
    ),
    (
        "controller_runtime_terminal_reconcile_errors_total",
        "counter",
        "controller",
        "Reconciles that returned an error the reconciler marked terminal (not retried).",
    ),
    (
        "controller_runtime_reconcile_panics_total",
        "counter",
        "controller",
        "Reconciles that panicked.",
    ),
    (
        "controller_runtime_reconcile_time_seconds",
        "histogram",
        "controller",
        "Time a reconcile took.",
    ),
    (
        "controller_runtime_max_concurrent_reconciles",
        "gauge",
        "controller",
        "Configured maximum of reconciles at once.",
    ),
    (
        "controller_runtime_active_workers",
        "gauge",
        "controller",
        "Reconciles running now.",
    ),
    (
        "workqueue_depth",
        "gauge",
        "name, controller",
        "Keys waiting in the work queue.",
    ),
    (
        "workqueue_adds_total",
        "counter",
        "name, controller",
        "Keys queued.",
    ),
    (
        "workqueue_queue_duration_seconds",
        "histogram",
        "name, controller",
        "Time a key waited in the queue before a worker took it.",
    ),
    (
        "workqueue_work_duration_seconds",
        "histogram",
        "name, controller",
        "Time a worker spent on a key.",
    ),
    (
        "workqueue_unfinished_work_seconds",
        "gauge",
        "name, controller",
        "Time spent so far on keys still being processed.",
    ),
    (
        "workqueue_longest_running_processor_seconds",
        "gauge",
        "name, controller",
        "How long the longest-running worker has been on its key.",
    ),
    (
        "workqueue_retries_total",
        "counter",
        "name, controller",
        "Rate-limited requeues.",
    ),
    (
        "leader_election_master_status",
        "gauge",
        "name",
        "1 while this replica leads the named election, 0 otherwise.",
    ),
];

/// The families, registered in one registry; cheap to clone.
#[derive(Clone, Debug)]
pub struct Metrics {
    pub(crate) reconcile_total: IntCounterVec,
    pub(crate) reconcile_errors: IntCounterVec,
    pub(crate) terminal_errors: IntCounterVec,
    pub(crate) panics: IntCounterVec,
    pub(crate) reconcile_time: HistogramVec,
    pub(crate) max_concurrent: IntGaugeVec,
    pub(crate) active_workers: IntGaugeVec,
    pub(crate) depth: IntGaugeVec,
    pub(crate) adds: IntCounterVec,
    pub(crate) queue_duration: HistogramVec,
    pub(crate) work_duration: HistogramVec,
    pub(crate) unfinished: GaugeVec,
    pub(crate) longest: GaugeVec,
    pub(crate) retries: CounterVec,
    pub(crate) leader: IntGaugeVec,
}

impl Metrics {
    /// Registers every family in `registry`.
    ///
    /// # Errors
    /// A family of the same name is already registered there.
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let controller = &["controller"];
        let queue = &["name", "controller"];
        let metrics = Self {
            reconcile_total: IntCounterVec::new(opts(0), &["controller", "result"])?,
            reconcile_errors: IntCounterVec::new(opts(1), controller)?,
            terminal_errors: IntCounterVec::new(opts(2), controller)?,
            panics: IntCounterVec::new(opts(3), controller)?,
            reconcile_time: HistogramVec::new(histogram(4, &RECONCILE_TIME_BUCKETS), controller)?,
            max_concurrent: IntGaugeVec::new(opts(5), controller)?,
            active_workers: IntGaugeVec::new(opts(6), controller)?,
            depth: IntGaugeVec::new(opts(7), queue)?,
            adds: IntCounterVec::new(opts(8), queue)?,
            queue_duration: HistogramVec::new(histogram(9, &WORKQUEUE_DURATION_BUCKETS), queue)?,
            work_duration: HistogramVec::new(histogram(10, &WORKQUEUE_DURATION_BUCKETS), queue)?,
            unfinished: GaugeVec::new(opts(11), queue)?,
            longest: GaugeVec::new(opts(12), queue)?,
            retries: CounterVec::new(opts(13), queue)?,
            leader: IntGaugeVec::new(opts(14), &["name"])?,
        };
        registry.register(Box::new(metrics.reconcile_total.clone()))?;
        registry.register(Box::new(metrics.reconcile_errors.clone()))?;
        registry.register(Box::new(metrics.terminal_errors.clone()))?;
        registry.register(Box::new(metrics.panics.clone()))?;
        registry.register(Box::new(metrics.reconcile_time.clone()))?;
        registry.register(Box::new(metrics.max_concurrent.clone()))?;
        registry.register(Box::new(metrics.active_workers.clone()))?;
        registry.register(Box::new(metrics.depth.clone()))?;
        registry.register(Box::new(metrics.adds.clone()))?;
        registry.register(Box::new(metrics.queue_duration.clone()))?;
        registry.register(Box::new(metrics.work_duration.clone()))?;
        registry.register(Box::new(metrics.unfinished.clone()))?;
        registry.register(Box::new(metrics.longest.clone()))?;
        registry.register(Box::new(metrics.retries.clone()))?;
        registry.register(Box::new(metrics.leader.clone()))?;
        Ok(metrics)
    }

    /// The handles of one controller; its `reconcile_total` series start at zero for every result.
    #[must_use]
    pub fn controller(&self, name: &str, concurrency: u16) -> ControllerMetrics {
        ControllerMetrics::new(self, name, concurrency)
    }

    /// Queue hooks reporting the `workqueue_*` families of the queue `name`.
    #[must_use]
    pub fn workqueue(&self, name: &str) -> WorkqueueMetrics {
        WorkqueueMetrics::new(self, name)
    }

    /// Sets `leader_election_master_status{name}`.
    pub fn set_leader(&self, election: &str, leading: bool) {
        self.leader
            .with_label_values(&[election])
            .set(i64::from(leading));
    }
}

fn opts(index: usize) -> Opts {
    let (name, _, _, help) = REFERENCE[index];
    Opts::new(name, help)
}

fn histogram(index: usize, buckets: &[f64]) -> HistogramOpts {
    let (name, _, _, help) = REFERENCE[index];
    HistogramOpts::new(name, help).buckets(buckets.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_lists_exactly_the_registered_families() {
        let registry = Registry::new();
        let metrics = Metrics::new(&registry).unwrap();
        let _ = metrics.controller("demo", 2);
        let _ = metrics.workqueue("demo");
        metrics.set_leader("demo", true);
        metrics
            .queue_duration
            .with_label_values(&["demo", "demo"])
            .observe(0.1);
        metrics
            .work_duration
            .with_label_values(&["demo", "demo"])
            .observe(0.1);
        metrics
            .reconcile_time
            .with_label_values(&["demo"])
            .observe(0.1);
        metrics.retries.with_label_values(&["demo", "demo"]).inc();
        let mut gathered: Vec<(String, String)> = registry
            .gather()
            .iter()
            .map(|f| {
                (
                    f.name().to_owned(),
                    format!("{:?}", f.get_field_type()).to_lowercase(),
                )
            })
            .collect();
        gathered.sort();
        let mut documented: Vec<(String, String)> = REFERENCE
            .iter()
            .map(|(n, t, _, _)| ((*n).to_owned(), (*t).to_owned()))
            .collect();
        documented.sort();
        assert_eq!(gathered, documented);
    }

    #[test]
    fn registering_twice_in_one_registry_is_an_error() {
        let registry = Registry::new();
        Metrics::new(&registry).unwrap();
        assert!(Metrics::new(&registry).is_err());
    }
}
