//! Settings of an informer: paging or streaming lists, selectors, watch timeouts, transforms of cached objects, resync.

use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

use super::WatchList;
use super::connectivity::Connectivity;

/// How an informer lists and watches, and what it caches.
///
/// The defaults list in pages of 500 (no streaming list, see [`Config::watch_list`]), watch
/// with bookmarks for at most 290 s per request (the server closes the watch then), restart a
/// watch that sends nothing for 320 s, strip `managedFields`, keep cached objects decoded (see [`Config::compact`]), never resync, and
/// retry failures after 0.8 s growing to 30 s, with jitter.
///
/// Informers of `PartialObjectMeta<K>` ask the server for metadata only; nothing to configure.
///
/// Two configs are equal when every setting is: the [`Factory`](super::Factory) shares an
/// informer only with callers that ask for the same settings.
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) page_size: u32,
    pub(crate) watch_list: WatchList,
    pub(crate) label_selector: Option<String>,
    pub(crate) field_selector: Option<String>,
    pub(crate) watch_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) strip_managed_fields: bool,
    pub(crate) compact_hot: Option<usize>,
    pub(crate) resync: Option<Duration>,
    pub(crate) backoff_min: Duration,
    pub(crate) backoff_max: Duration,
    /// Shared by every informer configured from clones of this config (all of a factory's), so
    /// that an outage is told once, not once per informer.
    pub(crate) connectivity: Arc<Connectivity>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            page_size: 500,
            watch_list: WatchList::Off,
            label_selector: None,
            field_selector: None,
            watch_timeout: Duration::from_secs(290),
            idle_timeout: Duration::from_secs(320),
            strip_managed_fields: true,
            compact_hot: None,
            resync: None,
            backoff_min: Duration::from_millis(800),
            backoff_max: Duration::from_secs(30),
            connectivity: Arc::default(),
        }
    }
}

impl PartialEq for Config {
    /// Every setting but the (internal) outage reporting, which a factory shares anyway.
    fn eq(&self, other: &Self) -> bool {
        let Self {
            page_size,
            watch_list,
            label_selector,
            field_selector,
            watch_timeout,
            idle_timeout,
            strip_managed_fields,
            compact_hot,
            resync,
            backoff_min,
            backoff_max,
            connectivity: _,
        } = self;
        (
            page_size,
            watch_list,
            label_selector,
            field_selector,
            watch_timeout,
            idle_timeout,
            strip_managed_fields,
            compact_hot,
            resync,
            backoff_min,
            backoff_max,
        ) == (
            &other.page_size,
            &other.watch_list,
            &other.label_selector,
            &other.field_selector,
            &other.watch_timeout,
            &other.idle_timeout,
            &other.strip_managed_fields,
            &other.compact_hot,
            &other.resync,
            &other.backoff_min,
            &other.backoff_max,
        )
    }
}

impl Eq for Config {}

impl Config {
    /// Objects per list page (`limit`); 0 lists everything in one response.
    #[must_use]
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = page_size;
        self
    }

    /// Whether the initial state (and the state again after `410 Gone`) comes from a
    /// streaming list instead of paginated lists; see [`WatchList`]. The informer has synced
    /// once the stream's end-of-initial-events bookmark is stored.
    #[doc(alias = "WatchListClient")]
    #[must_use]
    pub fn watch_list(mut self, watch_list: WatchList) -> Self {
        self.watch_list = watch_list;
        self
    }

    /// Only objects whose labels match `selector`, e.g. `app=web,tier!=cache`.
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }

    /// Only objects whose fields match `selector`, e.g. `spec.nodeName=node-1`.
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }

    /// How long the server keeps one watch request open (`timeoutSeconds`, whole seconds);
    /// the informer then resumes from the last resourceVersion.
    #[must_use]
    pub fn watch_timeout(mut self, timeout: Duration) -> Self {
        self.watch_timeout = timeout;
        self
    }

    /// How long a watch may send nothing (no event, no bookmark, no close) before it is taken as
    /// stalled and restarted, and how long a list response may pause before it is taken as
    /// stalled and requested again (a list that keeps arriving is read however long it takes).
    /// Keep it longer than the watch timeout.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Whether to drop `metadata.managedFields` before caching (the default, `true`); they are
    /// often more than half of an object's size and controllers rarely read them.
    #[must_use]
    pub fn strip_managed_fields(mut self, strip: bool) -> Self {
        self.strip_managed_fields = strip;
        self
    }

    /// Keep cached objects as compact JSON and decode them when read, keeping the `hot` most
    /// recently read ones decoded (rounded up to even). The one switch for a compact store.
    ///
    /// A Pod then costs about its JSON size in memory instead of three to four times that, and
    /// a read of a cold object costs a decode (tens of microseconds for a Pod; the book's
    /// performance chapter has the figures). Worth it for large caches that are read a few
    /// objects at a time; handlers still get decoded objects, and index functions and
    /// selectors work as before. [`Store::get`](crate::cache::Store::get) of a cold object makes
    /// it hot, while `list` and `by_index` decode every cold object they return without making
    /// it hot, so prefer `keys` or `index_keys` with `get` on large caches. Transforms run again
    /// on every decode, so they must give the same result each time.
    #[must_use]
    pub fn compact(mut self, hot: usize) -> Self {
        self.compact_hot = Some(hot);
        self
    }

    /// Re-deliver every cached object to every handler as an update this often (handlers may
    /// set their own period).
    #[doc(alias = "defaultEventHandlerResyncPeriod")]
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// The first and the longest wait between retries of a failed list or watch.
    #[must_use]
    pub fn backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff_min = min;
        self.backoff_max = max.max(min);
        self
    }

    /// This config, reporting outages through `connectivity` (a factory's, shared by all of its
    /// informers).
    pub(crate) fn sharing_connectivity(mut self, connectivity: &Arc<Connectivity>) -> Self {
        self.connectivity = Arc::clone(connectivity);
        self
    }

    /// A fresh series of jittered, exponentially growing delays that never runs out.
    pub(crate) fn backoff_delays(&self) -> impl Iterator<Item = Duration> + Send + use<> {
        ExponentialBuilder::default()
            .with_min_delay(self.backoff_min)
            .with_max_delay(self.backoff_max)
            .with_jitter()
            // Through the framework's generator, so that a simulation's seed decides it.
            .with_jitter_seed(crate::random::next_u64())
            .without_max_times()
            .build()
    }
}
