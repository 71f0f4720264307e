//! Controllers on the real control plane: the example operator end to end, and reconcile semantics.

use crate::fixtures::watching;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kubeward::controller::{self, Action, Context, Controller, ErrorAction, Reconciler};
use kubeward::manager::Manager;
use kubeward::queue::rate_limiter::ExponentialBackoff;
use kubeward::testing::{ControlPlane, FakeApiServer, events_about, install_definition, wait_for};
use kubeward_examples::by_hand::{FINALIZER, controller_without_macro, generated_name};
use kubeward_examples::configmap_generator::{ConfigMapGenerator, ConfigMapGeneratorSpec};
use kubeward_tests::metric_sum;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod dynamic;
mod expectations;
mod external;
mod failure_loop;
mod failures;
mod per_change;
mod read_your_writes;
mod without_manager;

/// Starts `manager` in the background; returns its shutdown token and task.
fn start(manager: Manager) -> (CancellationToken, JoinHandle<kubeward::manager::Result<()>>) {
    let token = manager.shutdown_token();
    (token, tokio::spawn(manager.run()))
}

async fn stop(
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
) -> anyhow::Result<()> {
    token.cancel();
    tokio::time::timeout(Duration::from_secs(30), run)
        .await??
        .map_err(Into::into)
}

fn generator(name: &str, content: &str) -> ConfigMapGenerator {
    let mut g = ConfigMapGenerator::new(
        name,
        ConfigMapGeneratorSpec {
            content: content.into(),
        },
    );
    g.metadata = ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    };
    g
}

fn content(cm: &ConfigMap) -> Option<&str> {
    cm.data.as_ref()?.get("content").map(String::as_str)
}

async fn create_generators(generators: &Api<ConfigMapGenerator>, n: usize) -> anyhow::Result<()> {
    futures::stream::iter(0..n)
        .map(|i| {
            let generators = generators.clone();
            async move {
                let g = generator(&format!("gen-{i}"), &format!("v{i}"));
                generators.create(&PostParams::default(), &g).await
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

async fn wait_generated(configmaps: &Api<ConfigMap>, n: usize) -> anyhow::Result<()> {
    let what = format!("{n} generated ConfigMaps with their generator's content");
    Ok(wait_for(Duration::from_secs(120), &what, || async {
        let cms = configmaps.list(&ListParams::default()).await.ok()?;
        let by_name: HashMap<String, ConfigMap> = cms
            .items
            .into_iter()
            .map(|cm| (cm.name_any(), cm))
            .collect();
        (0..n)
            .all(|i| {
                by_name.get(&format!("gen-{i}-generated")).and_then(content)
                    == Some(&format!("v{i}"))
            })
            .then_some(())
    })
    .await?)
}

async fn wait_ready(generators: &Api<ConfigMapGenerator>) -> anyhow::Result<()> {
    Ok(wait_for(
        Duration::from_secs(60),
        "every generator Ready with its finalizer",
        || async {
            let all = generators.list(&ListParams::default()).await.ok()?;
            all.items
                .iter()
                .all(|g| {
                    let status = g.status.as_ref();
                    let ready = status.is_some_and(|s| s.conditions.is_true("Ready"));
                    ready && g.finalizers().iter().any(|f| f == FINALIZER)
                })
                .then_some(())
        },
    )
    .await?)
}

/// The example operator's whole life cycle, on whichever API server `client` talks to.
async fn operator_checks(client: Client, ns: &str) -> anyhow::Result<()> {
    let ns = ns.to_owned();
    let manager = Manager::new(
        client.clone(),
        watching(ns.clone()).max_concurrent_reconciles(4),
    )?;
    manager.add(controller_without_macro())?;
    let (token, run) = start(manager);

    let generators: Api<ConfigMapGenerator> = Api::namespaced(client.clone(), &ns);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    create_generators(&generators, 200).await?;
    wait_generated(&configmaps, 200).await?;
    wait_ready(&generators).await?;

    // A spec change is reconciled.
    let change = serde_json::json!({ "spec": { "content": "changed" } });
    generators
        .patch("gen-0", &PatchParams::default(), &Patch::Merge(&change))
        .await?;
    wait_for(
        Duration::from_secs(30),
        "gen-0's ConfigMap to follow the spec change",
        || async {
            let cm = configmaps.get("gen-0-generated").await.ok()?;
            (content(&cm) == Some("changed")).then_some(())
        },
    )
    .await?;

    // A ConfigMap edited by hand is repaired, through the owner reference.
    let tamper = serde_json::json!({ "data": { "content": "tampered" } });
    configmaps
        .patch(
            "gen-1-generated",
            &PatchParams::default(),
            &Patch::Merge(&tamper),
        )
        .await?;
    wait_for(
        Duration::from_secs(30),
        "gen-1's ConfigMap to be repaired",
        || async {
            let cm = configmaps.get("gen-1-generated").await.ok()?;
            (content(&cm) == Some("v1")).then_some(())
        },
    )
    .await?;

    // Deletion runs cleanup, removes the finalizer, and the generator goes away.
    let doomed = generators.get("gen-2").await?;
    generators.delete("gen-2", &DeleteParams::default()).await?;
    wait_for(
        Duration::from_secs(30),
        "gen-2 and its ConfigMap to be gone",
        || async {
            let generator_gone = generators.get_opt("gen-2").await.ok()?.is_none();
            let cm_gone = configmaps
                .get_opt(&generated_name(&doomed))
                .await
                .ok()?
                .is_none();
            (generator_gone && cm_gone).then_some(())
        },
    )
    .await?;

    // Events about the deleted generator: one for its ConfigMap, one for the cleanup's delete. They are
    // written in the background, so the cleanup's may land just after the generator is gone.
    wait_for(
        Duration::from_secs(30),
        "a Generated and a Deleted Event about gen-2",
        || async {
            let reasons: Vec<String> = events_about(client.clone(), &doomed)
                .await
                .ok()?
                .into_iter()
                .filter_map(|e| e.reason)
                .collect();
            (reasons.contains(&"Generated".to_owned()) && reasons.contains(&"Deleted".to_owned()))
                .then_some(())
        },
    )
    .await?;
    let untouched = generators.get("gen-3").await?;
    let reasons: Vec<String> = events_about(client.clone(), &untouched)
        .await?
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    // `Created` is the kit's Event for the ConfigMap (`owned_events`), `Generated` the reconciler's.
    assert!(
        reasons.contains(&"Generated".to_owned())
            && reasons.iter().all(|r| r == "Generated" || r == "Created"),
        "gen-3 was generated and never deleted: {reasons:?}"
    );

    stop(token, run).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_operator_generates_repairs_and_cleans_up_two_hundred_configmaps_on_the_control_plane()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("operator").await?;
    let started = tokio::time::Instant::now();
    operator_checks(cp.client(), &ns).await?;
    eprintln!(
        "operator checks on the control plane: {:?}",
        started.elapsed()
    );
    Ok(())
}

// ANCHOR: fake
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_operator_passes_the_same_checks_on_the_fake_api_server() -> anyhow::Result<()>
{
    let fake = FakeApiServer::new();
    fake.register_crd::<ConfigMapGenerator>();
    fake.register::<ConfigMap>();
    fake.register::<Event>();
    let started = tokio::time::Instant::now();
    operator_checks(fake.client(), "operator").await?;
    eprintln!(
        "operator checks on the fake API server: {:?}",
        started.elapsed()
    );
    Ok(())
}
// ANCHOR_END: fake

/// Records overlapping reconciles of one key, and the last resourceVersion reconciled per key.
#[derive(Default)]
struct Instrumented {
    in_flight: Mutex<HashSet<String>>,
    overlaps: Mutex<Vec<String>>,
    reconciled: Mutex<HashMap<String, String>>,
    calls: std::sync::atomic::AtomicUsize,
}

#[derive(Clone, Default)]
struct Recording(Arc<Instrumented>);

impl Reconciler<ConfigMap> for Recording {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _ctx: &Context<ConfigMap>,
    ) -> Result<Action, kube::Error> {
        let name = cm.name_any();
        if !self.0.in_flight.lock().insert(name.clone()) {
            self.0.overlaps.lock().push(name.clone());
        }
        self.0
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(5)).await;
        self.0
            .reconciled
            .lock()
            .insert(name.clone(), cm.resource_version().unwrap_or_default());
        self.0.in_flight.lock().remove(&name);
        Ok(Action::await_change())
    }
}

async fn create_configmaps(
    api: &Api<ConfigMap>,
    names: impl Iterator<Item = String>,
) -> anyhow::Result<()> {
    for name in names {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("n".to_owned(), "0".to_owned())])),
            ..ConfigMap::default()
        };
        api.create(&PostParams::default(), &cm).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_never_reconciled_twice_at_once_under_a_flood_of_updates() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("flood").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_configmaps(&api, (0..20).map(|i| format!("cm-{i}"))).await?;

    let recording = Recording::default();
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    manager.add(
        Controller::new(recording.clone())
            .name("flood")
            .concurrency(8),
    )?;
    let (token, run) = start(manager);

    for round in 1..=20 {
        futures::stream::iter(0..20)
            .map(|i| {
                let api = api.clone();
                let patch = serde_json::json!({ "data": { "n": round.to_string() } });
                async move {
                    api.patch(
                        &format!("cm-{i}"),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await
                }
            })
            .buffer_unordered(20)
            .try_collect::<Vec<_>>()
            .await?;
    }
    let latest = latest_versions(&api).await?;
    wait_for(
        Duration::from_secs(60),
        "every ConfigMap's last update to be reconciled",
        || async {
            let reconciled = recording.0.reconciled.lock();
            latest
                .iter()
                .all(|(name, rv)| reconciled.get(name) == Some(rv))
                .then_some(())
        },
    )
    .await?;
    let overlaps = recording.0.overlaps.lock().clone();
    assert!(
        overlaps.is_empty(),
        "keys reconciled concurrently: {overlaps:?}"
    );
    let calls = recording.0.calls.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        calls >= 20,
        "every ConfigMap was reconciled at least once (calls: {calls})"
    );
    stop(token, run).await
}

async fn latest_versions(api: &Api<ConfigMap>) -> anyhow::Result<HashMap<String, String>> {
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|cm| cm.name_any().starts_with("cm-"))
        .map(|cm| (cm.name_any(), cm.resource_version().unwrap_or_default()))
        .collect())
}

/// A reconciler that fails, fails terminally or panics, depending on the object's name.
#[derive(Clone, Default)]
struct Troubled {
    attempts: Arc<Mutex<HashMap<String, Vec<tokio::time::Instant>>>>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Trouble(&'static str);

// ANCHOR: error_policy
impl Reconciler<ConfigMap> for Troubled {
    type Error = Trouble;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _ctx: &Context<ConfigMap>,
    ) -> Result<Action, Trouble> {
        let name = cm.name_any();
        let attempt = {
            let mut attempts = self.attempts.lock();
            let list = attempts.entry(name.clone()).or_default();
            list.push(tokio::time::Instant::now());
            list.len()
        };
        match name.as_str() {
            "flaky" if attempt <= 4 => Err(Trouble("not yet")),
            "terminal" => Err(Trouble("cannot ever work")),
            "panicky" if attempt <= 2 => panic!("reconcile bug, attempt {attempt}"),
            _ => Ok(Action::await_change()),
        }
    }

    fn error_policy(
        &self,
        _cm: &ConfigMap,
        error: &controller::Error<Trouble>,
        _ctx: &Context<ConfigMap>,
    ) -> ErrorAction {
        match error {
            // The reconciler's own error: it knows which ones are hopeless.
            controller::Error::Reconcile(Trouble("cannot ever work")) => ErrorAction::Terminal,
            // Anything else (a timeout, a finalizer write): what the controller does by default.
            _ => error.default_action(),
        }
    }
}
// ANCHOR_END: error_policy

fn counter(manager_registry: &prometheus::Registry, family: &str, controller: &str) -> f64 {
    metric_sum(manager_registry, family, ("controller", controller), |m| {
        m.get_counter().get_value()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_back_off_terminal_errors_stop_and_panics_are_retried() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("trouble").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_configmaps(
        &api,
        ["flaky", "terminal", "panicky"]
            .into_iter()
            .map(String::from),
    )
    .await?;

    let troubled = Troubled::default();
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    let base = Duration::from_millis(50);
    manager.add(
        Controller::new(troubled.clone())
            .name("trouble")
            .concurrency(3)
            .rate_limiter(ExponentialBackoff::new(base, Duration::from_secs(10))),
    )?;
    let registry = manager.registry().clone();
    let (token, run) = start(manager);

    wait_for(
        Duration::from_secs(30),
        "flaky to succeed on its fifth attempt and panicky on its third",
        || async {
            let attempts = troubled.attempts.lock();
            let flaky = attempts.get("flaky").map_or(0, Vec::len);
            let panicky = attempts.get("panicky").map_or(0, Vec::len);
            (flaky >= 5 && panicky >= 3).then_some(())
        },
    )
    .await?;
    let attempts = troubled.attempts.lock().clone();
    let flaky = &attempts["flaky"];
    // Retries wait 50, 100, 200, 400 ms: each gap at least its backoff, and growing.
    for (i, pair) in flaky.windows(2).take(4).enumerate() {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= base * 2_u32.pow(u32::try_from(i)?),
            "retry {i} came after {gap:?}"
        );
    }
    assert!(
        flaky[4] - flaky[3] > flaky[1] - flaky[0],
        "backoff did not grow: {flaky:?}"
    );
    assert_eq!(
        attempts["terminal"].len(),
        1,
        "a terminal error must not be retried"
    );
    assert!(!run.is_finished(), "the manager keeps running after panics");
    assert!(
        (counter(
            &registry,
            "controller_runtime_reconcile_panics_total",
            "trouble"
        ) - 2.0)
            .abs()
            < f64::EPSILON
    );
    assert!(
        (counter(
            &registry,
            "controller_runtime_terminal_reconcile_errors_total",
            "trouble"
        ) - 1.0)
            .abs()
            < f64::EPSILON
    );
    stop(token, run).await
}
