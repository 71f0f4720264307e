//! Counts a sharder's work in the `kubeward_sharder_*` families: shards, their Leases' states,
//! assignments, handovers.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus::{Histogram, IntCounter, IntCounterVec, IntGauge, IntGaugeVec};
use tokio::time::Instant;

use super::ShardState;
use crate::metrics::Metrics;

/// One ring's sharder series, and when each object being handed over was drained.
#[derive(Clone, Debug)]
pub(crate) struct SharderMetrics {
    shards: IntGauge,
    assignments: IntCounterVec,
    ring: String,
    drains: IntCounter,
    handover: Histogram,
    leases: IntGaugeVec,
    /// Objects drained and not yet assigned again, by key.
    draining: Arc<Mutex<HashMap<String, Instant>>>,
}

impl SharderMetrics {
    pub(crate) fn new(metrics: &Metrics, ring: &str) -> Self {
        Self {
            shards: metrics.shards.with_label_values(&[ring]),
            assignments: metrics.assignments.clone(),
            ring: ring.to_owned(),
            drains: metrics.drains.with_label_values(&[ring]),
            handover: metrics.handover.with_label_values(&[ring]),
            leases: metrics.shard_leases.clone(),
            draining: Arc::default(),
        }
    }

    /// The ring now has `n` available shards.
    pub(crate) fn set_shards(&self, n: usize) {
        self.shards.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// The ring's shard Leases are in `states`, one each.
    pub(crate) fn set_lease_states(&self, states: &[ShardState]) {
        for state in ShardState::ALL {
            let n = states.iter().filter(|s| **s == state).count();
            self.leases
                .with_label_values(&[self.ring.as_str(), state.as_str()])
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// The sharder assigned an object to `shard`.
    pub(crate) fn assigned(&self, shard: &str) {
        self.assignments
            .with_label_values(&[self.ring.as_str(), shard, "sharder"])
            .inc();
    }

    /// The assignment webhook assigned an object to `shard` as it was created (or handed back).
    #[cfg(feature = "webhooks")]
    pub(crate) fn assigned_by_webhook(&self, shard: &str) {
        self.assignments
            .with_label_values(&[self.ring.as_str(), shard, "webhook"])
            .inc();
    }

    /// The object `key` was drained from its shard.
    pub(crate) fn drained(&self, key: &str) {
        self.drains.inc();
        self.draining.lock().insert(key.to_owned(), Instant::now());
    }

    /// The object `key` is gone: if it was being handed over, it never will be.
    pub(crate) fn forget(&self, key: &str) {
        self.draining.lock().remove(key);
    }

    /// The object `key` was assigned again; if it had been drained, its handover ends.
    pub(crate) fn handed_over(&self, key: &str) {
        if let Some(since) = self.draining.lock().remove(key) {
            self.handover.observe(since.elapsed().as_secs_f64());
        }
    }
}
