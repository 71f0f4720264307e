//! Reports how a controller's run (a term of leadership) gets going: the first reconcile, the
//! backlog it starts with, when that drained, and how many reconciles it made.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use parking_lot::Mutex;
use prometheus::{Gauge, GaugeVec, IntGauge};
use tokio::time::Instant;

use super::Metrics;

/// The `kubeward_controller_*` run families of one controller.
///
/// A run starts when the controller starts working (its manager gained leadership, or started
/// without leader election) and ends when it stops; the next run starts over. The queue's hooks
/// feed it: a key taken by a worker, a key done, the ready keys left.
#[derive(Debug)]
pub(crate) struct RunMetrics {
    controller: String,
    /// When the current run started; `None` outside a run.
    started: Mutex<Option<Instant>>,
    /// Whether a worker of the current run took a key yet.
    took_first: AtomicBool,
    /// Whether the queue of the current run was empty with nothing in flight yet.
    drained: AtomicBool,
    /// Keys taken and not yet done.
    in_flight: AtomicI64,
    /// When the last key was done.
    last_done: Mutex<Option<Instant>>,
    first_reconcile: Gauge,
    backlog: IntGauge,
    drained_after: GaugeVec,
    reconciles: IntGauge,
}

impl RunMetrics {
    pub(crate) fn new(metrics: &Metrics, controller: &str) -> Self {
        let labels = [controller];
        Self {
            controller: controller.to_owned(),
            started: Mutex::new(None),
            took_first: AtomicBool::new(false),
            drained: AtomicBool::new(false),
            in_flight: AtomicI64::new(0),
            last_done: Mutex::new(None),
            first_reconcile: metrics.first_reconcile.with_label_values(&labels),
            backlog: metrics.backlog.with_label_values(&labels),
            drained_after: metrics.backlog_drained.clone(),
            reconciles: metrics.run_reconciles.with_label_values(&labels),
        }
    }

    /// A run starts now: its first reconcile, backlog and drain are measured from here.
    pub(crate) fn start(&self) {
        self.end();
        *self.started.lock() = Some(Instant::now());
    }

    /// The run's workers start with `keys` queued.
    pub(crate) fn backlog(&self, keys: usize) {
        self.backlog.set(i64::try_from(keys).unwrap_or(i64::MAX));
    }

    /// The run ended: its series go back to zero (the drain's goes away) until the next.
    pub(crate) fn end(&self) {
        *self.started.lock() = None;
        self.took_first.store(false, Ordering::Relaxed);
        self.drained.store(false, Ordering::Relaxed);
        self.in_flight.store(0, Ordering::Relaxed);
        *self.last_done.lock() = None;
        self.first_reconcile.set(0.0);
        self.backlog.set(0);
        self.reconciles.set(0);
        let _ = self.drained_after.remove_label_values(&[&self.controller]);
    }

    /// A worker took a key.
    pub(crate) fn took(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        if !self.took_first.swap(true, Ordering::Relaxed)
            && let Some(started) = *self.started.lock()
        {
            self.first_reconcile.set(started.elapsed().as_secs_f64());
        }
    }

    /// A worker finished a key.
    pub(crate) fn done(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        *self.last_done.lock() = Some(Instant::now());
        self.reconciles.inc();
    }

    /// The queue's periodic report, with `ready` keys waiting: when none waits and none is in
    /// flight for the first time in this run, the backlog drained when the last key was done.
    /// (Checked here rather than at `done`, which the queue reports before it requeues the key.)
    pub(crate) fn tick(&self, ready: usize) {
        if ready > 0 || self.in_flight.load(Ordering::Relaxed) > 0 {
            return;
        }
        let (Some(started), Some(last_done)) = (*self.started.lock(), *self.last_done.lock())
        else {
            return;
        };
        if !self.drained.swap(true, Ordering::Relaxed) {
            let after = last_done.saturating_duration_since(started).as_secs_f64();
            self.drained_after
                .with_label_values(&[&self.controller])
                .set(after);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use prometheus::Registry;

    use super::*;

    fn value(registry: &Registry, name: &str) -> Option<f64> {
        registry
            .gather()
            .iter()
            .filter(|f| f.name() == name)
            .flat_map(|f| f.get_metric().iter())
            .map(|m| m.get_gauge().get_value())
            .next()
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_reports_its_first_reconcile_backlog_drain_and_reconciles() -> anyhow::Result<()>
    {
        let registry = Registry::new();
        let run = RunMetrics::new(&Metrics::new(&registry)?, "demo");
        run.start();
        run.backlog(2);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        run.took();
        run.took();
        run.done();
        run.tick(0);
        assert_eq!(
            value(&registry, "kubeward_controller_backlog_drained_seconds"),
            None,
            "a key is still in flight"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        run.done();
        run.tick(1);
        assert_eq!(
            value(&registry, "kubeward_controller_backlog_drained_seconds"),
            None,
            "a key is ready again (requeued)"
        );
        run.took();
        run.done();
        tokio::time::sleep(Duration::from_millis(500)).await;
        run.tick(0);
        let first = value(&registry, "kubeward_controller_first_reconcile_seconds");
        assert_eq!(first, Some(1.5));
        assert_eq!(
            value(&registry, "kubeward_controller_backlog_keys"),
            Some(2.0)
        );
        let drained = value(&registry, "kubeward_controller_backlog_drained_seconds");
        assert_eq!(drained, Some(3.5));
        assert_eq!(
            value(&registry, "kubeward_controller_run_reconciles"),
            Some(3.0)
        );

        // A later drain of the same run does not move it; a new run starts over.
        run.took();
        tokio::time::sleep(Duration::from_secs(1)).await;
        run.done();
        run.tick(0);
        let drained = value(&registry, "kubeward_controller_backlog_drained_seconds");
        assert_eq!(drained, Some(3.5));
        run.start();
        assert_eq!(
            value(&registry, "kubeward_controller_backlog_drained_seconds"),
            None
        );
        assert_eq!(
            value(&registry, "kubeward_controller_run_reconciles"),
            Some(0.0)
        );
        Ok(())
    }
}
