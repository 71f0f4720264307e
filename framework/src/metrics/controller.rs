//! Records one controller's reconciles in the `controller_runtime_*` families.

use std::time::Duration;

use prometheus::{Histogram, IntCounter, IntGauge};

use super::Metrics;

/// One controller's series, with its label already applied.
#[derive(Clone, Debug)]
pub(crate) struct ControllerMetrics {
    success: IntCounter,
    error: IntCounter,
    requeue: IntCounter,
    requeue_after: IntCounter,
    errors: IntCounter,
    terminal_errors: IntCounter,
    panics: IntCounter,
    timeouts: IntCounter,
    time: Histogram,
    active_workers: IntGauge,
}

/// How a reconcile ended, as counted in `controller_runtime_reconcile_total{result}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Succeeded and waits for the next change.
    Success,
    /// Succeeded and asked to run again after a delay.
    RequeueAfter,
    /// Succeeded and asked to run again now (rate limited).
    Requeue,
    /// Failed; `terminal` when it will not be retried.
    Error {
        /// Not retried.
        terminal: bool,
    },
    /// Panicked.
    Panic,
}

impl ControllerMetrics {
    pub(crate) fn new(metrics: &Metrics, name: &str, concurrency: u16) -> Self {
        let result = |r: &str| metrics.reconcile_total.with_label_values(&[name, r]);
        let this = Self {
            success: result("success"),
            error: result("error"),
            requeue: result("requeue"),
            requeue_after: result("requeue_after"),
            errors: metrics.reconcile_errors.with_label_values(&[name]),
            terminal_errors: metrics.terminal_errors.with_label_values(&[name]),
            panics: metrics.panics.with_label_values(&[name]),
            timeouts: metrics.reconcile_timeouts.with_label_values(&[name]),
            time: metrics.reconcile_time.with_label_values(&[name]),
            active_workers: metrics.active_workers.with_label_values(&[name]),
        };
        metrics
            .max_concurrent
            .with_label_values(&[name])
            .set(i64::from(concurrency));
        this
    }

    /// A reconcile started.
    pub(crate) fn started(&self) {
        self.active_workers.inc();
    }

    /// A reconcile was cut off by its timeout (its end is counted by [`Self::finished`] too).
    pub(crate) fn timed_out(&self) {
        self.timeouts.inc();
    }

    /// A reconcile ended with `outcome` after `took`.
    pub(crate) fn finished(&self, outcome: Outcome, took: Duration) {
        self.active_workers.dec();
        self.time.observe(took.as_secs_f64());
        match outcome {
            Outcome::Success => self.success.inc(),
            Outcome::RequeueAfter => self.requeue_after.inc(),
            Outcome::Requeue => self.requeue.inc(),
            Outcome::Error { terminal } => {
                self.error.inc();
                self.errors.inc();
                if terminal {
                    self.terminal_errors.inc();
                }
            }
            Outcome::Panic => {
                self.error.inc();
                self.panics.inc();
            }
        }
    }
}
