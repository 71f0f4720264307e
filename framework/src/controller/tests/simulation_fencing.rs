//! Read-your-writes under simulation: fenced reads make no duplicate of a `generateName` create
//! where unfenced ones do, and a foreign change that lands between a status write and its echo
//! is always reconciled.
//!
//! Faults here are latency and late watch events only (up to 500 ms per event, per watch),
//! with some watches broken: no failed writes, since a create whose answer is lost cannot be
//! fenced (its name is unknown) and would make duplicates of its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{Expression, Selector};
use kube::{Api, CustomResource, ResourceExt as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::simulation::until_written;
use crate::controller::{Action, Cluster, Context, Controller, Reconciler};
use crate::informer::{CacheScope, Factory};
use crate::metrics::Metrics;
use crate::reconcile::Error;
use crate::testing::sim::{Faults, Simulation, World};

const SOURCES: u64 = 3;

/// Late watch events and slow requests; no write fails.
fn late_watches() -> Faults {
    Faults::none()
        .latency(Duration::from_millis(20))
        .delivery_delay(Duration::from_millis(500))
        .watch_breaks(0.3, Duration::from_secs(20))
}

/// Creates a copy of each source with `generateName` when its fenced cached list shows none.
struct GenerateName;

impl Reconciler<ConfigMap> for GenerateName {
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
        let copy_of: Selector = Expression::Equal("copy-of".into(), name.clone()).into();
        if ctx
            .list::<ConfigMap>(Some("ns"), &copy_of)
            .await?
            .is_empty()
        {
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

/// What a copier's runs made.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Copies {
    /// Copies beyond one per source.
    pub(super) duplicates: u64,
    /// Reconciles held back for the cache to bring in the controller's own writes, as
    /// `kubeward_controller_stale_sync_skips_total` counted them.
    pub(super) held_back: u64,
}

/// One run of `reconciler` (a copier: a copy of each source, made with `generateName`), with
/// read-your-writes on or not, while sources change every few hundred milliseconds.
async fn copies<R: Reconciler<ConfigMap> + 'static>(
    world: World,
    reconciler: R,
    fenced: bool,
) -> Copies {
    world.fake().register::<ConfigMap>();
    let controller = Controller::new(reconciler).read_your_writes(fenced);
    let factory = Arc::new(Factory::new(world.client("operator")));
    let registry = prometheus::Registry::new();
    let metrics = Metrics::new(&registry).expect("a new registry takes every family");
    let cluster = Cluster::new(Arc::clone(&factory)).metrics(metrics);
    let bound = controller.bind(&cluster).expect("a valid controller");
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
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a counter of reconciles holds a small whole number"
    )]
    let held_back = registry
        .gather()
        .iter()
        .filter(|f| f.name() == "kubeward_controller_stale_sync_skips_total")
        .flat_map(|f| f.get_metric().iter())
        .map(|m| m.get_counter().get_value() as u64)
        .sum();
    Copies {
        duplicates: (copies.count() as u64).saturating_sub(sources.count() as u64),
        held_back,
    }
}

/// What the copier `copier` makes, summed over `seeds`, with read-your-writes on or not.
pub(super) fn copies_over<R: Reconciler<ConfigMap> + 'static>(
    seeds: std::ops::Range<u64>,
    fenced: bool,
    copier: fn() -> R,
) -> Copies {
    let (duplicates, held_back) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let simulation = Simulation::new().faults(late_watches()).seeds(seeds);
    simulation.check(|world| {
        let (duplicates, held_back) = (Arc::clone(&duplicates), Arc::clone(&held_back));
        async move {
            let made = copies(world, copier(), fenced).await;
            duplicates.fetch_add(made.duplicates, Ordering::Relaxed);
            held_back.fetch_add(made.held_back, Ordering::Relaxed);
        }
    });
    Copies {
        duplicates: duplicates.load(Ordering::Relaxed),
        held_back: held_back.load(Ordering::Relaxed),
    }
}

#[test]
fn fenced_reads_make_no_duplicate_generate_name_create_where_unfenced_reads_do() {
    let unfenced = copies_over(0..20, false, || GenerateName);
    eprintln!("unfenced over seeds 0..20: {unfenced:?}");
    assert!(
        unfenced.duplicates > 0,
        "late watches made no duplicate without fencing in 20 seeds: the test proves nothing"
    );
    assert_eq!(unfenced.held_back, 0, "unfenced reconciles were held back");
    let fenced = copies_over(0..20, true, || GenerateName);
    eprintln!("fenced over seeds 0..20: {fenced:?}");
    assert_eq!(fenced.duplicates, 0, "fenced reads made duplicates");
    assert!(
        fenced.held_back > 0,
        "no reconcile was counted as held back for the copier's own creates"
    );
}

/// A kind with a spec and a status subresource whose `observedGeneration` says which
/// generation was reconciled.
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "fencing.test.kubeward.dev",
    version = "v1",
    kind = "Web",
    namespaced,
    status = "WebStatus"
)]
struct WebSpec {
    replicas: i32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WebStatus {
    #[serde(default)]
    observed_generation: Option<i64>,
}

/// Writes the status of each Web: its observedGeneration, through `ctx.patch_status`.
struct Observer {
    /// The resourceVersions its status writes returned.
    wrote: Arc<parking_lot::Mutex<Vec<String>>>,
}

impl Reconciler<Web> for Observer {
    type Error = Error;

    async fn reconcile(&self, obj: Arc<Web>, ctx: &Context<Web>) -> Result<Action, Error> {
        let status = obj.status.clone().unwrap_or_default();
        let written = ctx.patch_status(&obj, &status).await?;
        if written.changed() {
            let version = written.object().resource_version().unwrap_or_default();
            self.wrote.lock().push(version);
        }
        Ok(Action::await_change())
    }
}

/// Whether a foreign spec change came between a status write and its echo, and the oracle.
async fn foreign_change_after_status_write(world: World, interleaved: Arc<AtomicU64>) {
    world.fake().register_crd::<Web>();
    let wrote = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let controller = Controller::new(Observer {
        wrote: Arc::clone(&wrote),
    });
    let factory = Arc::new(Factory::new(world.client("operator")));
    let bound = (controller.bind(&Cluster::new(Arc::clone(&factory)))).expect("a valid controller");
    let store = factory.watched::<Web>(&CacheScope::default()).store();
    let shutdown = CancellationToken::new();
    let token = shutdown.clone();
    let running = tokio::spawn(async move { bound.run(token.cancelled_owned()).await });

    let api: Api<Web> = Api::namespaced(world.client("workload"), "ns");
    let web = Web::new("web", WebSpec::default());
    let post = PostParams::default();
    until_written(|| api.create(&post, &web)).await;
    for replicas in 1..4 {
        tokio::time::sleep(Duration::from_millis(world.random(0..300))).await;
        let spec = json!({ "spec": { "replicas": replicas } });
        let (params, patch) = (PatchParams::default(), Patch::Merge(&spec));
        let changed = api
            .patch("web", &params, &patch)
            .await
            .expect("no write fails");
        // Between a status write and its echo: the write is done, the store has not seen it.
        let seen = store
            .newest_resource_version(Some("ns"))
            .unwrap_or_default();
        let pending = wrote.lock().iter().any(|v| later(v, &seen));
        if pending
            && changed
                .resource_version()
                .is_some_and(|c| wrote.lock().iter().all(|v| later(&c, v)))
        {
            interleaved.fetch_add(1, Ordering::Relaxed);
            world.note("a foreign spec change landed between a status write and its echo");
        }
    }
    let reconciled = || {
        let web = world.fake().get::<Web>("ns", "web").ok().flatten();
        let web = web.ok_or("web is gone")?;
        let observed = web.status.and_then(|s| s.observed_generation);
        if observed == web.metadata.generation {
            Ok(())
        } else {
            Err(format!(
                "generation {:?} was never reconciled (observed {observed:?})",
                web.metadata.generation
            ))
        }
    };
    world.settle(Duration::from_secs(60), reconciled).await;
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(60), running).await;
    factory.shutdown().await;
}

/// Whether resourceVersion `a` is later than `b` (both integers from the fake).
fn later(a: &str, b: &str) -> bool {
    let parse = |v: &str| v.parse::<u64>().unwrap_or_default();
    parse(a) > parse(b)
}

/// Runs the foreign-change oracle over `seeds`; returns how many foreign changes landed between
/// a status write and its echo.
fn foreign_changes_over(seeds: std::ops::Range<u64>) -> u64 {
    let interleaved = Arc::new(AtomicU64::new(0));
    Simulation::new()
        .faults(late_watches())
        .seeds(seeds)
        .check(|world| foreign_change_after_status_write(world, Arc::clone(&interleaved)));
    interleaved.load(Ordering::Relaxed)
}

#[test]
fn a_foreign_change_between_a_status_write_and_its_echo_is_always_reconciled() {
    let interleaved = foreign_changes_over(0..300);
    eprintln!("{interleaved} foreign changes over seeds 0..300 came between a write and its echo");
    assert!(
        interleaved > 20,
        "only {interleaved} foreign changes in 300 seeds came between a write and its echo"
    );
}

/// The same over 10,000 seeds (`KUBEWARD_SIM_TALLY` to change), for the book.
#[test]
#[ignore = "a long run: KUBEWARD_SIM_TALLY=10000 cargo test -p kubeward --lib -- simulation_fencing::tally --ignored --nocapture"]
fn tally() {
    let n: u64 = std::env::var("KUBEWARD_SIM_TALLY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let interleaved = foreign_changes_over(0..n);
    eprintln!(
        "{n} seeds: every foreign change reconciled; {interleaved} landed between a status write and its echo"
    );
    for fenced in [false, true] {
        let seeds = n.min(200);
        eprintln!(
            "generateName copier, fenced {fenced}: {} duplicates over {seeds} seeds",
            copies_over(0..seeds, fenced, || GenerateName).duplicates
        );
    }
}
