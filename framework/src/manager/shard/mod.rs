//! The manager as one shard of a controller ring (feature `sharding`): its run as a member and the
//! ring's assignment webhooks.

#[cfg(feature = "webhooks")]
mod assignment;
mod config;
mod member;

pub use config::Shard;
pub(super) use member::Sharding;
