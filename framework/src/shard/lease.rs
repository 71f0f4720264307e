//! Holds this replica's shard Lease until every member of the ring has stopped, and reports
//! its loss.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::membership::Membership;
use crate::leader::LeaderElector;
use crate::manager::{BoxError, Error, Runnable};

/// The shard Lease as a runnable every replica runs.
pub(super) struct ShardLease {
    pub(super) membership: Arc<Membership>,
    pub(super) elector: LeaderElector,
    /// `kubeward_shard_lease_losses_total{ring}`.
    pub(super) losses: prometheus::IntCounter,
}

impl Runnable for ShardLease {
    fn name(&self) -> String {
        let lost = &self.membership.lost;
        format!("shard-lease {}/{}", lost.ring, lost.shard)
    }

    fn needs_leader_election(&self) -> bool {
        false
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        let Self {
            membership,
            elector,
            losses,
        } = *self;
        Box::pin(async move {
            let Some(mut gone) = membership.stop_admitting() else {
                let ring = &membership.lost.ring;
                return Err(Error::InvalidFlags(format!(
                    "--shard-ring {ring}: no controller of this operator is in ring {ring:?} (a \
                     controller's ring is its name unless Controller::ring or \
                     #[controller(ring = ...)] names another)"
                ))
                .into());
            };
            // A loss before shutdown (a release at shutdown is no loss) is logged and counted
            // once, however many of the ring's controllers it stops.
            let watch = shutdown.clone();
            let mut leadership = membership.leadership.clone();
            let lost = membership.lost.clone();
            let _losses = AbortOnDropHandle::new(tokio::spawn(async move {
                while leadership.leading().await.is_ok() {
                    leadership.lost().await;
                    if watch.is_cancelled() {
                        return;
                    }
                    losses.inc();
                    tracing::error!(ring = %lost.ring, shard = %lost.shard, cause = %lost,
                        "lost the shard Lease: stopping the ring's controllers");
                }
            }));
            let release = CancellationToken::new();
            // Aborted with this future: a manager dropped without shutting down stops renewing.
            let election = AbortOnDropHandle::new(tokio::spawn(
                elector.run(release.clone().cancelled_owned()),
            ));
            shutdown.cancelled().await;
            // Every member has stopped (or never ran) when the last sender is gone.
            while gone.recv().await.is_some() {}
            membership.cluster.factory.shutdown().await;
            release.cancel();
            election.await?;
            Ok(())
        })
    }
}
