//! A manager running as the one shard of a ring, under simulation: on every seed the sharder
//! assigns each object to the shard, the ring's controller (a member, bound to the shard's
//! share) reconciles each, and at shutdown the shard Lease is released after the member stopped.
//!
//! The faults are latency and held-back watch events only: a failed renewal may lose the Lease,
//! and a lost Lease ends the run by design, which the oracle would report as a failure.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use serde_json::json;

use crate::controller::{Action, Context, Controller, Reconciler};
use crate::manager::{Config, Manager};
use crate::shard::Shard;
use crate::sharding::shard_label;
use crate::testing::sim::{Faults, Reconciles, Simulation, World};

const RING: &str = "marks";
const SHARD: &str = "shard-0";
const OBJECTS: u64 = 5;

/// Marks each ConfigMap it reconciles with annotation `marked-by`.
struct Marker {
    reconciles: Reconciles,
}

impl Reconciler<ConfigMap> for Marker {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        obj: std::sync::Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> Result<Action, Self::Error> {
        let _running = self.reconciles.enter(obj.name_any());
        if obj.annotations().get("marked-by").map(String::as_str) != Some(SHARD) {
            let api: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), "ns");
            let mark = json!({ "metadata": { "annotations": { "marked-by": SHARD } } });
            api.patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&mark),
            )
            .await?;
        }
        Ok(Action::await_change())
    }
}

/// Whether every ConfigMap is assigned to the shard and marked by it.
fn fixed_point(world: &World) -> Result<(), String> {
    let stored = world
        .fake()
        .list::<ConfigMap>()
        .map_err(|e| e.to_string())?;
    if stored.len() != usize::try_from(OBJECTS).unwrap_or(usize::MAX) {
        return Err(format!("{} ConfigMaps stored", stored.len()));
    }
    for cm in &stored {
        let shard = cm.labels().get(&shard_label(RING)).map(String::as_str);
        let marked = cm.annotations().get("marked-by").map(String::as_str);
        if (shard, marked) != (Some(SHARD), Some(SHARD)) {
            return Err(format!(
                "{} is at {shard:?}, marked by {marked:?}",
                cm.name_any()
            ));
        }
    }
    Ok(())
}

/// One run: the shard's manager, objects created at seeded moments, the fixed point, shutdown.
async fn sharded(world: World) {
    crate::testing::seed_randomness(world.seed());
    world.fake().register::<ConfigMap>();
    world.fake().register::<Lease>();
    let manager = Manager::new(world.client("operator"), Config::default())
        .expect("a client given needs no building");
    let shard = Shard::new(RING, SHARD).namespace(Some("ns".into()));
    manager.add(shard).expect("the shard is added first");
    let marker = Marker {
        reconciles: world.reconciles(),
    };
    (manager.add(Controller::new(marker).ring(RING))).expect("a member of the ring");
    let shutdown = manager.shutdown_token();
    let running = tokio::spawn(manager.run());

    let api: Api<ConfigMap> = Api::namespaced(world.client("workload"), "ns");
    for n in 0..OBJECTS {
        tokio::time::sleep(Duration::from_millis(world.random(0..3000))).await;
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("object-{n}")),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        (api.create(&PostParams::default(), &cm).await).expect("creates fail only with faults");
    }
    world.stop_faults();
    world
        .settle(Duration::from_secs(300), || fixed_point(&world))
        .await;
    shutdown.cancel();
    let stopped = tokio::time::timeout(Duration::from_secs(60), running).await;
    if !matches!(stopped, Ok(Ok(Ok(())))) {
        world.violation(format!("the shard stops cleanly within 60 s: {stopped:?}"));
    }
    let lease = world.fake().get::<Lease>("ns", SHARD).ok().flatten();
    let holder = lease.and_then(|l| l.spec).and_then(|s| s.holder_identity);
    if holder.is_some_and(|h| !h.is_empty()) {
        world.violation("the shard Lease is still held after shutdown");
    }
}

#[test]
fn a_single_shard_gets_every_object_of_its_ring_and_releases_its_lease_on_every_seed() {
    let faults = Faults::none()
        .latency(Duration::from_millis(50))
        .delivery_delay(Duration::from_millis(500));
    let runs = Simulation::new().faults(faults).seeds(0..10).check(sharded);
    assert_eq!(runs.len(), 10);
}
