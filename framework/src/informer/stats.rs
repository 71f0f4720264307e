//! Counters of what an informer's reflector did, for metrics and tests.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Counts of list pages, watch requests, relists (paginated or streamed) and objects that could not be decoded.
#[derive(Debug, Default)]
pub struct Stats {
    pub(crate) list_requests: AtomicU64,
    pub(crate) watch_requests: AtomicU64,
    pub(crate) relists: AtomicU64,
    pub(crate) streamed_lists: AtomicU64,
    pub(crate) decode_failures: AtomicU64,
    /// Unix time in milliseconds of the last complete list; 0 before the first.
    pub(crate) last_sync_millis: AtomicU64,
    /// Whether the last list or watch was answered 404: the server does not serve the resource.
    pub(crate) not_served: AtomicBool,
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

    /// Complete lists received as streaming lists (counted in [`Self::relists`] too).
    #[must_use]
    pub fn streamed_lists(&self) -> u64 {
        self.streamed_lists.load(Ordering::Relaxed)
    }

    /// Objects skipped because they did not deserialize into the informer's type.
    #[must_use]
    pub fn decode_failures(&self) -> u64 {
        self.decode_failures.load(Ordering::Relaxed)
    }

    /// Unix time in seconds of the last complete list applied to the store, if any.
    #[must_use]
    pub fn last_sync_time(&self) -> Option<f64> {
        let millis = self.last_sync_millis.load(Ordering::Relaxed);
        (millis > 0).then(|| millis as f64 / 1000.0)
    }

    /// Whether the API server answered the last list or watch with 404 Not Found: it does not
    /// serve the resource (for a custom resource, its CRD is not installed, or no longer), and
    /// the informer checks every 2 s until it does.
    #[must_use]
    pub fn not_served(&self) -> bool {
        self.not_served.load(Ordering::Relaxed)
    }

    /// Records that a complete list was applied to the store now.
    pub(crate) fn synced_now(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            });
        self.last_sync_millis.store(now, Ordering::Relaxed);
    }

    pub(crate) fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
