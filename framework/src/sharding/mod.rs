//! Shards one controller over replicas, each caching and reconciling only its share.
//!
//! The protocol is kubernetes-controller-sharding's (alpha), so its sharder can drive kubeward
//! shards and kubeward's sharder assigns as its does:
//!
//! - A **controller ring** names the resources sharded together: a controller's kind and the
//!   kinds it owns. Each replica holds its own **shard Lease** in the operator's namespace, named
//!   by its shard id, held by it and labelled [`RING_LABEL`]`=<ring>`; a shard is available while
//!   its Lease is held by itself and fresh ([`Shards`]).
//! - The **sharder** hashes each object's key (`group/Kind/namespace/name`; an owned object
//!   takes its controller owner's) onto a [`HashRing`] of the available shards and sets
//!   [`shard_label`]`(ring)` to the shard. When the ring moves an object away from a live shard,
//!   it sets [`drain_label`]`(ring)` instead; the shard, once no reconcile of the
//!   object runs, removes both labels and drops it, and only then does the sharder assign it
//!   anew. Objects of a shard that is gone move at once. Owned objects are never drained: the
//!   owner is the one a shard reconciles, so they move to their owner's new shard at once.
//! - Each shard's informers select only objects labelled with its id, so its cache, watches and
//!   queue hold only its share.
//! - **Assignment at creation.** When the webhook server can serve, every replica serves a
//!   mutating webhook per kind of the ring that sets the shard label as an object is created
//!   (see the `admission` module), and a shard labels the objects it applies for an owner with
//!   the owner's shard ([`Context::apply`](crate::controller::Context::apply)): new objects do
//!   not wait for the sharder.
//! - The sharder also tends the ring's Leases ([`ShardState`]): it labels each with its state,
//!   takes over the Lease of a shard that stopped renewing it a lease duration ago (the shard
//!   is then dead), and deletes dead Leases after [`DEAD_LEASE_TTL`]. [`ring_view`] shows the
//!   ring: each shard's state and how many objects of each kind it holds.
//!
//! The labels and keys are always here; the sharder, the shard Leases and a manager's run as a
//! shard (`--shard-ring`, the `shards` command) come with the feature `sharding`. Without it,
//! [`Controller::ring`](crate::controller::Controller::ring) only names the ring.

#[cfg(all(feature = "sharding", feature = "webhooks"))]
mod admission;
#[cfg(feature = "sharding")]
mod assignment;
#[cfg(feature = "sharding")]
mod failures;
#[cfg(feature = "sharding")]
mod hash_ring;
mod key;
mod labels;
#[cfg(feature = "sharding")]
mod metrics;
#[cfg(feature = "sharding")]
mod owned_labels;
#[cfg(feature = "sharding")]
mod ring_view;
#[cfg(feature = "sharding")]
mod ring_watch;
#[cfg(feature = "sharding")]
mod shard_leases;
#[cfg(feature = "sharding")]
mod sharder;
#[cfg(feature = "sharding")]
mod shards;

#[cfg(feature = "sharding")]
pub(crate) use assignment::{Decision, decide};
#[cfg(feature = "sharding")]
pub use hash_ring::HashRing;
pub use key::{controller_key, object_key};
pub use labels::{RING_LABEL, SHARDER_IDENTITY, STATE_LABEL, drain_label, shard_label};
#[cfg(feature = "sharding")]
pub(crate) use metrics::SharderMetrics;
#[cfg(feature = "sharding")]
pub(crate) use owned_labels::OwnedLabels;
#[cfg(feature = "sharding")]
pub use ring_view::{RingView, ShardRow, ring_view};
#[cfg(all(feature = "sharding", feature = "webhooks"))]
pub(crate) use ring_watch::{Ring, View, watch_ring};
#[cfg(feature = "sharding")]
pub(crate) use sharder::{KindSharder, Sharder};
#[cfg(feature = "sharding")]
pub use shards::{DEAD_LEASE_TTL, ShardState, Shards, lease_state};
