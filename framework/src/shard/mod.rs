//! Runs a replica as one shard of a controller ring: its shard Lease, the ring's controllers on
//! their share of the objects, and the sharder on the leader (feature `sharding`).
//!
//! A [`Shard`] added to a manager, before the ring's controllers, makes it a member of the ring
//! (the command line adds one for `--shard-ring`, as it adds
//! [`Endpoints`](crate::serving::Endpoints)). The ring's controllers then bind to a factory of
//! their own whose informers select only objects labelled for this shard, and run on every
//! replica, not only the leader: each waits until the replica holds its shard Lease and ends the
//! run when it loses it (another shard may have its objects by then). On shutdown the Lease is
//! released only after every one of them has stopped, so the sharder never hands an object to
//! another shard while this one still reconciles it.
//!
//! When the webhook server can serve, every replica also serves the ring's assignment webhooks
//! (see [`sharding`](crate::sharding)).

mod add;
#[cfg(feature = "webhooks")]
mod assignment;
mod config;
mod lease;
mod member;
mod membership;
mod sharder;
#[cfg(test)]
mod tests;

pub use self::config::Shard;
