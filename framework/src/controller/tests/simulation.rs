//! Controllers under simulation: a correct reconciler converges on every seed, and planted
//! reconciler bugs are found within a bounded number of seeds.
//!
//! The workload: four source ConfigMaps (label `role=source`) created and updated at seeded
//! moments while the seed's faults run; each reconciler keeps one copy of each source's data
//! in another ConfigMap. Then faults stop, the copies must reach the fixed point (exactly one
//! copy per source, with its data) within five virtual minutes, and a pass that reconciles
//! every source again must write nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cache::ObjectKey;
use crate::controller::{Action, Cluster, Context, Controller, Reconciler};
use crate::informer::Factory;
use crate::testing::sim::{Reconciles, Simulation, World};

const SOURCES: u64 = 4;

/// How a copier writes its copies: correctly, or with one of the bugs the simulation must find.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Copier {
    /// Reads the copy `<source>-copy` from the API server; creates it when missing, replaces it
    /// (resourceVersion precondition) when its data differs.
    Correct,
    /// As `Correct`, and bumps a counter annotation on the copy at every reconcile: a
    /// non-idempotent step.
    Counter,
    /// Looks the copy up in its cache (label `copy-of`) and creates one with `generateName`
    /// when the cache shows none: a late watch or a lost answer duplicates it.
    GenerateName,
    /// As `Correct`, but a failed read or write is logged and the reconcile returns
    /// `await_change` all the same: the error is swallowed, so nothing retries it.
    Swallow,
    /// As `Correct`, then marks the copy's status (annotation `copied-step`) by writing back the
    /// copy its cache holds with an unconditional replace: a cache older than the write just made
    /// undoes it.
    StaleStatus,
}

/// A copier with the oracle every reconcile enters.
struct Copying {
    how: Copier,
    reconciles: Reconciles,
}

/// What a copier's reconcile fails with (then retried by the queue).
type Failure = kube::Error;

impl Reconciler<ConfigMap> for Copying {
    type Error = Failure;

    async fn reconcile(
        &self,
        source: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> kube::Result<Action> {
        if source.labels().get("role").map(String::as_str) != Some("source") {
            return Ok(Action::await_change());
        }
        let _reconciling = self.reconciles.enter(format!(
            "{}/{}",
            source.namespace().unwrap_or_default(),
            source.name_any()
        ));
        let api: Api<ConfigMap> = Api::namespaced(ctx.client(), "ns");
        match self.how {
            Copier::Correct | Copier::Counter => {
                copy_by_name(&api, &source, self.how == Copier::Counter).await?;
            }
            Copier::GenerateName => copy_from_cache(&api, &source, ctx).await?,
            Copier::Swallow => {
                if let Err(error) = copy_by_name(&api, &source, false).await {
                    tracing::debug!(%error, "copy failed; waiting for the next change");
                }
            }
            Copier::StaleStatus => {
                copy_by_name(&api, &source, false).await?;
                status_from_cache(&api, &source, ctx).await?;
            }
        }
        Ok(Action::await_change())
    }
}

/// The copy `<source>-copy`, read from the API server.
pub(super) async fn copy_by_name(
    api: &Api<ConfigMap>,
    source: &ConfigMap,
    count: bool,
) -> kube::Result<()> {
    let name = format!("{}-copy", source.name_any());
    match api.get_opt(&name).await? {
        None => {
            let copy = ConfigMap {
                metadata: copy_meta(source, Some(name)),
                data: source.data.clone(),
                ..ConfigMap::default()
            };
            api.create(&PostParams::default(), &copy).await?;
        }
        Some(mut copy) => {
            if copy.data != source.data {
                copy.data.clone_from(&source.data);
                copy = api.replace(&name, &PostParams::default(), &copy).await?;
            }
            if count {
                let seen: u64 = copy
                    .annotations()
                    .get("reconciles")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_default();
                let bump = json!({ "metadata": { "annotations": { "reconciles": (seen + 1).to_string() } } });
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&bump))
                    .await?;
            }
        }
    }
    Ok(())
}

/// The copy found in the controller's cache by its `copy-of` label, created with
/// `generateName` when the cache shows none.
async fn copy_from_cache(
    api: &Api<ConfigMap>,
    source: &ConfigMap,
    ctx: &Context<ConfigMap>,
) -> kube::Result<()> {
    let name = source.name_any();
    let cached = ctx
        .store()
        .list()
        .into_iter()
        .find(|cm| cm.labels().get("copy-of") == Some(&name));
    match cached {
        None => {
            let mut metadata = copy_meta(source, None);
            metadata.generate_name = Some(format!("{name}-"));
            let copy = ConfigMap {
                metadata,
                data: source.data.clone(),
                ..ConfigMap::default()
            };
            api.create(&PostParams::default(), &copy).await?;
        }
        Some(copy) if copy.data != source.data => {
            let mut copy = (*copy).clone();
            copy.data.clone_from(&source.data);
            api.replace(&copy.name_any(), &PostParams::default(), &copy)
                .await?;
        }
        Some(_) => {}
    }
    Ok(())
}

/// Sets the status annotation `copied-step` on the copy as the controller's cache shows it, and
/// writes that whole copy back without a resourceVersion precondition.
async fn status_from_cache(
    api: &Api<ConfigMap>,
    source: &ConfigMap,
    ctx: &Context<ConfigMap>,
) -> kube::Result<()> {
    let name = format!("{}-copy", source.name_any());
    let Some(cached) = ctx.store().get(&ObjectKey::new(Some("ns"), &name)) else {
        return Ok(());
    };
    let step = source
        .data
        .as_ref()
        .and_then(|data| data.get("step"))
        .cloned()
        .unwrap_or_default();
    if cached.annotations().get("copied-step") == Some(&step) {
        return Ok(());
    }
    let mut copy = (*cached).clone();
    copy.annotations_mut()
        .insert("copied-step".to_owned(), step);
    copy.metadata.resource_version = None;
    api.replace(&name, &PostParams::default(), &copy).await?;
    Ok(())
}

fn copy_meta(source: &ConfigMap, name: Option<String>) -> ObjectMeta {
    ObjectMeta {
        name,
        labels: Some([("copy-of".to_owned(), source.name_any())].into()),
        ..ObjectMeta::default()
    }
}

/// Whether every source has exactly one copy, with its data.
fn fixed_point(world: &World) -> Result<(), String> {
    let stored = world
        .fake()
        .list::<ConfigMap>()
        .map_err(|error| error.to_string())?;
    let sources: BTreeMap<String, &ConfigMap> = stored
        .iter()
        .filter(|cm| cm.labels().get("role").map(String::as_str) == Some("source"))
        .map(|cm| (cm.name_any(), cm))
        .collect();
    for (name, source) in &sources {
        let copies: Vec<&ConfigMap> = stored
            .iter()
            .filter(|cm| cm.labels().get("copy-of") == Some(name))
            .collect();
        match copies.as_slice() {
            [copy] if copy.data == source.data => {}
            [copy] => return Err(format!("the copy of {name} has stale data {:?}", copy.data)),
            [] => return Err(format!("{name} has no copy")),
            many => return Err(format!("{name} has {} copies", many.len())),
        }
    }
    Ok(())
}

/// Writes with `api` until a write is not refused by a fault; a create whose answer was lost
/// and so answers `AlreadyExists` when retried counts as done.
pub(super) async fn until_written<F, Fut, T>(mut write: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = kube::Result<T>>,
{
    loop {
        match write().await {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.reason == "AlreadyExists" => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// One run: the copier under the seed's faults, then the fixed point and the quiet pass.
// ANCHOR: run
async fn copying(world: World, how: Copier) {
    crate::testing::seed_randomness(world.seed());
    world.fake().register::<ConfigMap>();
    let (keys, reconcile_on) = mpsc::unbounded_channel();
    let controller = Controller::new(Copying {
        how,
        reconciles: world.reconciles(),
    })
    .reconcile_on(tokio_stream(reconcile_on));
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
        let data = json!({ "data": { "step": step.to_string() } });
        let source = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some([("role".to_owned(), "source".to_owned())].into()),
                ..ObjectMeta::default()
            },
            data: Some([("step".to_owned(), step.to_string())].into()),
            ..ConfigMap::default()
        };
        let (post, patch_params, patch) = (
            PostParams::default(),
            PatchParams::default(),
            Patch::Merge(&data),
        );
        if world
            .fake()
            .get::<ConfigMap>("ns", &name)
            .ok()
            .flatten()
            .is_some()
        {
            until_written(|| api.patch(&name, &patch_params, &patch)).await;
        } else {
            until_written(|| api.create(&post, &source)).await;
        }
    }
    // ANCHOR_END: run
    // ANCHOR: oracles
    world.stop_faults();
    if world
        .settle(Duration::from_secs(300), || fixed_point(&world))
        .await
    {
        for n in 0..SOURCES {
            // The receiver lives as long as the controller.
            let _ = keys.send(ObjectKey::new(Some("ns"), &format!("source-{n}")));
        }
        world.quiet(Duration::from_secs(30)).await;
        if let Err(why) = fixed_point(&world) {
            world.violation(format!("after the quiet pass, {why}"));
        }
    }
    // ANCHOR_END: oracles
    shutdown.cancel();
    let stopped = tokio::time::timeout(Duration::from_secs(60), running).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the controller stops cleanly within 60 s: {stopped:?}"
    );
    factory.shutdown().await;
}

/// A stream of the keys sent on `keys`.
fn tokio_stream(
    mut keys: mpsc::UnboundedReceiver<ObjectKey>,
) -> impl futures::Stream<Item = ObjectKey> + Send + 'static {
    futures::stream::poll_fn(move |cx| keys.poll_recv(cx)).boxed()
}

// ANCHOR: check
#[test]
fn a_correct_copier_converges_and_rests_on_every_seed() {
    let runs = Simulation::new()
        .seeds(0..30)
        .check(|world| copying(world, Copier::Correct));
    let injected = runs
        .iter()
        .filter(|run| run.log().contains("injected"))
        .count();
    assert!(
        injected > 20,
        "faults were injected in {injected} of 30 runs only"
    );
}
// ANCHOR_END: check

#[test]
fn a_copier_run_is_replayed_byte_for_byte_from_its_seed() {
    let simulation = Simulation::new().seeds(0..10);
    let first = simulation.check(|world| copying(world, Copier::Correct));
    let second = simulation.check(|world| copying(world, Copier::Correct));
    for (a, b) in first.iter().zip(&second) {
        let differ = a.log().lines().zip(b.log().lines()).find(|(x, y)| x != y);
        assert!(
            a.log() == b.log(),
            "seed {} gave two logs; first difference: {differ:?}",
            a.seed()
        );
    }
}

#[test]
fn a_counter_bumped_at_every_reconcile_is_found() {
    let failed = shrunk(Copier::Counter, 0..10)
        .expect("the quiet pass finds the non-idempotent counter within 10 seeds");
    assert_eq!(failed.steps(), 0, "it needs no fault");
    eprintln!("{}", failed.report());
    assert!(
        failed.reasons().iter().any(|r| r.contains("quiet pass")),
        "{failed}"
    );
}

// ANCHOR: planted
#[test]
fn a_create_with_generate_name_from_a_stale_cache_is_found() {
    let failed =
        shrunk(Copier::GenerateName, 0..50).expect("late watches duplicate a copy within 50 seeds");
    assert!(failed.steps() <= 20, "{} steps", failed.steps());
    eprintln!("{}", failed.report());
    assert!(
        failed.reasons().iter().any(|r| r.contains("copies")),
        "{failed}"
    );
}
// ANCHOR_END: planted

#[test]
fn an_error_swallowed_so_nothing_retries_is_found() {
    let failed = shrunk(Copier::Swallow, 0..20)
        .expect("a failed write that is never retried leaves a stale copy within 20 seeds");
    assert!(failed.steps() <= 20, "{} steps", failed.steps());
    eprintln!("{}", failed.report());
    assert!(
        failed.reasons().iter().any(|r| r.contains("fixed point")),
        "{failed}"
    );
}

#[test]
fn a_status_written_from_a_stale_cached_copy_is_found() {
    let failed = shrunk(Copier::StaleStatus, 0..20)
        .expect("a stale cached copy written back undoes newer data within 20 seeds");
    assert_eq!(failed.steps(), 0, "it needs no fault");
    eprintln!("{}", failed.report());
    assert!(
        failed.reasons().iter().any(|r| r.contains("stale data")),
        "{failed}"
    );
}

// ANCHOR: shrunk
/// The first failure of a planted bug among `seeds`, shrunk to its fewest faults.
fn shrunk(how: Copier, seeds: std::ops::Range<u64>) -> Option<crate::testing::sim::Failed> {
    let simulation = Simulation::new().seeds(seeds);
    let failed = simulation.find(|world| copying(world, how))?;
    Some(simulation.shrink(&failed, |world| copying(world, how)))
}
// ANCHOR_END: shrunk

/// Prints, for each planted bug, how many of seeds `0..KUBEWARD_SIM_TALLY` fail and the first
/// that does: the numbers in the book's bug table.
#[test]
#[ignore = "a long run for the book's table: KUBEWARD_SIM_TALLY=200 cargo test -p kubeward --lib -- tally --ignored --nocapture"]
fn tally() {
    let n: u64 = std::env::var("KUBEWARD_SIM_TALLY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    for how in [
        Copier::Correct,
        Copier::Counter,
        Copier::GenerateName,
        Copier::Swallow,
        Copier::StaleStatus,
    ] {
        let simulation = Simulation::new();
        let failing: Vec<u64> = (0..n)
            .filter(|&seed| simulation.run(seed, |world| copying(world, how)).is_err())
            .collect();
        eprintln!(
            "{how:?}: {} of {n} fail, first {:?}",
            failing.len(),
            failing.first()
        );
    }
}
