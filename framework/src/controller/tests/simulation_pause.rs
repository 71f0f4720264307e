//! Paused objects under simulation: a paused source is never reconciled, its copy never shows
//! what changed while it was paused, and once resumed it is reconciled even though the
//! controller's predicate passes data changes only.
//!
//! The workload pauses, resumes and updates four source ConfigMaps at seeded moments while the
//! seed's faults run; then it resumes three and leaves the fourth paused with data written after
//! its pause. Faults stop: the three must reach their fixed point (a copy with their data) and
//! the fourth's copy must never hold the data written while it was paused, through a quiet pass;
//! resumed last, it must reach its fixed point too.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Resource as _, ResourceExt as _};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::simulation::{copy_by_name, until_written};
use crate::controller::Reconciler;
use crate::controller::pause::is_paused;
use crate::controller::{Action, Cluster, Context, Controller, PAUSED_ANNOTATION, Predicate};
use crate::informer::Factory;
use crate::testing::sim::{Reconciles, Simulation, World};

const SOURCES: u64 = 4;
/// The data the last source gets after its final pause.
const AFTER_PAUSE: &str = "written-while-paused";

/// The correct copier, with the oracle that it never gets a paused source.
struct Copying {
    world: World,
    reconciles: Reconciles,
}

impl Reconciler<ConfigMap> for Copying {
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
        let _reconciling = self.reconciles.enter(name.clone());
        if is_paused(source.meta()) {
            self.world
                .violation(format!("{name} was reconciled while paused"));
        }
        let api: Api<ConfigMap> = Api::namespaced(ctx.client(), "ns");
        copy_by_name(&api, &source, false).await?;
        Ok(Action::await_change())
    }
}

/// The copy of `source` as stored, and the source's data: `Err` until they agree.
fn copied(world: &World, source: &str) -> Result<(), String> {
    let stored = |name: &str| {
        world
            .fake()
            .get::<ConfigMap>("ns", name)
            .ok()
            .flatten()
            .and_then(|cm| cm.data)
    };
    let (data, copy) = (stored(source), stored(&format!("{source}-copy")));
    if copy.is_some() && copy == data {
        Ok(())
    } else {
        Err(format!("the copy of {source} holds {copy:?}, not {data:?}"))
    }
}

/// Whether the last source's copy holds data written while it was paused.
fn leaked(world: &World) -> bool {
    let copy = world
        .fake()
        .get::<ConfigMap>("ns", &format!("source-{}-copy", SOURCES - 1))
        .ok()
        .flatten();
    copy.and_then(|cm| cm.data)
        .is_some_and(|data| data.get("step").map(String::as_str) == Some(AFTER_PAUSE))
}

/// Pauses (or, with `false`, resumes) `name` with `api`.
async fn pause(api: &Api<ConfigMap>, name: &str, paused: bool) {
    let value = paused.then_some("true");
    let patch = json!({ "metadata": { "annotations": { PAUSED_ANNOTATION: value } } });
    let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
    until_written(|| api.patch(name, &params, &patch)).await;
}

/// Sets `name`'s data to `step` with `api`.
async fn update(api: &Api<ConfigMap>, name: &str, step: &str) {
    let patch = json!({ "data": { "step": step } });
    let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
    until_written(|| api.patch(name, &params, &patch)).await;
}

async fn pausing(world: World) {
    crate::testing::seed_randomness(world.seed());
    world.fake().register::<ConfigMap>();
    let copier = Copying {
        world: world.clone(),
        reconciles: world.reconciles(),
    };
    // Data changes only: pausing and resuming get through by themselves.
    let controller = Controller::new(copier)
        .predicate(Predicate::new(|old: &ConfigMap, new| old.data != new.data));
    let factory = Arc::new(Factory::new(world.client("operator")));
    let cluster = Cluster::new(Arc::clone(&factory));
    let bound = controller.bind(&cluster).expect("a valid controller");
    let shutdown = CancellationToken::new();
    let token = shutdown.clone();
    let running = tokio::spawn(async move { bound.run(token.cancelled_owned()).await });

    let api: Api<ConfigMap> = Api::namespaced(world.client("workload"), "ns");
    for n in 0..SOURCES {
        let source = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("source-{n}")),
                labels: Some([("role".to_owned(), "source".to_owned())].into()),
                ..ObjectMeta::default()
            },
            data: Some([("step".to_owned(), "created".to_owned())].into()),
            ..ConfigMap::default()
        };
        let post = PostParams::default();
        until_written(|| api.create(&post, &source)).await;
    }
    for step in 0..16 {
        tokio::time::sleep(Duration::from_millis(world.random(0..3000))).await;
        let name = format!("source-{}", world.random(0..SOURCES));
        match world.random(0..3) {
            0 => pause(&api, &name, true).await,
            1 => pause(&api, &name, false).await,
            _ => update(&api, &name, &step.to_string()).await,
        }
    }
    let last = format!("source-{}", SOURCES - 1);
    for n in 0..SOURCES - 1 {
        pause(&api, &format!("source-{n}"), false).await;
    }
    pause(&api, &last, true).await;
    update(&api, &last, AFTER_PAUSE).await;

    world.stop_faults();
    let resumed = world
        .settle(Duration::from_secs(300), || {
            (0..SOURCES - 1).try_for_each(|n| copied(&world, &format!("source-{n}")))
        })
        .await;
    if resumed {
        tokio::time::sleep(Duration::from_secs(30)).await;
        if leaked(&world) {
            world.violation(format!(
                "{last}'s copy holds data written while it was paused"
            ));
        }
        pause(&api, &last, false).await;
        world
            .settle(Duration::from_secs(300), || copied(&world, &last))
            .await;
    }
    shutdown.cancel();
    let stopped = tokio::time::timeout(Duration::from_secs(60), running).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the controller stops cleanly within 60 s: {stopped:?}"
    );
    factory.shutdown().await;
}

#[test]
fn a_paused_object_is_never_reconciled_and_a_resumed_one_always_is_on_every_seed() {
    let runs = Simulation::new().seeds(0..30).check(pausing);
    let injected = runs
        .iter()
        .filter(|run| run.log().contains("injected"))
        .count();
    assert!(
        injected > 20,
        "faults were injected in {injected} of 30 runs only"
    );
}
