//! Warns, every ten seconds, while a streaming list's end bookmark has not come.

use std::time::Duration;

use tokio::time::Instant;

/// How often a streaming list still awaiting its end bookmark is reported (client-go's
/// reflector warns at the same pace).
pub(crate) const WARN_EVERY: Duration = Duration::from_secs(10);

/// The wait of one streaming list for the bookmark annotated `k8s.io/initial-events-end` that
/// ends its initial events: a server that accepts the watch but never sends it would otherwise
/// hold the informer unsynced without a word.
#[derive(Debug)]
pub(crate) struct InitialEvents {
    started: Instant,
    next_warning: Instant,
}

impl InitialEvents {
    /// The wait of a streaming list requested now.
    pub(crate) fn new() -> Self {
        let started = Instant::now();
        Self {
            started,
            next_warning: started + WARN_EVERY,
        }
    }

    /// When the next warning is due.
    pub(crate) fn next_warning(&self) -> Instant {
        self.next_warning
    }

    /// Warns once if a warning is due, saying how long the list has waited and how many
    /// `objects` it has received; the next one is due [`WARN_EVERY`] later.
    pub(crate) fn warn_if_due(&mut self, url: &str, objects: u64) {
        let now = Instant::now();
        if now < self.next_warning {
            return;
        }
        self.next_warning = now + WARN_EVERY;
        let waited = now.duration_since(self.started);
        tracing::warn!(
            url,
            waited = ?waited,
            objects,
            "streaming list: still awaiting the bookmark that ends the initial events"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_warning_is_due_every_ten_seconds_counted_from_the_request() {
        let mut wait = InitialEvents::new();
        let start = Instant::now();
        assert_eq!(wait.next_warning(), start + WARN_EVERY);
        tokio::time::advance(Duration::from_secs(9)).await;
        wait.warn_if_due("/api/v1/configmaps", 3);
        assert_eq!(wait.next_warning(), start + WARN_EVERY, "not due yet");
        tokio::time::advance(Duration::from_secs(2)).await;
        wait.warn_if_due("/api/v1/configmaps", 3);
        assert_eq!(
            wait.next_warning(),
            start + Duration::from_secs(21),
            "due again ten seconds after the warning"
        );
    }
}
