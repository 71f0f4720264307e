//! A period during which a candidate believes it leads, by the local monotonic clock.

use tokio::time::Instant;

/// A period during which this candidate believes it leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Term {
    /// When the write that won the Lease returned.
    pub started_at: Instant,
    /// When the last successful acquire or renew write began.
    pub renewed_at: Instant,
    /// `renewed_at + renew deadline`: the belief ends here unless renewed before.
    pub valid_until: Instant,
    /// When the term ended, once it has (never later than `valid_until`).
    pub ended_at: Option<Instant>,
}

impl Term {
    /// Whether this term is current at `now`.
    #[must_use]
    pub fn is_current(&self, now: Instant) -> bool {
        self.ended_at.is_none() && now < self.valid_until
    }

    /// When the belief ended or ends: `ended_at`, else `valid_until`.
    #[must_use]
    pub fn end(&self) -> Instant {
        self.ended_at.unwrap_or(self.valid_until)
    }
}
