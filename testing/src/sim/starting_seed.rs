//! Hands the seed of a run that starts on this thread to the framework's jitter generator, once.

use std::cell::Cell;

thread_local! {
    /// The seed of the run that started on this thread, until the framework takes it.
    static STARTING: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Records that a run of `seed` starts on this thread.
pub(super) fn starts(seed: u64) {
    STARTING.with(|starting| starting.set(Some(seed)));
}

/// The seed of a run that started on this thread since the last call, once.
///
/// kubeward's random numbers (informer backoff jitter, the leader elector's jitter) come from a
/// generator per thread; its next draw restarts it from this seed, so that every run replays
/// from its seed without the body asking. `None` outside a simulation and once taken.
#[must_use]
pub fn take_starting_seed() -> Option<u64> {
    STARTING.with(Cell::take)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_starting_seed_is_taken_once() {
        assert_eq!(take_starting_seed(), None);
        starts(7);
        assert_eq!(take_starting_seed(), Some(7));
        assert_eq!(take_starting_seed(), None);
    }
}
