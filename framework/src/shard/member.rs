//! Runs one controller of the ring on this shard, while the replica holds its shard Lease.

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::leader::Leadership;
use crate::manager::{BoxError, Runnable};

/// One controller of the ring on this shard.
pub(super) struct Member {
    pub(super) controller: Box<dyn Runnable>,
    pub(super) leadership: Leadership,
    /// Held while it runs: the shard Lease waits until no member holds one.
    pub(super) alive: Option<mpsc::Sender<()>>,
    /// Its error when the Lease is lost.
    pub(super) lost: LostShardLease,
}

/// Why a controller of the ring stopped on this shard.
#[derive(Clone, Debug, thiserror::Error)]
#[error(
    "this replica lost its shard Lease {shard} of ring {ring}, so the sharder may give its \
     objects to another shard"
)]
pub(super) struct LostShardLease {
    pub(super) ring: String,
    pub(super) shard: String,
}

impl Runnable for Member {
    fn name(&self) -> String {
        self.controller.name()
    }

    fn needs_leader_election(&self) -> bool {
        false
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        let Self {
            controller,
            mut leadership,
            alive,
            lost,
        } = *self;
        Box::pin(async move {
            let _alive = alive;
            tokio::select! {
                held = leadership.leading() => held?,
                () = shutdown.cancelled() => return Ok(()),
            }
            let run = controller.run(shutdown);
            tokio::select! {
                ended = run => ended,
                () = leadership.lost() => Err(lost.into()),
            }
        })
    }
}
