//! Hand-overs of owners and the objects they own on the real control plane (issue 41): owned
//! objects are never drained but move with their owner, and a cleanup that runs in the middle
//! of a hand-over deletes every owned object, whichever shard label it still carries.

use crate::fixtures::watching;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, Client, ResourceExt as _};
use kubeward::controller::{Action, Cleanup, Context, Controller, Reconciler};
use kubeward::leader;
use kubeward::manager::{LeaderElection, Manager};
use kubeward::shard::Shard;
use kubeward::sharding::{HashRing, drain_label, object_key, shard_label};
use kubeward::testing::{ControlPlane, wait_for};
use kubeward_tests::metric_sum;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const RING: &str = "owners";
const FINALIZER: &str = "test.kubeward.dev/cleanup";
const WAIT: Duration = Duration::from_secs(60);

/// Owns a ConfigMap `NAME-copy` per Secret, applied by each reconcile when `apply` is set, and
/// deleted behind the finalizer with a `Deleted` Event per ConfigMap (the example operator's
/// cleanup).
struct Copier {
    apply: bool,
    reconciles: Arc<AtomicUsize>,
}

impl Reconciler<Secret> for Copier {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        secret: Arc<Secret>,
        ctx: &Context<Secret>,
    ) -> Result<Action, kubeward::Error> {
        if self.apply {
            let copy = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("{}-copy", secret.name_any())),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            ctx.apply(secret.as_ref(), copy).await?;
        }
        self.reconciles.fetch_add(1, Ordering::SeqCst);
        Ok(Action::await_change())
    }
}

impl Cleanup<Secret> for Copier {
    async fn cleanup(
        &self,
        secret: Arc<Secret>,
        ctx: &Context<Secret>,
    ) -> Result<(), kubeward::Error> {
        for deleted in ctx.prune::<ConfigMap>(&secret, &[]).await? {
            let note = format!("deleted ConfigMap {}", deleted.name());
            ctx.event(&secret).normal("Deleted", note);
        }
        Ok(())
    }
}

struct Replica {
    registry: prometheus::Registry,
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
}

impl Replica {
    /// Shard `id` of [`RING`] in `ns`, running a [`Copier`] that applies when `apply`.
    fn start(client: Client, ns: &str, id: &str, apply: bool) -> (Self, Arc<AtomicUsize>) {
        let timings = leader::Config::default()
            .lease_duration(Duration::from_secs(3))
            .renew_deadline(Duration::from_secs(2))
            .retry_period(Duration::from_millis(300));
        let config = watching(ns.to_owned()).leader_election(Some(LeaderElection::new(
            "sharder",
            Some(ns.to_owned()),
            timings.clone(),
        )));
        let manager = Manager::new(client, config).expect("a manager builds for a client given");
        manager
            .add(
                Shard::new(RING, id)
                    .namespace(Some(ns.to_owned()))
                    .lease(timings),
            )
            .expect("the test manager takes the shard");
        let reconciles = Arc::new(AtomicUsize::new(0));
        let copier = Copier {
            apply,
            reconciles: Arc::clone(&reconciles),
        };
        manager
            .add(
                Controller::with_finalizer(copier, FINALIZER)
                    .owns::<ConfigMap>()
                    .ring(RING),
            )
            .expect("the test manager takes it");
        let replica = Self {
            registry: manager.registry().clone(),
            token: manager.shutdown_token(),
            run: tokio::spawn(manager.run()),
        };
        (replica, reconciles)
    }

    async fn stop(self) -> anyhow::Result<()> {
        self.token.cancel();
        tokio::time::timeout(WAIT, self.run).await???;
        Ok(())
    }

    /// The sum of `read` over the leader's series of `family` for [`RING`].
    fn metric(&self, family: &str, read: impl Fn(&prometheus::proto::Metric) -> f64) -> f64 {
        metric_sum(&self.registry, family, ("ring", RING), read)
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The shard and drain labels of `obj`.
fn placement(obj: &impl kube::Resource) -> (Option<String>, bool) {
    let labels = obj.meta().labels.clone().unwrap_or_default();
    (
        labels.get(&shard_label(RING)).cloned(),
        labels.contains_key(&drain_label(RING)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_deleted_in_the_middle_of_a_hand_over_takes_its_owned_objects_with_it()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("handover-cleanup").await?;
    let client = cp.client();
    // Someone else leads for an hour: no sharder runs, so the hand-over stays half done (the
    // owner moved to shard-b, its ConfigMap not yet relabelled from shard-a) for as long as
    // the test needs, as it is for a moment in a real hand-over.
    let leader = Lease {
        metadata: ObjectMeta {
            name: Some("sharder".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("someone-else".into()),
            lease_duration_seconds: Some(3600),
            renew_time: Some(MicroTime(Timestamp::now())),
            ..LeaseSpec::default()
        }),
    };
    Api::<Lease>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &leader)
        .await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let owner = Secret {
        metadata: ObjectMeta {
            name: Some("gen".into()),
            labels: Some(labels(&[(&shard_label(RING), "shard-b")])),
            finalizers: Some(vec![FINALIZER.into()]),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    let owner = secrets.create(&PostParams::default(), &owner).await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let copy = ConfigMap {
        metadata: ObjectMeta {
            name: Some("gen-copy".into()),
            labels: Some(labels(&[(&shard_label(RING), "shard-a")])),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Secret".into(),
                name: "gen".into(),
                uid: owner.uid().unwrap_or_default(),
                controller: Some(true),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    config_maps.create(&PostParams::default(), &copy).await?;

    let (replica, reconciles) = Replica::start(client.clone(), &ns, "shard-b", false);
    wait_for(WAIT, "shard-b to reconcile the owner it was given", || {
        let n = reconciles.load(Ordering::SeqCst);
        async move { (n > 0).then_some(()) }
    })
    .await?;
    secrets.delete("gen", &DeleteParams::default()).await?;
    wait_for(WAIT, "the owner to go once its cleanup ran", || async {
        secrets.get_opt("gen").await.ok()?.is_none().then_some(())
    })
    .await?;
    let left = config_maps.get_opt("gen-copy").await?;
    assert!(
        left.is_none(),
        "the cleanup on shard-b left the owned ConfigMap behind (labelled {:?})",
        left.as_ref().map(placement)
    );
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    wait_for(WAIT, "a Deleted Event about the owner", || async {
        let listed = events.list(&ListParams::default()).await.ok()?;
        listed
            .items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("Deleted")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("gen")
            })
            .then_some(())
    })
    .await?;
    replica.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_objects_move_with_their_owners_and_keep_no_drain_label_after_a_rebalance()
-> anyhow::Result<()> {
    // Enough owners that the second shard's share (about half) is never empty.
    const OWNERS: usize = 40;
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("handover-owned").await?;
    let client = cp.client();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for i in 0..OWNERS {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(format!("gen-{i}")),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        };
        secrets.create(&PostParams::default(), &secret).await?;
    }
    // Shard a alone leads (it runs the sharder) and gets every owner and ConfigMap.
    let (leader, _) = Replica::start(client.clone(), &ns, "shard-a", true);
    let last = Mutex::new(String::new());
    let placed = |ring: HashRing| {
        let (secrets, config_maps, last, ns) = (&secrets, &config_maps, &last, &ns);
        async move {
            let owners = secrets.list(&ListParams::default()).await.ok()?.items;
            let owned = config_maps.list(&ListParams::default()).await.ok()?.items;
            let mut wrong = Vec::new();
            for owner in &owners {
                let key = object_key::<Secret>(Some(ns), &owner.name_any());
                let want = ring.shard_for(&key).map(str::to_owned);
                let copy = owned
                    .iter()
                    .find(|cm| cm.name_any() == format!("{}-copy", owner.name_any()));
                for (name, at) in [
                    (owner.name_any(), Some(placement(owner))),
                    (format!("{}-copy", owner.name_any()), copy.map(placement)),
                ] {
                    if at != Some((want.clone(), false)) {
                        wrong.push(format!("{name}: {at:?}, not on {want:?}"));
                    }
                }
            }
            let done = owners.len() == OWNERS && wrong.is_empty();
            *last.lock() = format!("{} misplaced: {wrong:?}", wrong.len());
            done.then_some(())
        }
    };
    let what = "every owner and its ConfigMap on shard-a, without a drain label";
    if wait_for(WAIT, what, || placed(HashRing::new(["shard-a"])))
        .await
        .is_err()
    {
        anyhow::bail!("after {WAIT:?}, still not {what}: {}", last.lock());
    }
    let drains_before = leader.metric("kubeward_sharder_drains_total", |m| {
        m.get_counter().get_value()
    });

    // Shard b joins: about half of the owners move, each drained once, and their ConfigMaps
    // with them, none drained.
    let (joined, _) = Replica::start(client.clone(), &ns, "shard-b", true);
    let what = "every owner and its ConfigMap on the shard the two-shard ring gives the owner, \
                without a drain label";
    if wait_for(WAIT, what, || placed(HashRing::new(["shard-a", "shard-b"])))
        .await
        .is_err()
    {
        anyhow::bail!("after {WAIT:?}, still not {what}: {}", last.lock());
    }
    let ring = HashRing::new(["shard-a", "shard-b"]);
    let moved = (0..OWNERS)
        .filter(|i| {
            ring.shard_for(&object_key::<Secret>(Some(&ns), &format!("gen-{i}"))) == Some("shard-b")
        })
        .count();
    assert!(moved > 0, "the ring gives shard-b none of {OWNERS} owners");
    // Every drain has ended in a hand-over, and only the owners were drained: the hand-over
    // histogram holds the owners' and nothing else.
    let counted = wait_for(WAIT, "a hand-over observed for every drain", || {
        let drains = leader.metric("kubeward_sharder_drains_total", |m| {
            m.get_counter().get_value()
        }) - drains_before;
        let handovers = leader.metric("kubeward_sharder_handover_seconds", |m| {
            m.get_histogram().get_sample_count() as f64
        });
        async move { (drains > 0.0 && (drains - handovers).abs() < 0.5).then_some(drains) }
    })
    .await;
    let drains = leader.metric("kubeward_sharder_drains_total", |m| {
        m.get_counter().get_value()
    }) - drains_before;
    let handovers = leader.metric("kubeward_sharder_handover_seconds", |m| {
        m.get_histogram().get_sample_count() as f64
    });
    assert!(
        counted.is_ok(),
        "{drains} drains but {handovers} hand-overs observed ({moved} owners moved)"
    );
    #[allow(clippy::cast_precision_loss)] // a few dozen
    let owners_moved = moved as f64;
    assert!(
        (drains - owners_moved).abs() < 0.5,
        "{drains} drains for {moved} owners moved: owned objects were drained too"
    );
    joined.stop().await?;
    leader.stop().await
}
