//! The manager as one shard of a controller ring (feature `sharding`): its run as a member, the
//! ring's assignment webhooks, and the `shards` command.

#[cfg(feature = "webhooks")]
mod assignment;
mod config;
mod member;
mod rings;

pub use config::Shard;
pub(super) use member::Sharding;
pub(super) use rings::RecordedRing;
