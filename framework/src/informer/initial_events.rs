//! Warns, every ten seconds without a new object, while a streaming list's end bookmark has not
//! come.

use std::time::Duration;

use tokio::time::Instant;

/// How long a streaming list may go without a new object, its end bookmark not come, before it is
/// reported, and again after each report (client-go's reflector warns at the same pace).
pub(crate) const WARN_EVERY: Duration = Duration::from_secs(10);

/// The wait of one streaming list for the bookmark annotated `k8s.io/initial-events-end` that
/// ends its initial events: a server that accepts the watch but never sends it would otherwise
/// hold the informer unsynced without a word. A long stream whose objects keep coming is not
/// reported: as client-go's reflector, only a stream that stopped sending objects is.
#[derive(Debug)]
pub(crate) struct InitialEvents {
    started: Instant,
    /// When the count of objects last grew.
    progressed: Instant,
    objects: u64,
    next_warning: Instant,
}

impl InitialEvents {
    /// The wait of a streaming list requested now.
    pub(crate) fn new() -> Self {
        let started = Instant::now();
        Self {
            started,
            progressed: started,
            objects: 0,
            next_warning: started + WARN_EVERY,
        }
    }

    /// When the next warning is due, unless an object comes first.
    pub(crate) fn next_warning(&self) -> Instant {
        self.next_warning
    }

    /// Given the `objects` received so far: if there are more than last time, the next warning
    /// is due [`WARN_EVERY`] from now; else, if one is due, warns once, saying how long the list
    /// has waited, how many objects it received and when the last came, and the next is due
    /// [`WARN_EVERY`] later. True when it warned.
    pub(crate) fn warn_if_due(&mut self, url: &str, objects: u64) -> bool {
        let now = Instant::now();
        if objects > self.objects {
            self.objects = objects;
            self.progressed = now;
            self.next_warning = now + WARN_EVERY;
            return false;
        }
        if now < self.next_warning {
            return false;
        }
        self.next_warning = now + WARN_EVERY;
        let waited = now.duration_since(self.started);
        let since_last_object = now.duration_since(self.progressed);
        tracing::warn!(
            url,
            waited = ?waited,
            objects,
            since_last_object = ?since_last_object,
            "streaming list: still awaiting the bookmark that ends the initial events"
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_silent_stream_is_reported_every_ten_seconds_counted_from_the_request() {
        let mut wait = InitialEvents::new();
        let start = Instant::now();
        assert_eq!(wait.next_warning(), start + WARN_EVERY);
        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(!wait.warn_if_due("/api/v1/configmaps", 0), "not due yet");
        assert_eq!(wait.next_warning(), start + WARN_EVERY);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(wait.warn_if_due("/api/v1/configmaps", 0), "due");
        assert_eq!(
            wait.next_warning(),
            start + Duration::from_secs(21),
            "due again ten seconds after the warning"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_whose_objects_keep_coming_is_not_reported() {
        let mut wait = InitialEvents::new();
        for second in 1..=60 {
            tokio::time::advance(Duration::from_secs(1)).await;
            // One object every three seconds: a slow stream, but a moving one.
            let warned = wait.warn_if_due("/api/v1/configmaps", second / 3);
            assert!(!warned, "a warning at {second} s");
        }
        let last_object = Instant::now();
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(
            wait.warn_if_due("/api/v1/configmaps", 20),
            "ten seconds without an object"
        );
        assert_eq!(
            wait.next_warning(),
            last_object + Duration::from_secs(20),
            "reported ten seconds after the last object, and due again ten seconds later"
        );
    }
}
