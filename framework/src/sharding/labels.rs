//! Names the labels of the sharding protocol (kubernetes-controller-sharding's, alpha).

/// On every shard Lease: the controller ring the shard belongs to.
pub const RING_LABEL: &str = "alpha.sharding.timebertt.dev/controllerring";

/// Prefix of the label that assigns an object to a shard of a ring (see [`shard_label`]).
const SHARD_PREFIX: &str = "shard.alpha.sharding.timebertt.dev/";

/// Prefix of the label that asks a shard to hand an object back (see [`drain_label`]).
const DRAIN_PREFIX: &str = "drain.alpha.sharding.timebertt.dev/";

/// The label whose value names the shard of `ring` an object is assigned to.
#[must_use]
pub fn shard_label(ring: &str) -> String {
    format!("{SHARD_PREFIX}{ring}")
}

/// The label (value `true`) by which the sharder asks the shard of `ring` holding an object to
/// stop reconciling it and remove both labels, so that it can go to another shard.
#[must_use]
pub fn drain_label(ring: &str) -> String {
    format!("{DRAIN_PREFIX}{ring}")
}

/// On every shard Lease the sharder has looked at: the shard's state
/// ([`ShardState`](super::ShardState)), for `kubectl get leases -L ...`.
pub const STATE_LABEL: &str = "alpha.sharding.timebertt.dev/state";

/// The holder the sharder writes into the Lease of a shard it declares dead, as
/// kubernetes-controller-sharding's sharder does.
pub const SHARDER_IDENTITY: &str = "shardlease-controller";
