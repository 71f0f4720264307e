//! Binds the controllers of a controller ring as members when this replica is one of its
//! shards, and keeps the rings for the `shards` command (feature `sharding`).

use std::sync::Arc;

use kube::api::ApiResource;

use super::controllers::ControllerRunnable;
use super::{Manager, Result, Runnable};
use crate::controller::{Cluster, Controller};
use crate::informer::Cacheable;
use crate::sharding::KindSharder;

/// This replica as one shard of a controller ring, as the ring's controllers bind to it; the
/// `shard` module keeps it in the manager when a shard is added.
pub(crate) trait RingShard: Send + Sync {
    /// The ring.
    fn ring(&self) -> &str;

    /// Where the ring's controllers bind: informers that select only this shard's objects.
    fn cluster(&self) -> Cluster;

    /// A controller of the ring, bound to [`Self::cluster`], as a member that runs while this
    /// replica holds its shard Lease; its `kinds` go to the sharder and the assignment webhooks.
    ///
    /// # Errors
    /// What adding its assignment webhooks returns.
    fn member(
        &self,
        manager: &Manager,
        kinds: Vec<KindSharder>,
        controller: Box<dyn Runnable>,
    ) -> Result<Box<dyn Runnable>>;
}

/// A controller ring of the operator and the kinds its controllers shard.
#[derive(Debug)]
pub(crate) struct RecordedRing {
    pub(crate) ring: String,
    /// Each kind, and whether it is the ring's main kind.
    pub(crate) kinds: Vec<(ApiResource, bool)>,
}

impl Manager {
    /// Keeps the ring of `controller` (named `name`) for the `shards` command and returns the
    /// shard it is a member of, if this replica is a shard of that ring; it gets the ring's
    /// name then. A controller's ring is its name unless it names one. A controller over a kind
    /// found at run time cannot be sharded yet: it runs on the leader, unsharded.
    pub(super) fn ring_shard<K: Cacheable>(
        &self,
        controller: &mut Controller<K>,
        name: &str,
    ) -> Option<Arc<dyn RingShard>> {
        if !controller.can_shard() {
            return None;
        }
        let ring = controller.ring.clone().unwrap_or_else(|| name.to_owned());
        self.record_ring(&ring, &controller.kinds);
        let shard = self.part::<Arc<dyn RingShard>>()?;
        (shard.ring() == ring).then(|| {
            controller.ring = Some(ring);
            shard
        })
    }

    /// Binds `controller` to `shard`: it reconciles only this shard's objects, on every replica,
    /// while the replica holds its shard Lease.
    pub(super) fn bind_member<K: Cacheable>(
        &self,
        shard: &dyn RingShard,
        controller: Controller<K>,
    ) -> Result<Box<dyn Runnable>> {
        let mut controller = controller.into_shard();
        let kinds = std::mem::take(&mut controller.kinds);
        let bound = controller.bind_unchecked(&shard.cluster());
        self.add_cache_readiness(&bound);
        shard.member(self, kinds, Box::new(ControllerRunnable(bound)))
    }

    /// Whether a controller of `ring` was added.
    pub(crate) fn has_ring(&self, ring: &str) -> bool {
        self.recorded.lock().rings.iter().any(|r| r.ring == ring)
    }

    /// Keeps the ring of a controller whose kinds are `kinds` (none for a controller that
    /// cannot be sharded).
    fn record_ring(&self, ring: &str, kinds: &[KindSharder]) {
        if kinds.is_empty() {
            return;
        }
        let rings = &mut self.recorded.lock().rings;
        let kinds = kinds.iter().map(|k| k.resource.clone());
        match rings.iter_mut().find(|r| r.ring == ring) {
            Some(known) => known.kinds.extend(kinds),
            None => rings.push(RecordedRing {
                ring: ring.to_owned(),
                kinds: kinds.collect(),
            }),
        }
    }
}
