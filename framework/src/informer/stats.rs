//! Counters of what an informer's reflector did, for metrics and tests.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counts of list pages, watch requests, relists and objects that could not be decoded.
#[derive(Debug, Default)]
pub struct Stats {
    pub(crate) list_requests: AtomicU64,
    pub(crate) watch_requests: AtomicU64,
    pub(crate) relists: AtomicU64,
    pub(crate) decode_failures: AtomicU64,
}

impl Stats {
    /// List requests sent (one per page).
    #[must_use]
    pub fn list_requests(&self) -> u64 {
        self.list_requests.load(Ordering::Relaxed)
    }

    /// Watch requests sent.
    #[must_use]
    pub fn watch_requests(&self) -> u64 {
        self.watch_requests.load(Ordering::Relaxed)
    }

    /// Complete lists applied to the store (the first one included).
    #[must_use]
    pub fn relists(&self) -> u64 {
        self.relists.load(Ordering::Relaxed)
    }

    /// Objects skipped because they did not deserialize into the informer's type.
    #[must_use]
    pub fn decode_failures(&self) -> u64 {
        self.decode_failures.load(Ordering::Relaxed)
    }

    pub(crate) fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
