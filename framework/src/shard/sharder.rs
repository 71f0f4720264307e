//! Runs the sharder of the ring on the leader.

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use tokio_util::sync::CancellationToken;

use super::membership::Membership;
use crate::controller::Cluster;
use crate::informer::SharedInformer;
use crate::manager::{BoxError, Runnable};
use crate::sharding::{Sharder, SharderMetrics};

/// The sharder of the ring, on the leader, once per term.
#[derive(Clone)]
pub(super) struct ShardAssigner {
    pub(super) membership: Arc<Membership>,
    pub(super) leases: SharedInformer<Lease>,
    /// The manager's cluster, whose informers see every object of the ring's kinds.
    pub(super) cluster: Cluster,
    pub(super) metrics: SharderMetrics,
    pub(super) dead_lease_ttl: std::time::Duration,
}

impl Runnable for ShardAssigner {
    fn name(&self) -> String {
        format!("sharder {}", self.membership.lost.ring)
    }

    fn next_term(&self) -> Option<Box<dyn Runnable>> {
        Some(Box::new(self.clone()))
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async move {
            let kinds = self.membership.kinds();
            if kinds.is_empty() {
                // No controller of the ring here: the shard Lease ends the run, saying so.
                return Ok(());
            }
            let sharder = Sharder::new(
                self.membership.lost.ring.clone(),
                self.leases,
                kinds,
                self.metrics,
                self.dead_lease_ttl,
            );
            Ok(sharder
                .run(&self.cluster.factory, &self.cluster.scope, shutdown)
                .await?)
        })
    }
}
