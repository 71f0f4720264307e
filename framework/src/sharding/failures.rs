//! Logs a burst of failed label writes once, instead of one warning per object.
//!
//! After the API server restarts, the sharder's cache is stale for a few seconds and hundreds of
//! its writes may fail with 409 Conflict, each retried later. The first failure of a burst is a
//! warning naming the object and the error; the others are counted (and logged at debug level),
//! and the first success after them ends the burst with one line saying how many failed.

use std::fmt::Display;

use parking_lot::Mutex;
use tokio::time::Instant;

/// Failed writes since the last success.
#[derive(Debug, Default)]
pub(crate) struct Failures {
    burst: Mutex<Option<Burst>>,
}

/// A run of failures with no success in between.
#[derive(Debug)]
struct Burst {
    started: Instant,
    failed: u64,
}

impl Failures {
    /// The write of `object` failed with `error` and will be retried. Returns whether the
    /// failure opened a burst (and was logged as a warning).
    pub(crate) fn failed(&self, object: &dyn Display, error: &dyn Display) -> bool {
        let mut burst = self.burst.lock();
        if let Some(open) = burst.as_mut() {
            open.failed += 1;
            tracing::debug!(%object, %error, "assigning to a shard failed; retrying");
            return false;
        }
        *burst = Some(Burst {
            started: Instant::now(),
            failed: 1,
        });
        tracing::warn!(%object, %error,
            "assigning to a shard failed; retrying with backoff (further failures are counted until one succeeds)");
        true
    }

    /// A write succeeded: ends the burst, if any, with one line. Returns how many writes
    /// failed in it.
    pub(crate) fn succeeded(&self) -> u64 {
        let Some(ended) = self.burst.lock().take() else {
            return 0;
        };
        tracing::info!(failed = ended.failed, lasted = ?ended.started.elapsed(),
            "assigning to shards succeeds again after a burst of failures");
        ended.failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_failure_of_a_burst_is_a_warning_and_a_success_ends_it() {
        let failures = Failures::default();
        assert_eq!(failures.succeeded(), 0, "no burst yet");
        assert!(failures.failed(&"cm/a", &"409"));
        for _ in 0..199 {
            assert!(!failures.failed(&"cm/b", &"409"), "a burst warns once");
        }
        assert_eq!(failures.succeeded(), 200);
        assert!(failures.failed(&"cm/c", &"409"), "a new burst warns again");
    }
}
