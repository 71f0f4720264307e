//! Keeps a replica's membership of its ring in the Manager: the ring's controllers bind through
//! it, as members of this shard.

use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::member::{LostShardLease, Member};
use crate::controller::Cluster;
use crate::leader::Leadership;
use crate::manager::ring::RingShard;
use crate::manager::{Manager, Result, Runnable};
use crate::sharding::KindSharder;

/// This replica's membership of its ring, kept in the manager for the ring's controllers.
pub(super) struct Membership {
    /// The ring's controllers' cluster: its informers select this shard's objects.
    pub(super) cluster: Cluster,
    pub(super) leadership: Leadership,
    /// The ring and this shard, as a member's error names them when the Lease is lost.
    pub(super) lost: LostShardLease,
    pub(super) members: Mutex<Members>,
    /// The ring's assignment webhooks, when the webhook server can serve.
    #[cfg(feature = "webhooks")]
    pub(super) assignment: Option<super::assignment::Assignment>,
}

/// The ring's controllers bound on this shard so far.
pub(super) struct Members {
    /// Each member holds a clone; dropped when the shard Lease runs.
    pub(super) alive: Option<mpsc::Sender<()>>,
    /// Closed once every member has stopped.
    pub(super) gone: Option<mpsc::Receiver<()>>,
    /// The sharders of the members' kinds, for the leader.
    pub(super) kinds: Vec<KindSharder>,
}

impl RingShard for Membership {
    fn ring(&self) -> &str {
        &self.lost.ring
    }

    fn cluster(&self) -> Cluster {
        self.cluster.clone()
    }

    fn member(
        &self,
        manager: &Manager,
        kinds: Vec<KindSharder>,
        controller: Box<dyn Runnable>,
    ) -> Result<Box<dyn Runnable>> {
        #[cfg(feature = "webhooks")]
        if let Some(assignment) = &self.assignment {
            assignment.add_webhooks(manager, &self.lost.ring, &kinds)?;
        }
        #[cfg(not(feature = "webhooks"))]
        let _ = manager;
        let mut members = self.members.lock();
        members.kinds.extend(kinds);
        Ok(Box::new(Member {
            controller,
            leadership: self.leadership.clone(),
            alive: members.alive.clone(),
            lost: self.lost.clone(),
        }))
    }
}

impl Membership {
    /// The sharders of the members' kinds.
    pub(super) fn kinds(&self) -> Vec<KindSharder> {
        self.members.lock().kinds.clone()
    }

    /// Takes the end of the members' channel, which closes once every member has stopped;
    /// `None` when no controller of the ring is a member.
    pub(super) fn stop_admitting(&self) -> Option<mpsc::Receiver<()>> {
        let mut members = self.members.lock();
        members.alive = None;
        if members.kinds.is_empty() {
            return None;
        }
        members.gone.take()
    }
}
