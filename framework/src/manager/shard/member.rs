//! Runs a manager as one shard of a controller ring: its shard Lease, the ring's controllers on
//! their share of the objects, and the sharder on the leader.
//!
//! The ring's controllers bind to a factory of their own whose informers select only objects
//! labelled for this shard, and run on every replica, not only the leader: each waits until
//! the replica holds its shard Lease and ends the run when it loses it (another shard may have
//! its objects by then). On shutdown the Lease is released only after every one of them has
//! stopped, so the sharder never hands an object to another shard while this one still
//! reconciles it.
//!
//! When the webhook server can serve, every replica also serves the ring's assignment webhooks
//! (see `shard_assignment`).

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::controller::{Cluster, Controller};
use crate::informer::Cacheable;
use crate::informer::{self, Factory};
use crate::leader::{LeaderElector, Leadership};
use crate::manager::controllers::ControllerRunnable;
use crate::manager::pod_namespace::pod_namespace;
use crate::manager::{BoxError, Error, Manager, Runnable, RunsOn, runnable_fn};
use crate::sharding::SharderMetrics;
use crate::sharding::{KindSharder, RING_LABEL, SHARDER_IDENTITY, Sharder, shard_label};

/// What a manager running as a shard holds until it runs.
pub(in crate::manager) struct Sharding {
    /// The ring's controllers' factory: its informers select this shard's objects.
    factory: Arc<Factory>,
    elector: LeaderElector,
    leadership: Leadership,
    /// Every running member holds a clone; the Lease waits until none is left.
    alive: mpsc::Sender<()>,
    gone: mpsc::Receiver<()>,
    /// The sharders of the ring's kinds, for the leader.
    kinds: Vec<KindSharder>,
    /// Where the ring's shard Leases live.
    namespace: String,
}

/// Why a controller of the ring stopped on this shard.
#[derive(Debug, thiserror::Error)]
#[error(
    "this replica lost its shard Lease {shard} of ring {ring}, so the sharder may give its \
     objects to another shard"
)]
struct LostShardLease {
    ring: String,
    shard: String,
}

impl Manager {
    /// Keeps the ring of `controller` (named `name`) for the `shards` command and, when this
    /// manager runs as a shard of that ring, binds it as a member; else gives it back, to run
    /// unsharded. A controller's ring is its name unless it names one. A controller over a kind
    /// found at run time cannot be sharded yet: it runs on the leader, unsharded.
    #[allow(
        clippy::result_large_err,
        reason = "the Err is the controller handed back, not an error"
    )]
    pub(in crate::manager) fn run_in_ring<K: Cacheable>(
        &self,
        mut controller: Controller<K>,
        name: &str,
    ) -> Result<Box<dyn Runnable>, Controller<K>> {
        if !controller.can_shard() {
            return Err(controller);
        }
        let ring = controller.ring.clone().unwrap_or_else(|| name.to_owned());
        self.record_ring(&ring, &controller.kinds);
        if self
            .config()
            .shard
            .as_ref()
            .is_none_or(|shard| shard.ring != ring)
        {
            return Err(controller);
        }
        controller.ring = Some(ring);
        Ok(self.shard_member(controller))
    }

    /// Binds `controller`, of this shard's ring, to the shard's factory: it reconciles only
    /// this shard's objects, on every replica, while the replica holds its shard Lease.
    fn shard_member<K: Cacheable>(&self, controller: Controller<K>) -> Box<dyn Runnable> {
        let mut sharding = self.sharding.lock();
        if sharding.is_none() {
            match self.start_sharding() {
                Ok(state) => *sharding = Some(state),
                Err(error) => {
                    // Reported when the manager runs, as every runnable's failure is.
                    let error: BoxError = error.into();
                    return Box::new(runnable_fn(
                        "shard lease",
                        RunsOn::EveryReplica,
                        move |_| async move { Err(error) },
                    ));
                }
            }
        }
        let Some(state) = sharding.as_mut() else {
            unreachable!("invariant: the sharding state was made just above");
        };
        let mut controller = controller.into_shard();
        state.kinds.append(&mut controller.kinds);
        let cluster = Cluster::new(Arc::clone(&state.factory))
            .cache(self.config().cache_scope().clone())
            .metrics(self.metrics().clone());
        let bound = controller.bind_unchecked(&cluster);
        self.add_cache_readiness(&bound);
        let Some(shard) = &self.config().shard else {
            unreachable!("invariant: only a manager configured as a shard has shard members");
        };
        Box::new(Member {
            controller: ControllerRunnable(bound),
            leadership: state.leadership.clone(),
            alive: state.alive.clone(),
            lost: LostShardLease {
                ring: shard.ring.clone(),
                shard: shard.id.clone(),
            },
        })
    }

    /// The shard's factory and Lease, made for the first controller of its ring.
    fn start_sharding(&self) -> Result<Sharding, Error> {
        let Some(shard) = &self.config().shard else {
            unreachable!("invariant: only a manager configured as a shard has shard members");
        };
        let mut informers = self.config().informers.clone();
        let own = format!("{}={}", shard_label(&shard.ring), shard.id);
        let selector = match &informers.label_selector {
            Some(given) => format!("{given},{own}"),
            None => own,
        };
        informers = informers.labels(&selector);
        let factory = Arc::new(Factory::new(self.client()).config(informers));
        self.informer_factories.lock().push(Arc::clone(&factory));
        let namespace = shard
            .namespace
            .clone()
            .unwrap_or_else(|| pod_namespace(&self.client()));
        let elector = LeaderElector::new(
            self.client(),
            &namespace,
            &shard.id,
            shard.lease.clone().identity(shard.id.clone()),
        )
        .map_err(Error::LeaderElection)?
        .labels([(RING_LABEL.to_owned(), shard.ring.clone())].into())
        // A Lease the sharder took over is free once the term it wrote ends.
        .unrenewed_holder(SHARDER_IDENTITY)
        .connectivity(Arc::clone(factory.connectivity()));
        let leadership = elector.leadership();
        let health = leadership.clone();
        self.add_health_check(
            "shard-lease",
            Arc::new(move || health.healthy().map_err(|e| e.to_string())),
        );
        let (alive, gone) = mpsc::channel(1);
        tracing::info!(ring = %shard.ring, shard = %shard.id, %namespace, "running as a shard");
        Ok(Sharding {
            factory,
            elector,
            leadership,
            alive,
            gone,
            kinds: Vec::new(),
            namespace,
        })
    }

    /// Adds the shard Lease and the sharder, to run beside the ring's controllers; nothing for
    /// a manager that is not a shard.
    ///
    /// # Errors
    /// [`Error::InvalidFlags`] for a shard of a ring no controller of this manager is in.
    pub(in crate::manager) fn add_shard_runnables(&self) -> Result<(), Error> {
        let runnables = self.take_sharding()?;
        self.runnables.lock().extend(runnables);
        Ok(())
    }

    /// The shard Lease and the sharder; none for a manager that is not a shard.
    fn take_sharding(&self) -> Result<Vec<Box<dyn Runnable>>, Error> {
        let Some(shard) = &self.config().shard else {
            return Ok(Vec::new());
        };
        let Some(sharding) = self.sharding.lock().take() else {
            return Err(Error::InvalidFlags(format!(
                "--shard-ring {ring}: no controller of this operator is in ring {ring:?} (a \
                 controller's ring is its name unless Controller::ring or \
                 #[controller(ring = ...)] names another)",
                ring = shard.ring
            )));
        };
        let leases = self
            .factory()
            .informer_with(
                Api::<Lease>::namespaced(self.client(), &sharding.namespace),
                informer::Config::default().labels(&format!("{RING_LABEL}={}", shard.ring)),
            )
            .map_err(|e| Error::InvalidFlags(format!("--shard-ring {}: {e}", shard.ring)))?;
        #[cfg(feature = "webhooks")]
        let view = self.assign_at_creation(&shard.ring, &leases, &sharding.kinds)?;
        #[cfg(not(feature = "webhooks"))]
        let view = None;
        let sharder = ShardAssigner {
            ring: shard.ring.clone(),
            leases,
            kinds: sharding.kinds,
            cluster: Cluster::new(Arc::clone(self.factory()))
                .cache(self.config().cache_scope().clone())
                .metrics(self.metrics().clone()),
            metrics: SharderMetrics::new(self.metrics(), &shard.ring),
            dead_lease_ttl: shard.dead_lease_ttl,
        };
        let lease = ShardLease {
            name: format!("shard-lease {}/{}", shard.ring, shard.id),
            ring: shard.ring.clone(),
            shard: shard.id.clone(),
            leadership: sharding.leadership,
            losses: self.metrics().shard_lease_losses(&shard.ring),
            elector: sharding.elector,
            factory: sharding.factory,
            alive: sharding.alive,
            gone: sharding.gone,
        };
        Ok([Box::new(lease) as Box<dyn Runnable>, Box::new(sharder)]
            .into_iter()
            .chain(view)
            .collect())
    }
}

/// One controller of the ring on this shard.
struct Member<K> {
    controller: ControllerRunnable<K>,
    leadership: Leadership,
    alive: mpsc::Sender<()>,
    /// Its error when the Lease is lost.
    lost: LostShardLease,
}

impl<K: Cacheable> Runnable for Member<K> {
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
            let run = Box::new(controller).run(shutdown);
            tokio::select! {
                ended = run => ended,
                () = leadership.lost() => Err(lost.into()),
            }
        })
    }
}

/// Holds this replica's shard Lease until every member has stopped, and reports its loss.
struct ShardLease {
    name: String,
    ring: String,
    shard: String,
    leadership: Leadership,
    /// `kubeward_shard_lease_losses_total{ring}`.
    losses: prometheus::IntCounter,
    elector: LeaderElector,
    factory: Arc<Factory>,
    alive: mpsc::Sender<()>,
    gone: mpsc::Receiver<()>,
}

impl Runnable for ShardLease {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn needs_leader_election(&self) -> bool {
        false
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        let Self {
            ring,
            shard,
            mut leadership,
            losses,
            elector,
            factory,
            alive,
            mut gone,
            ..
        } = *self;
        Box::pin(async move {
            drop(alive);
            // A loss before shutdown (a release at shutdown is no loss) is logged and counted
            // once, however many of the ring's controllers it stops.
            let watch = shutdown.clone();
            let _losses = AbortOnDropHandle::new(tokio::spawn(async move {
                while leadership.leading().await.is_ok() {
                    leadership.lost().await;
                    if watch.is_cancelled() {
                        return;
                    }
                    losses.inc();
                    tracing::error!(%ring, %shard, cause = %LostShardLease { ring: ring.clone(), shard: shard.clone() },
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
            factory.shutdown().await;
            release.cancel();
            election.await?;
            Ok(())
        })
    }
}

/// The sharder of the ring, on the leader.
struct ShardAssigner {
    ring: String,
    leases: informer::SharedInformer<Lease>,
    kinds: Vec<KindSharder>,
    cluster: Cluster,
    metrics: SharderMetrics,
    dead_lease_ttl: std::time::Duration,
}

impl Runnable for ShardAssigner {
    fn name(&self) -> String {
        format!("sharder {}", self.ring)
    }

    fn next_term(&self) -> Option<Box<dyn Runnable>> {
        Some(Box::new(Self {
            ring: self.ring.clone(),
            leases: self.leases.clone(),
            kinds: self.kinds.clone(),
            cluster: self.cluster.clone(),
            metrics: self.metrics.clone(),
            dead_lease_ttl: self.dead_lease_ttl,
        }))
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async move {
            let sharder = Sharder::new(
                self.ring,
                self.leases,
                self.kinds,
                self.metrics,
                self.dead_lease_ttl,
            );
            Ok(sharder
                .run(&self.cluster.factory, &self.cluster.scope, shutdown)
                .await?)
        })
    }
}
