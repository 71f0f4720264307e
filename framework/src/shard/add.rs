//! Adds a shard to a Manager: its shard Lease, the sharder, and the membership its ring's
//! controllers bind through.

use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::Shard;
use super::lease::ShardLease;
use super::member::LostShardLease;
use super::membership::{Members, Membership};
use super::sharder::ShardAssigner;
use crate::controller::Cluster;
use crate::informer::{self, Factory};
use crate::leader::LeaderElector;
use crate::manager::ring::RingShard;
use crate::manager::{Error, IntoRunnable, Manager, Result, Runnable};
use crate::process::pod_namespace::pod_namespace;
use crate::sharding::{RING_LABEL, SHARDER_IDENTITY, SharderMetrics, shard_label};

impl IntoRunnable for Shard {
    /// Makes this manager a shard of the ring: the ring's controllers added after bind to this
    /// shard's objects; adds the sharder (and, when the webhook server can serve, the view of
    /// the ring its assignment webhooks read) and returns the shard Lease.
    ///
    /// # Errors
    /// [`Error::InvalidFlags`] when the manager is a shard already, or controllers of the ring
    /// were added before (they run unsharded); [`Error::LeaderElection`] for Lease timings that
    /// do not fit together.
    fn into_runnable(self, manager: &Manager) -> Result<Box<dyn Runnable>> {
        if manager.part::<Arc<dyn RingShard>>().is_some() {
            return Err(already_a_shard(&self.ring));
        }
        if manager.has_ring(&self.ring) {
            return Err(Error::InvalidFlags(format!(
                "shard of ring {:?}: add the shard before the ring's controllers, which were \
                 added unsharded",
                self.ring
            )));
        }
        let namespace =
            (self.namespace.clone()).unwrap_or_else(|| pod_namespace(&manager.client()));
        let factory = shard_factory(manager, &self);
        let elector = LeaderElector::new(
            manager.client(),
            &namespace,
            &self.id,
            self.lease.clone().identity(self.id.clone()),
        )
        .map_err(Error::LeaderElection)?
        .labels([(RING_LABEL.to_owned(), self.ring.clone())].into())
        // A Lease the sharder took over is free once the term it wrote ends.
        .unrenewed_holder(SHARDER_IDENTITY)
        .connectivity(Arc::clone(factory.connectivity()));
        let leases = manager
            .factory()
            .informer_with(
                Api::<Lease>::namespaced(manager.client(), &namespace),
                informer::Config::default().labels(&format!("{RING_LABEL}={}", self.ring)),
            )
            .map_err(|e| Error::InvalidFlags(format!("--shard-ring {}: {e}", self.ring)))?;
        let (alive, gone) = mpsc::channel(1);
        let membership = Arc::new(Membership {
            cluster: cluster(manager, factory),
            leadership: elector.leadership(),
            lost: LostShardLease {
                ring: self.ring.clone(),
                shard: self.id.clone(),
            },
            members: Mutex::new(Members {
                alive: Some(alive),
                gone: Some(gone),
                kinds: Vec::new(),
            }),
            #[cfg(feature = "webhooks")]
            assignment: super::assignment::Assignment::new(manager, &self.ring, &leases)?,
        });
        let shard: Arc<dyn RingShard> = membership.clone();
        if !manager.part_or_keep(|| shard).1 {
            return Err(already_a_shard(&self.ring));
        }
        let health = membership.leadership.clone();
        manager.add_health_check(
            "shard-lease",
            Arc::new(move || health.healthy().map_err(|e| e.to_string())),
        );
        manager.add(ShardAssigner {
            membership: Arc::clone(&membership),
            leases,
            cluster: cluster(manager, Arc::clone(manager.factory())),
            metrics: SharderMetrics::new(manager.metrics(), &self.ring),
            dead_lease_ttl: self.dead_lease_ttl,
        })?;
        tracing::info!(ring = %self.ring, shard = %self.id, %namespace, "running as a shard");
        Ok(Box::new(ShardLease {
            losses: manager.metrics().shard_lease_losses(&self.ring),
            membership,
            elector,
        }))
    }
}

/// The error of a second shard added to one manager.
fn already_a_shard(ring: &str) -> Error {
    Error::InvalidFlags(format!(
        "shard of ring {ring:?}: this manager is a shard of a ring already"
    ))
}

/// A factory like the manager's whose informers select only the objects labelled for `shard`,
/// reported in `/metrics`.
fn shard_factory(manager: &Manager, shard: &Shard) -> Arc<Factory> {
    let mut informers = manager.config().informers.clone();
    let own = format!("{}={}", shard_label(&shard.ring), shard.id);
    let selector = match &informers.label_selector {
        Some(given) => format!("{given},{own}"),
        None => own,
    };
    informers = informers.labels(&selector);
    let factory = Arc::new(Factory::new(manager.client()).config(informers));
    manager.report_informers(Arc::clone(&factory));
    factory
}

/// `factory` with the manager's cache scope and metrics.
fn cluster(manager: &Manager, factory: Arc<Factory>) -> Cluster {
    Cluster::new(factory)
        .cache(manager.config().cache_scope().clone())
        .metrics(manager.metrics().clone())
        .reconciles(manager.reconciles().clone())
}
