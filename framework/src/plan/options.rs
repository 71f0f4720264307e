//! What a plan covers: which objects, and how long it waits for the caches.

use std::time::Duration;

/// What [`Manager::plan`](crate::manager::Manager::plan) reconciles: by default every object of
/// every controller, waiting up to a minute for the caches to fill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub(crate) selector: Option<String>,
    pub(crate) sync_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            selector: None,
            sync_timeout: Duration::from_secs(60),
        }
    }
}

impl Options {
    /// Reconciles only the objects of each controller's kind that this label selector names
    /// (`app=web,tier!=db`, kubectl's syntax), as the API server selects them.
    #[must_use]
    pub fn selector(mut self, selector: impl Into<String>) -> Self {
        self.selector = Some(selector.into()).filter(|s| !s.trim().is_empty());
        self
    }

    /// How long a controller waits for its caches to hold their first list before its pass
    /// fails (a CRD not installed, say); a minute by default.
    #[must_use]
    pub fn sync_timeout(mut self, timeout: Duration) -> Self {
        self.sync_timeout = timeout;
        self
    }
}
