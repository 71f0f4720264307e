//! Names each reconcile, so that the log lines of one reconcile can be told from the next one's.

use std::hash::{BuildHasher as _, Hasher as _};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// A random start for this process, so that ids of two replicas or two runs rarely meet.
static BASE: LazyLock<u64> = LazyLock::new(|| {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
});

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A reconcile id (16 hex digits) that no other reconcile of this process gets, like
/// controller-runtime's `reconcileID`.
pub(crate) fn next() -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{:016x}", BASE.wrapping_add(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconcile_ids_are_distinct_and_sixteen_hex_digits() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| next()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(
            ids.iter()
                .all(|id| id.len() == 16 && id.chars().all(|c| c.is_ascii_hexdigit()))
        );
    }
}
