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

/// The faults a run draws, and which of them take effect.
#[derive(Debug, Default)]
pub(crate) struct Schedule {
    /// The faults that take effect; all of them when `None`.
    keep: Option<BTreeSet<u64>>,
    /// How many faults were drawn so far.
    drawn: AtomicU64,
    /// The numbers of the faults that took effect, in order.
    taken: Mutex<Vec<u64>>,
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
    pub(crate) fn decide(&self) -> Option<u64> {
        let number = self.drawn.fetch_add(1, Ordering::SeqCst) + 1;
        let kept = self.keep.as_ref().is_none_or(|keep| keep.contains(&number));
        kept.then(|| {
            self.taken.lock().push(number);
            number
        })
    }

    /// How many faults the run drew, taken or not.
    pub(crate) fn drawn(&self) -> u64 {
        self.drawn.load(Ordering::SeqCst)
    }

    /// The numbers of the faults that took effect, in the order they were drawn.
    pub(crate) fn taken(&self) -> Vec<u64> {
        self.taken.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_is_numbered_and_only_the_kept_ones_take_effect() {
        let all = Schedule::new(None);
        assert_eq!([all.decide(), all.decide()], [Some(1), Some(2)]);
        let some = Schedule::new(Some([2, 4].into()));
        let decided: Vec<_> = (0..4).map(|_| some.decide()).collect();
        assert_eq!(decided, [None, Some(2), None, Some(4)]);
        assert_eq!(some.taken(), [2, 4]);
        assert_eq!(some.drawn(), 4);
    }
}
