//! A copier behind a finalizer under simulation: its cleanup deletes a deleted source's copy,
//! and planted cleanup bugs are found within a bounded number of seeds.
//!
//! The workload creates, updates and deletes four source ConfigMaps at seeded moments while the
//! seed's faults run. Then faults stop, and within five virtual minutes every source still
//! there must have exactly one copy with its data, every deleted source must be gone (its
//! cleanup finished), and no copy may be left whose source is gone (an orphan).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::simulation::{copy_by_name, until_written};
use crate::controller::{Action, Cleanup, Cluster, Context, Controller, Reconciler};
use crate::informer::Factory;
use crate::testing::sim::{Reconciles, Simulation, World};

const SOURCES: u64 = 4;
const FINALIZER: &str = "test.kubeward.dev/copy";

/// How the copier cleans up after a deleted source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cleaner {
    /// Deletes the copy and waits for the answer; a copy already gone (404) counts as done.
    Correct,
    /// Starts the copy's delete in a task of its own and returns at once: the finalizer comes
    /// off before the cleanup finished, and a delete that fails is never retried.
    Detached,
    /// Deletes the copy and fails on any error, 404 Not Found too: once the copy is gone (a
    /// delete whose answer was lost, or a finalizer write that failed after the delete) the
    /// cleanup never finishes.
    NotFoundFails,
}

/// A copier (as the simulation module's correct one) with the cleanup `how`.
struct Copying {
    how: Cleaner,
    reconciles: Reconciles,
}

fn is_source(cm: &ConfigMap) -> bool {
    cm.labels().get("role").map(String::as_str) == Some("source")
}

impl Reconciler<ConfigMap> for Copying {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        source: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> kube::Result<Action> {
        if !is_source(&source) {
            return Ok(Action::await_change());
        }
        let _reconciling = self.reconciles.enter(source.name_any());
        let api: Api<ConfigMap> = Api::namespaced(ctx.client(), "ns");
        copy_by_name(&api, &source, false).await?;
        Ok(Action::await_change())
    }
}

impl Cleanup<ConfigMap> for Copying {
    async fn cleanup(&self, source: Arc<ConfigMap>, ctx: &Context<ConfigMap>) -> kube::Result<()> {
        if !is_source(&source) {
            return Ok(());
        }
        let _reconciling = self.reconciles.enter(source.name_any());
        let api: Api<ConfigMap> = Api::namespaced(ctx.client(), "ns");
        let copy = format!("{}-copy", source.name_any());
        match self.how {
            Cleaner::Correct => match api.delete(&copy, &DeleteParams::default()).await {
                Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                other => other.map(drop),
            },
            Cleaner::Detached => {
                tokio::spawn(async move { api.delete(&copy, &DeleteParams::default()).await });
                Ok(())
            }
            Cleaner::NotFoundFails => api.delete(&copy, &DeleteParams::default()).await.map(drop),
        }
    }
}

/// Whether every source left has exactly one copy with its data, no source is stuck
/// deleting, and no copy outlived its source.
fn fixed_point(world: &World) -> Result<(), String> {
    let stored = world
        .fake()
        .list::<ConfigMap>()
        .map_err(|error| error.to_string())?;
    let sources: BTreeSet<String> = stored
        .iter()
        .filter(|cm| is_source(cm))
        .map(ResourceExt::name_any)
        .collect();
    for source in stored.iter().filter(|cm| is_source(cm)) {
        let name = source.name_any();
        if source.metadata.deletion_timestamp.is_some() {
            return Err(format!(
                "{name} is still being deleted: its cleanup never finished"
            ));
        }
        let copies: Vec<&ConfigMap> = stored
            .iter()
            .filter(|cm| cm.labels().get("copy-of") == Some(&name))
            .collect();
        match copies.as_slice() {
            [copy] if copy.data == source.data => {}
            [copy] => return Err(format!("the copy of {name} has stale data {:?}", copy.data)),
            [] => return Err(format!("{name} has no copy")),
            many => return Err(format!("{name} has {} copies", many.len())),
        }
    }
    if let Some(orphan) = stored.iter().find(|cm| {
        cm.labels()
            .get("copy-of")
            .is_some_and(|of| !sources.contains(of))
    }) {
        return Err(format!(
            "{} is an orphan: its source is gone",
            orphan.name_any()
        ));
    }
    Ok(())
}

/// Deletes `name` until the API server answers without a fault (404 counts as done).
async fn until_deleted(api: &Api<ConfigMap>, name: &str) {
    loop {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.code == 404 => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// One run: the copier under the seed's faults while sources come and go, then the fixed point.
///
/// A planted bug runs without read-your-writes, as the book's table was measured: with fenced
/// reads both are rarer (6 and 1 of seeds 0..150 fail, against 17 and 8 of 0..200 in the
/// table), most likely because a reconcile no longer writes a finalizer on a stale object and
/// fails with 409 Conflict.
async fn cleaning(world: World, how: Cleaner) {
    crate::testing::seed_randomness(world.seed());
    world.fake().register::<ConfigMap>();
    let controller = Controller::with_finalizer(
        Copying {
            how,
            reconciles: world.reconciles(),
        },
        FINALIZER,
    )
    .read_your_writes(how == Cleaner::Correct);
    let factory = Arc::new(Factory::new(world.client("operator")));
    let cluster = Cluster::new(Arc::clone(&factory));
    let bound = controller.bind(&cluster).expect("a valid controller");
    let shutdown = CancellationToken::new();
    let token = shutdown.clone();
    let running = tokio::spawn(async move { bound.run(token.cancelled_owned()).await });

    let api: Api<ConfigMap> = Api::namespaced(world.client("workload"), "ns");
    for step in 0..12 {
        tokio::time::sleep(Duration::from_millis(world.random(0..3000))).await;
        let name = format!("source-{}", world.random(0..SOURCES));
        let stored = world.fake().get::<ConfigMap>("ns", &name).ok().flatten();
        match stored {
            Some(source) if source.metadata.deletion_timestamp.is_some() => {}
            Some(_) if world.chance(0.4) => until_deleted(&api, &name).await,
            Some(_) => {
                let data = json!({ "data": { "step": step.to_string() } });
                let (params, patch) = (PatchParams::default(), Patch::Merge(&data));
                until_written(|| api.patch(&name, &params, &patch)).await;
            }
            None => {
                let source = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        labels: Some([("role".to_owned(), "source".to_owned())].into()),
                        ..ObjectMeta::default()
                    },
                    data: Some([("step".to_owned(), step.to_string())].into()),
                    ..ConfigMap::default()
                };
                let post = PostParams::default();
                until_written(|| api.create(&post, &source)).await;
            }
        }
    }
    world.stop_faults();
    world
        .settle(Duration::from_secs(300), || fixed_point(&world))
        .await;
    shutdown.cancel();
    let stopped = tokio::time::timeout(Duration::from_secs(60), running).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the controller stops cleanly within 60 s: {stopped:?}"
    );
    factory.shutdown().await;
}

#[test]
fn a_correct_cleanup_leaves_no_orphan_and_finishes_on_every_seed() {
    Simulation::new()
        .seeds(0..30)
        .check(|world| cleaning(world, Cleaner::Correct));
}

#[test]
fn a_finalizer_removed_before_the_cleanup_finished_is_found() {
    let failed = Simulation::new()
        .seeds(0..50)
        .find(|world| cleaning(world, Cleaner::Detached))
        .expect("a detached delete that fails leaves an orphaned copy within 50 seeds");
    assert!(
        failed.reasons().iter().any(|r| r.contains("orphan")),
        "{failed}"
    );
}

/// Its race needs the timing of many deliveries: it shrinks to 31 faults, not 20 (the book's
/// table), and takes its whole budget of 200 runs (half a minute) to get there, so it is not
/// run by default.
#[test]
#[ignore = "half a minute: cargo test -p kubeward --all-features --lib -- simulation_cleanup::a_finalizer_removed --ignored"]
fn a_finalizer_removed_before_the_cleanup_finished_shrinks_to_at_most_40_faults() {
    let failed = shrunk(Cleaner::Detached, 0..50)
        .expect("a detached delete that fails leaves an orphaned copy within 50 seeds");
    eprintln!("{}", failed.report());
    assert!(failed.steps() <= 40, "{} steps", failed.steps());
    assert!(
        failed.reasons().iter().any(|r| r.contains("orphan")),
        "{failed}"
    );
}

#[test]
fn a_cleanup_that_treats_not_found_as_failure_is_found() {
    let failed = shrunk(Cleaner::NotFoundFails, 0..50)
        .expect("a cleanup failing on 404 never finishes within 50 seeds");
    eprintln!("{}", failed.report());
    assert!(failed.steps() <= 20, "{} steps", failed.steps());
    assert!(
        failed
            .reasons()
            .iter()
            .any(|r| r.contains("never finished")),
        "{failed}"
    );
}

/// The first failure of a planted bug among `seeds`, shrunk to its fewest faults.
fn shrunk(how: Cleaner, seeds: std::ops::Range<u64>) -> Option<crate::testing::sim::Failed> {
    let simulation = Simulation::new().seeds(seeds);
    let failed = simulation.find(|world| cleaning(world, how))?;
    Some(simulation.shrink(&failed, |world| cleaning(world, how)))
}

/// Prints, for each cleanup, how many of seeds `0..KUBEWARD_SIM_TALLY` fail and the first that
/// does: the numbers in the book's bug table.
#[test]
#[ignore = "a long run for the book's table: KUBEWARD_SIM_TALLY=200 cargo test -p kubeward --lib -- simulation_cleanup::tally --ignored --nocapture"]
fn tally() {
    let n: u64 = std::env::var("KUBEWARD_SIM_TALLY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    for how in [Cleaner::Correct, Cleaner::Detached, Cleaner::NotFoundFails] {
        let simulation = Simulation::new();
        let failing: Vec<u64> = (0..n)
            .filter(|&seed| simulation.run(seed, |world| cleaning(world, how)).is_err())
            .collect();
        eprintln!(
            "{how:?}: {} of {n} fail, first {:?}",
            failing.len(),
            failing.first()
        );
    }
}
