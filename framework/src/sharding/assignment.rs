//! Decides what the sharder does with one object: assign it, drain it, or leave it.

use std::collections::BTreeSet;

/// What the sharder does with an object, from its labels and the ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing: it is where it belongs, or is being handed back, or there is no shard.
    Keep,
    /// Set its shard label to this shard and remove any drain label: it has no shard, or its
    /// shard is gone (not available), so no shard can be reconciling it; or it is an owned
    /// object, which moves with its owner without being drained.
    Assign(String),
    /// Add the drain label: its shard is alive but the ring now puts it elsewhere; the shard
    /// hands it back (removes both labels) once no reconcile of it runs.
    Drain,
}

/// The decision for an object whose shard label is `current` and whose drain label is set when
/// `draining`, when the ring puts it on `desired` and `available` are the live shards.
#[must_use]
pub(crate) fn decide(
    current: Option<&str>,
    draining: bool,
    desired: Option<&str>,
    available: &BTreeSet<String>,
) -> Decision {
    let Some(desired) = desired else {
        return Decision::Keep;
    };
    match current {
        // Unassigned (a drain label without a shard label was set by hand, or is left over:
        // it is cleared by the assignment).
        None => Decision::Assign(desired.to_owned()),
        // Its shard is gone or unknown: nothing reconciles it, so it moves at once.
        Some(shard) if !available.contains(shard) => Decision::Assign(desired.to_owned()),
        Some(shard) if shard == desired || draining => Decision::Keep,
        Some(_) => Decision::Drain,
    }
}

/// The decision for an object a controller owns, whose shard label is `current` and whose
/// drain label is set when `draining`, when the ring puts its controller owner on `desired`.
///
/// An owned object is never drained: a shard does not reconcile it, only its owner, and the
/// owner is drained (its reconciles end) before it moves, as in kubernetes-controller-sharding.
/// So an owned object goes straight to the shard its owner goes to, and a drain label left on
/// one (by an older sharder) is removed.
pub(crate) fn decide_owned(
    current: Option<&str>,
    draining: bool,
    desired: Option<&str>,
) -> Decision {
    match desired {
        Some(desired) if current != Some(desired) || draining => {
            Decision::Assign(desired.to_owned())
        }
        _ => Decision::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(shards: &[&str]) -> BTreeSet<String> {
        shards.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn an_unassigned_object_is_assigned_and_a_stray_drain_label_goes_with_it() {
        let ab = live(&["a", "b"]);
        assert_eq!(
            decide(None, false, Some("a"), &ab),
            Decision::Assign("a".into())
        );
        assert_eq!(
            decide(None, true, Some("b"), &ab),
            Decision::Assign("b".into())
        );
    }

    #[test]
    fn an_object_of_a_dead_or_unknown_shard_is_reassigned_directly() {
        let ab = live(&["a", "b"]);
        assert_eq!(
            decide(Some("gone"), false, Some("a"), &ab),
            Decision::Assign("a".into())
        );
        assert_eq!(
            decide(Some("gone"), true, Some("b"), &ab),
            Decision::Assign("b".into())
        );
    }

    #[test]
    fn an_object_of_a_live_shard_is_drained_once_and_then_left_to_it() {
        let ab = live(&["a", "b"]);
        assert_eq!(decide(Some("a"), false, Some("b"), &ab), Decision::Drain);
        assert_eq!(decide(Some("a"), true, Some("b"), &ab), Decision::Keep);
        assert_eq!(decide(Some("a"), false, Some("a"), &ab), Decision::Keep);
    }

    #[test]
    fn an_owned_object_moves_to_its_owners_shard_at_once_and_loses_any_drain_label() {
        assert_eq!(
            decide_owned(Some("a"), false, Some("b")),
            Decision::Assign("b".into()),
            "an owned object of a live shard is not drained"
        );
        assert_eq!(
            decide_owned(Some("b"), true, Some("b")),
            Decision::Assign("b".into()),
            "a drain label left on an owned object is removed"
        );
        assert_eq!(
            decide_owned(Some("a"), true, Some("b")),
            Decision::Assign("b".into())
        );
        assert_eq!(
            decide_owned(None, false, Some("a")),
            Decision::Assign("a".into())
        );
        assert_eq!(decide_owned(Some("b"), false, Some("b")), Decision::Keep);
        assert_eq!(decide_owned(Some("a"), true, None), Decision::Keep);
    }

    #[test]
    fn with_no_shard_nothing_changes() {
        assert_eq!(decide(Some("a"), false, None, &live(&[])), Decision::Keep);
        assert_eq!(decide(None, false, None, &live(&[])), Decision::Keep);
    }
}
