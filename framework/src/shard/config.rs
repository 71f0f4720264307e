//! How a replica runs as one shard of a controller ring: its ring, id and shard Lease.

use std::time::Duration;

use crate::leader;

/// This replica as one shard of a controller ring: the ring's controllers reconcile only the
/// objects assigned to it (see [`sharding`](crate::sharding)). Add it to the manager before the
/// ring's controllers (`manager.add(Shard::new(ring, id))?`); the command line adds one for
/// `--shard-ring` and `--shard-id`.
#[derive(Clone, Debug)]
pub struct Shard {
    pub(crate) ring: String,
    pub(crate) id: String,
    pub(crate) namespace: Option<String>,
    pub(crate) lease: leader::Config,
    pub(crate) dead_lease_ttl: Duration,
}

impl Shard {
    /// The shard `id` (unique among the ring's replicas: the pod name) of `ring`, holding its
    /// shard Lease `id` in the pod's namespace with the default Lease timings.
    #[must_use]
    pub fn new(ring: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            ring: ring.into(),
            id: id.into(),
            namespace: None,
            lease: leader::Config::default(),
            dead_lease_ttl: crate::sharding::DEAD_LEASE_TTL,
        }
    }

    /// The namespace of the shard Lease (default: the pod's namespace).
    #[must_use]
    pub fn namespace(mut self, namespace: Option<String>) -> Self {
        self.namespace = namespace;
        self
    }

    /// The timings of the shard Lease: how long it lasts unrenewed, and so how soon the objects
    /// of a shard that died move.
    #[must_use]
    pub fn lease(mut self, config: leader::Config) -> Self {
        self.lease = config;
        self
    }

    /// How long the Lease of a dead shard (released, or taken over by the sharder) stays after
    /// its expiry before the sharder, on the leader, deletes it (default
    /// [`DEAD_LEASE_TTL`](crate::sharding::DEAD_LEASE_TTL), a minute).
    #[must_use]
    pub fn dead_lease_ttl(mut self, ttl: Duration) -> Self {
        self.dead_lease_ttl = ttl;
        self
    }
}
