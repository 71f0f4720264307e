//! How much spare capacity a drained collection keeps: what a burst grew is given back, a working size is not.

/// The capacity a drained collection keeps when it shrinks.
pub(crate) const KEPT: usize = 1024;

/// Whether a drained collection of this capacity should shrink to [`KEPT`]: only past four times
/// as much, so that bursts of a few thousand entries do not shrink and regrow it each time.
pub(crate) fn oversized(capacity: usize) -> bool {
    capacity > 4 * KEPT
}
