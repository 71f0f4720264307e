//! One controller sharded over three managers on the real control plane: every object is
//! assigned, each shard reconciles only its own, no object is reconciled by two shards at once,
//! and the objects of a shard that stops move to the others.

mod at_creation;
mod handover;
mod restart;

use crate::fixtures::watching;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt as _};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::leader;
use kubeward::manager::{LeaderElection, Manager};
use kubeward::shard::Shard;
use kubeward::sharding::{drain_label, shard_label};
use kubeward::testing::{ControlPlane, wait_for};
use kubeward_tests::metric_sum;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const RING: &str = "configmaps";
const OBJECTS: usize = 150;
/// How long a shard Lease lasts unrenewed in these tests.
const LEASE: Duration = Duration::from_secs(3);
const SETTLE: Duration = Duration::from_secs(60);

/// Who reconciles what: the shard of each reconcile, and the reconciles running now (the
/// marker a second shard would trip over).
#[derive(Clone, Default)]
struct Ledger {
    by: Arc<Mutex<HashMap<String, Vec<String>>>>,
    running: Arc<Mutex<HashMap<String, String>>>,
    overlaps: Arc<Mutex<Vec<String>>>,
}

struct Recorder {
    shard: String,
    ledger: Ledger,
}

impl Reconciler<ConfigMap> for Recorder {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _: &Context<ConfigMap>,
    ) -> Result<Action, kube::Error> {
        let name = cm.name_any();
        if let Some(other) = self
            .ledger
            .running
            .lock()
            .insert(name.clone(), self.shard.clone())
        {
            self.ledger
                .overlaps
                .lock()
                .push(format!("{name}: {other} and {}", self.shard));
        }
        // A reconcile that takes a little while, so that overlaps would be seen.
        tokio::time::sleep(Duration::from_millis(5)).await;
        self.ledger.running.lock().remove(&name);
        self.ledger
            .by
            .lock()
            .entry(name)
            .or_default()
            .push(self.shard.clone());
        Ok(Action::await_change())
    }
}

struct Replica {
    registry: prometheus::Registry,
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
}

fn start(cp: &ControlPlane, ns: &str, shard: &str, ledger: &Ledger) -> Replica {
    let timings = leader::Config::default()
        .lease_duration(LEASE)
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(300));
    let config = watching(ns.to_owned()).leader_election(Some(LeaderElection::new(
        "sharder",
        Some(ns.to_owned()),
        timings.clone(),
    )));
    let manager = Manager::new(cp.client(), config).expect("a manager builds for a client given");
    manager
        .add(
            Shard::new(RING, shard)
                .namespace(Some(ns.to_owned()))
                .lease(timings),
        )
        .expect("the test manager takes the shard");
    let recorder = Recorder {
        shard: shard.to_owned(),
        ledger: ledger.clone(),
    };
    manager
        .add(Controller::new(recorder).ring(RING).concurrency(4))
        .expect("the test manager takes it");
    let token = manager.shutdown_token();
    Replica {
        registry: manager.registry().clone(),
        token,
        run: tokio::spawn(manager.run()),
    }
}

/// The shard label of every ConfigMap, by name.
async fn assignments(api: &Api<ConfigMap>) -> anyhow::Result<BTreeMap<String, Option<String>>> {
    let label = shard_label(RING);
    Ok(api
        .list(&ListParams::default())
        .await?
        .into_iter()
        .map(|cm| {
            let shard = cm.labels().get(&label).cloned();
            (cm.name_any(), shard)
        })
        .collect())
}

/// Waits until every ConfigMap is assigned to one of `shards` and has been reconciled by it.
async fn settled(
    api: &Api<ConfigMap>,
    ledger: &Ledger,
    shards: &[&str],
) -> anyhow::Result<BTreeMap<String, Option<String>>> {
    let what = format!("every ConfigMap assigned to one of {shards:?} and reconciled there");
    Ok(wait_for(SETTLE, &what, || async {
        let assigned = assignments(api).await.ok()?;
        let by = ledger.by.lock();
        let done = assigned.len() == OBJECTS
            && assigned.iter().all(|(name, shard)| {
                shard.as_deref().is_some_and(|s| shards.contains(&s))
                    && by.get(name).and_then(|b| b.last()) == shard.as_ref()
            });
        done.then_some(assigned)
    })
    .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_shards_share_the_objects_and_a_stopped_shards_objects_move_to_the_others()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("sharding").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    for i in 0..OBJECTS {
        // Bad input among them: one assigned to a shard that does not exist, and one with a
        // drain label but no shard, as if edited by hand.
        let labels = match i {
            0 => Some(BTreeMap::from([(shard_label(RING), "ghost".to_owned())])),
            1 => Some(BTreeMap::from([(drain_label(RING), "true".to_owned())])),
            _ => None,
        };
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("cm-{i}")),
                labels,
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        api.create(&PostParams::default(), &cm).await?;
    }
    let ledger = Ledger::default();
    let shards = ["shard-a", "shard-b", "shard-c"];
    let replicas: Vec<Replica> = shards.iter().map(|s| start(cp, &ns, s, &ledger)).collect();

    let assigned = settled(&api, &ledger, &shards).await?;
    for shard in shards {
        let share = assigned
            .values()
            .filter(|s| s.as_deref() == Some(shard))
            .count();
        // A third of 150 is 50; ±15% of the whole would be too tight for so few keys.
        assert!(
            (25..=75).contains(&share),
            "{shard} holds {share} of {OBJECTS}"
        );
    }
    let drained: Vec<String> = api
        .list(&ListParams::default().labels(&drain_label(RING)))
        .await?
        .into_iter()
        .map(|cm| cm.name_any())
        .collect();
    assert!(drained.is_empty(), "drain labels left: {drained:?}");
    // The leader's sharder reports the ring and its work (the others report zeros).
    let sum = |family: &str| -> f64 {
        replicas
            .iter()
            .map(|r| {
                metric_sum(&r.registry, family, ("ring", RING), |m| {
                    m.get_gauge().get_value() + m.get_counter().get_value()
                })
            })
            .sum()
    };
    let reported = sum("kubeward_sharder_shards");
    assert!((reported - 3.0).abs() < 0.5, "{reported} shards reported");
    assert!(
        sum("kubeward_sharder_assignments_total") >= OBJECTS as f64,
        "{} assignments for {OBJECTS} objects",
        sum("kubeward_sharder_assignments_total")
    );
    // Shards joined one by one, so objects first given to an early shard were drained and
    // moved as the others joined: never reconciled by two at once.
    assert!(
        ledger.overlaps.lock().is_empty(),
        "reconciled by two shards at once: {:?}",
        ledger.overlaps.lock()
    );

    // The last shard stops: it finishes its reconciles, releases its Lease, and its objects go
    // to the other two.
    let mut replicas = replicas;
    let stopped = replicas.pop().expect("three replicas");
    stopped.token.cancel();
    tokio::time::timeout(SETTLE, stopped.run).await???;
    settled(&api, &ledger, &shards[..2]).await?;
    assert!(
        ledger.overlaps.lock().is_empty(),
        "reconciled by two shards at once: {:?}",
        ledger.overlaps.lock()
    );

    // The second shard dies (its task is dropped: no release, no more renewals): its objects
    // move once its Lease has expired.
    let died = replicas.pop().expect("two replicas");
    let killed_at = tokio::time::Instant::now();
    died.run.abort();
    let _ = died.run.await;
    settled(&api, &ledger, &shards[..1]).await?;
    let moved_after = killed_at.elapsed();
    assert!(
        moved_after <= LEASE + Duration::from_secs(5),
        "a dead shard's objects were reconciled elsewhere {moved_after:?} after it died"
    );

    for replica in replicas {
        replica.token.cancel();
        tokio::time::timeout(SETTLE, replica.run).await???;
    }
    Ok(())
}
