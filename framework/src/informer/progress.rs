//! How far an informer's reflectors got: synced or not, the latest resourceVersion, request counters.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::watch;

use super::Stats;

/// Written by the reflectors (one per namespace of an informer over several), read by the
/// informer.
#[derive(Debug)]
pub(crate) struct Progress {
    synced: watch::Sender<bool>,
    /// Reflectors whose first list is not stored yet; synced when none is left.
    unlisted: AtomicUsize,
    /// The latest resourceVersion when it is a number (every etcd-backed server's are), so a
    /// watch event publishes it without a lock; 0 when it is not, and then it is in `latest`.
    latest_number: AtomicU64,
    latest: Mutex<Option<Latest>>,
    /// Whether the server refused a streaming list (so the informer lists from then on).
    streaming_refused: AtomicBool,
    stats: Arc<Stats>,
}

/// Where the latest resourceVersion is: a list's or bookmark's text, or the newest object a
/// watch delivered, kept by reference so that publishing it per event allocates nothing.
#[derive(Clone)]
pub(crate) enum Latest {
    Text(Arc<str>),
    Object(Arc<dyn Versioned>),
}

/// An object whose resourceVersion can be read later.
pub(crate) trait Versioned: Send + Sync {
    fn version(&self) -> Option<&str>;
}

impl<K: Resource + Send + Sync> Versioned for K {
    fn version(&self) -> Option<&str> {
        self.meta().resource_version.as_deref()
    }
}

impl Latest {
    /// The version as text; an object without one reads as empty (watch from now).
    pub(crate) fn text(&self) -> String {
        match self {
            Self::Text(text) => text.to_string(),
            Self::Object(obj) => obj.version().unwrap_or_default().to_owned(),
        }
    }

    /// The version as a number, if it is one.
    fn number(&self) -> Option<u64> {
        match self {
            Self::Text(text) => text.parse().ok(),
            Self::Object(obj) => obj.version()?.parse().ok(),
        }
    }
}

impl std::fmt::Debug for Latest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

impl Default for Progress {
    /// The progress of one reflector.
    fn default() -> Self {
        Self::new(1)
    }
}

impl Progress {
    /// The progress of `reflectors` reflectors filling one store.
    pub(crate) fn new(reflectors: usize) -> Self {
        Self {
            synced: watch::Sender::default(),
            unlisted: AtomicUsize::new(reflectors),
            latest_number: AtomicU64::new(0),
            latest: Mutex::default(),
            streaming_refused: AtomicBool::new(false),
            stats: Arc::default(),
        }
    }

    /// Whether the first complete list is stored.
    pub(crate) fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Whether every reflector's first list is stored, read without a lock (the fan-out asks it
    /// for each change): true a moment before [`Self::has_synced`] is.
    pub(crate) fn is_listed(&self) -> bool {
        self.unlisted.load(Ordering::Acquire) == 0
    }

    /// Tells when the first complete list is stored.
    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.synced.subscribe()
    }

    /// The resourceVersion of the latest list, event or bookmark.
    pub(crate) fn resource_version(&self) -> Option<String> {
        match self.latest_number.load(Ordering::Acquire) {
            0 => self.latest.lock().as_ref().map(Latest::text),
            number => Some(number.to_string()),
        }
    }

    /// Whether the server refused a streaming list to one of the informer's reflectors.
    pub(crate) fn streaming_refused(&self) -> bool {
        self.streaming_refused.load(Ordering::Acquire)
    }

    /// Records that the server refused a streaming list; `true` the first time only.
    pub(crate) fn refuse_streaming(&self) -> bool {
        !self.streaming_refused.swap(true, Ordering::AcqRel)
    }

    /// The request counters.
    pub(crate) fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Publishes the latest version: as a number without a lock when it is one, else by
    /// reference (a reference count, never a copy of the text) under a lock.
    pub(crate) fn publish(&self, latest: &Latest) {
        let number = latest.number().unwrap_or(0);
        if number == 0 {
            *self.latest.lock() = Some(latest.clone());
        }
        self.latest_number.store(number, Ordering::Release);
    }

    /// Marks a complete list stored, the reflector's `first`; the informer has synced once
    /// every reflector's first list is.
    pub(crate) fn listed(&self, first: bool) {
        if first {
            // Never below zero: each reflector reports its first list once.
            let _ = self
                .unlisted
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        }
        if self.unlisted.load(Ordering::Acquire) == 0 {
            self.synced.send_replace(true);
        }
        self.stats.synced_now();
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    #[test]
    fn an_informer_of_several_reflectors_syncs_when_the_last_first_list_is_stored() {
        let progress = Progress::new(2);
        progress.listed(true);
        progress.listed(false);
        assert!(!progress.has_synced(), "one reflector has not listed yet");
        progress.listed(true);
        assert!(progress.has_synced());
    }

    #[test]
    fn the_published_version_is_the_latest_text_or_object() {
        let progress = Progress::default();
        assert_eq!(progress.resource_version(), None);
        progress.publish(&Latest::Text("7".into()));
        assert_eq!(progress.resource_version().as_deref(), Some("7"));
        let cm = ConfigMap {
            metadata: ObjectMeta {
                resource_version: Some("9".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        progress.publish(&Latest::Object(Arc::new(cm)));
        assert_eq!(progress.resource_version().as_deref(), Some("9"));
        // Another server's opaque versions are kept as text; a number after one wins again.
        progress.publish(&Latest::Text("opaque-10".into()));
        assert_eq!(progress.resource_version().as_deref(), Some("opaque-10"));
        progress.publish(&Latest::Text("11".into()));
        assert_eq!(progress.resource_version().as_deref(), Some("11"));
    }
}
