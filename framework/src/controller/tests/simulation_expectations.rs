//! Expectations under simulation: a reconciler that finds its copies in the cache's store
//! itself (a read no fence covers) makes no duplicate `generateName` create with expectations
//! on, and duplicates with them off.
//!
//! Same faults as `simulation_fencing`: late watch events (up to 500 ms each), slow requests,
//! broken watches, and no failed writes (a create whose answer is lost cannot be expected).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::simulation::until_written;
use crate::controller::{Action, Cluster, Context, Controller, Reconciler};
use crate::informer::Factory;
use crate::testing::sim::{Faults, Simulation, World};

const SOURCES: u64 = 3;

/// Late watch events and slow requests; no write fails.
fn late_watches() -> Faults {
    Faults::none()
        .latency(Duration::from_millis(20))
        .delivery_delay(Duration::from_millis(500))
        .watch_breaks(0.3, Duration::from_secs(20))
}

/// Creates a copy of each source with `generateName` when the cache's store (read directly,
/// unfenced) holds none.
struct StoreCopier;

impl Reconciler<ConfigMap> for StoreCopier {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        source: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> kube::Result<Action> {
        if source.labels().get("role").map(String::as_str) != Some("source") {
            return Ok(Action::await_change());
        }
        let name = source.name_any();
        let copied = ctx
            .store()
            .list()
            .iter()
            .any(|cm| cm.labels().get("copy-of") == Some(&name));
        if !copied {
            let copy = ConfigMap {
                metadata: ObjectMeta {
                    generate_name: Some(format!("{name}-")),
                    labels: Some([("copy-of".to_owned(), name)].into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            let api: Api<ConfigMap> = Api::namespaced(ctx.client(), "ns");
            api.create(&PostParams::default(), &copy).await?;
        }
        Ok(Action::await_change())
    }
}

/// One run of the store-reading copier, with expectations or not, while sources change every few hundred
/// milliseconds; returns how many copies beyond one per source it made.
async fn duplicates(world: World, expecting: bool) -> u64 {
    world.fake().register::<ConfigMap>();
    let controller = Controller::new(StoreCopier).read_your_writes(expecting);
    let factory = Arc::new(Factory::new(world.client("operator")));
    let bound = (controller.bind(&Cluster::new(Arc::clone(&factory)))).expect("a valid controller");
    let shutdown = CancellationToken::new();
    let token = shutdown.clone();
    let running = tokio::spawn(async move { bound.run(token.cancelled_owned()).await });

    let api: Api<ConfigMap> = Api::namespaced(world.client("workload"), "ns");
    for step in 0..16 {
        tokio::time::sleep(Duration::from_millis(world.random(0..400))).await;
        let name = format!("source-{}", world.random(0..SOURCES));
        if world
            .fake()
            .get::<ConfigMap>("ns", &name)
            .ok()
            .flatten()
            .is_some()
        {
            let data = json!({ "data": { "step": step.to_string() } });
            let (params, patch) = (PatchParams::default(), Patch::Merge(&data));
            until_written(|| api.patch(&name, &params, &patch)).await;
        } else {
            let source = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name),
                    labels: Some([("role".to_owned(), "source".to_owned())].into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            let post = PostParams::default();
            until_written(|| api.create(&post, &source)).await;
        }
    }
    let every_source_copied = || {
        let stored = world.fake().list::<ConfigMap>().unwrap_or_default();
        let sources = stored.iter().filter(|cm| cm.labels().contains_key("role"));
        let missing = sources
            .filter(|s| {
                !stored
                    .iter()
                    .any(|c| c.labels().get("copy-of") == Some(&s.name_any()))
            })
            .count();
        if missing == 0 {
            Ok(())
        } else {
            Err(format!("{missing} sources have no copy"))
        }
    };
    world
        .settle(Duration::from_secs(60), every_source_copied)
        .await;
    // Late reconciles of the last changes have had their chance to duplicate too.
    tokio::time::sleep(Duration::from_secs(10)).await;
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(60), running).await;
    factory.shutdown().await;
    let stored = world.fake().list::<ConfigMap>().unwrap_or_default();
    let copies = stored
        .iter()
        .filter(|cm| cm.labels().contains_key("copy-of"));
    let sources = stored.iter().filter(|cm| cm.labels().contains_key("role"));
    (copies.count() as u64).saturating_sub(sources.count() as u64)
}

/// Duplicates summed over `seeds`, with expectations or not.
fn duplicates_over(seeds: std::ops::Range<u64>, expecting: bool) -> u64 {
    let total = Arc::new(AtomicU64::new(0));
    let simulation = Simulation::new().faults(late_watches()).seeds(seeds);
    simulation.check(|world| {
        let total = Arc::clone(&total);
        async move {
            let made = duplicates(world, expecting).await;
            total.fetch_add(made, Ordering::Relaxed);
        }
    });
    total.load(Ordering::Relaxed)
}

#[test]
fn expectations_make_no_duplicate_generate_name_create_where_a_store_read_without_them_does() {
    let without = duplicates_over(0..40, false);
    eprintln!("without expectations: {without} duplicates over seeds 0..40");
    assert!(
        without > 0,
        "late watches made no duplicate without expectations in 40 seeds: the test proves nothing"
    );
    let with = duplicates_over(0..200, true);
    eprintln!("with expectations: {with} duplicates over seeds 0..200");
    assert_eq!(
        with, 0,
        "a reconcile acted before the cache showed its own create"
    );
}
