//! Numbers the faults a run draws, in the order it draws them, and lets a run keep only some.
//!
//! A fault is any draw that makes the run differ from a fault-free one: a failed request (and
//! how it fails), a watch that breaks, an outage, a request's latency, a watch event's delivery
//! delay. Each gets the next number when it is drawn. A run given a set to keep still draws
//! every other one (so the seed's random stream stays aligned, and the workload's own draws
//! come out the same), but their effect becomes "no fault": no failure, no break, no outage,
//! zero latency, zero delay. That is what the shrinker ([`super::shrink`]) works with.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request fails (409, 429, 500, a lost answer, a reset connection).
    Failure,
    /// A watch breaks (dropped, or expired with 410 Gone).
    Break,
    /// The API server is gone for a while.
    Outage,
    /// A request waits before the fake sees it.
    Latency,
    /// A watch event arrives late.
    Delay,
}

/// The faults a run draws, and which of them take effect.
#[derive(Debug, Default)]
pub(crate) struct Schedule {
    /// The faults that take effect; all of them when `None`.
    keep: Option<BTreeSet<u64>>,
    /// How many faults were drawn so far.
    drawn: AtomicU64,
    /// The numbers of the faults that took effect, in order.
    taken: Mutex<Vec<(u64, Kind)>>,
}

impl Schedule {
    /// A schedule that keeps the faults numbered in `keep`, or every fault when `None`.
    pub(crate) fn new(keep: Option<BTreeSet<u64>>) -> Self {
        Self {
            keep,
            ..Self::default()
        }
    }

    /// Numbers a fault just drawn: its number when it takes effect, `None` when the schedule
    /// suppresses it.
    pub(crate) fn decide(&self, kind: Kind) -> Option<u64> {
        let number = self.drawn.fetch_add(1, Ordering::SeqCst) + 1;
        let kept = self.keep.as_ref().is_none_or(|keep| keep.contains(&number));
        kept.then(|| {
            self.taken.lock().push((number, kind));
            number
        })
    }

    /// The numbers of the faults that took effect, in the order they were drawn.
    pub(crate) fn taken(&self) -> Vec<(u64, Kind)> {
        self.taken.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_is_numbered_and_only_the_kept_ones_take_effect() {
        let all = Schedule::new(None);
        let first = all.decide(Kind::Latency);
        assert_eq!([first, all.decide(Kind::Failure)], [Some(1), Some(2)]);
        let some = Schedule::new(Some([2, 4].into()));
        let decided: Vec<_> = (0..4).map(|_| some.decide(Kind::Delay)).collect();
        assert_eq!(decided, [None, Some(2), None, Some(4)]);
        assert_eq!(some.taken(), [(2, Kind::Delay), (4, Kind::Delay)]);
    }
}
