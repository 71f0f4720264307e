//! Draws the framework's random numbers (backoff jitter, the elector's jitter) from one
//! generator per thread, which a simulation seeds.
//!
//! Unseeded, each thread's generator starts from the standard library's randomly keyed hasher.
//! A simulation runs everything on one thread, so seeding that thread's generator makes every
//! draw follow its seed: the first draw of a run restarts it from the run's seed
//! (`kubeward_testing::sim::take_starting_seed`), and
//! [`testing::seed_randomness`](crate::testing::seed_randomness) does the same by hand. The
//! generator is `SplitMix64`: a few lines, enough for jitter, and no dependency.

use std::cell::Cell;
use std::hash::{BuildHasher as _, Hasher as _};

thread_local! {
    static STATE: Cell<u64> = Cell::new(
        std::collections::hash_map::RandomState::new().build_hasher().finish(),
    );
}

/// The next number of this thread's generator.
pub(crate) fn next_u64() -> u64 {
    // A simulation run that started on this thread since the last draw: its seed decides.
    #[cfg(any(test, feature = "testing"))]
    if let Some(run) = kubeward_testing::sim::take_starting_seed() {
        seed(run);
    }
    STATE.with(|state| {
        let next = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        state.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// Restarts this thread's generator from `seed`.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn seed(seed: u64) {
    STATE.with(|state| state.set(seed));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_generator_repeats_its_draws_and_seeds_differ() {
        seed(7);
        let first: Vec<u64> = (0..4).map(|_| next_u64()).collect();
        seed(7);
        let again: Vec<u64> = (0..4).map(|_| next_u64()).collect();
        seed(8);
        let other: Vec<u64> = (0..4).map(|_| next_u64()).collect();
        assert_eq!(first, again);
        assert_ne!(first, other);
        assert!(first.windows(2).all(|pair| pair[0] != pair[1]));
    }
}
