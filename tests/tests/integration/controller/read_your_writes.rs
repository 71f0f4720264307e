//! Read-your-writes on the real control plane: with watch events 250 ms or 1 s late and writes
//! on time, a reconciler that creates a copy with `generateName` when its cached list shows none
//! makes no duplicate with fenced reads, and duplicates without them; one that replaces an
//! object under the resourceVersion its cache shows meets no 409 Conflict with fenced reads,
//! and does without them.
//!
//! The informers' client goes through a [`TcpProxy`] that holds every byte from kube-apiserver
//! for the delay; the reconciles' client (`Cluster::client`) and the workload talk to it directly,
//! so only the cache lags. The workload creates three sources and changes one every 60 ms (each
//! every 180 ms) for 1.8 s. Unfenced, each source is all but sure to get a duplicate: the change
//! made in the 180 ms before its first copy's create reaches the cache late, before the copy
//! does (one watch keeps their order), and its reconcile lists no copy.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{Expression, Selector};
use kube::{Api, ResourceExt as _};
use kubeward::controller::{Action, Cluster, Context, Controller, Reconciler};
use kubeward::informer::Factory;
use kubeward::testing::{ControlPlane, TcpProxy, wait_for};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;

const SOURCES: usize = 3;
const ROUNDS: usize = 10;

/// Creates a copy of each source with `generateName` when its cached list shows none, and
/// notes the resourceVersion of each source it finished reconciling.
struct GenerateName {
    namespace: String,
    reconciled: Arc<Mutex<HashMap<String, String>>>,
}

impl Reconciler<ConfigMap> for GenerateName {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        source: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> kube::Result<Action> {
        if !source.labels().contains_key("role") {
            return Ok(Action::await_change());
        }
        let name = source.name_any();
        let copy_of: Selector = Expression::Equal("copy-of".into(), name.clone()).into();
        let ns = Some(self.namespace.as_str());
        if ctx.list::<ConfigMap>(ns, &copy_of).await?.is_empty() {
            let copy = ConfigMap {
                metadata: ObjectMeta {
                    generate_name: Some(format!("{name}-")),
                    labels: Some([("copy-of".to_owned(), name.clone())].into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            let api: Api<ConfigMap> = Api::namespaced(ctx.client(), &self.namespace);
            api.create(&PostParams::default(), &copy).await?;
        }
        let version = source.resource_version().unwrap_or_default();
        self.reconciled.lock().insert(name, version);
        Ok(Action::await_change())
    }
}

/// Keeps `<source>-seen` holding the source's round: reads it with `ctx.get` (cached), creates
/// it when that shows none, else replaces it under the cached resourceVersion. Nobody else
/// writes those objects, so every 409 Conflict or `AlreadyExists` it meets comes from a stale
/// read; it counts them and fails (the queue retries).
struct Recorder {
    namespace: String,
    reconciled: Reconciled,
    conflicts: Arc<AtomicUsize>,
}

impl Reconciler<ConfigMap> for Recorder {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        source: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> kube::Result<Action> {
        if !source.labels().contains_key("role") {
            return Ok(Action::await_change());
        }
        let name = format!("{}-seen", source.name_any());
        let api: Api<ConfigMap> = Api::namespaced(ctx.client(), &self.namespace);
        let cached = ctx.get::<ConfigMap>(Some(&self.namespace), &name).await?;
        let written = match cached {
            None => {
                let seen = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name),
                        ..ObjectMeta::default()
                    },
                    data: source.data.clone(),
                    ..ConfigMap::default()
                };
                api.create(&PostParams::default(), &seen).await.map(drop)
            }
            Some(seen) if seen.data != source.data => {
                let mut seen = (*seen).clone();
                seen.data.clone_from(&source.data);
                api.replace(&name, &PostParams::default(), &seen)
                    .await
                    .map(drop)
            }
            Some(_) => Ok(()),
        };
        if let Err(kube::Error::Api(status)) = &written
            && status.code == 409
        {
            self.conflicts.fetch_add(1, Ordering::SeqCst);
        }
        written?;
        let version = source.resource_version().unwrap_or_default();
        self.reconciled.lock().insert(source.name_any(), version);
        Ok(Action::await_change())
    }
}

/// What a reconciler notes: the resourceVersion of each source it finished reconciling.
type Reconciled = Arc<Mutex<HashMap<String, String>>>;

/// Runs the reconciler `make` builds (for its namespace, noting into a map) fenced or not, with
/// watches `delay` late, while the workload changes the sources; waits until it reconciled each
/// source's last change and returns the namespace's ConfigMaps.
async fn under_late_watches<R: Reconciler<ConfigMap>>(
    cp: &ControlPlane,
    test: &str,
    fenced: bool,
    delay: Duration,
    make: impl FnOnce(String, Reconciled) -> R,
) -> anyhow::Result<Api<ConfigMap>> {
    let fencing = if fenced { "fenced" } else { "unfenced" };
    let ns = cp
        .create_namespace(&format!("ryow-{test}-{fencing}-{}ms", delay.as_millis()))
        .await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    proxy.delay(delay);
    let factory = Arc::new(Factory::new(cp.client_through(&proxy)));
    let cluster = Cluster::new(Arc::clone(&factory))
        .namespace(Some(ns.clone()))
        .client(cp.client());
    let reconciled = Reconciled::default();
    let bound = Controller::new(make(ns.clone(), Arc::clone(&reconciled)))
        .read_your_writes(fenced)
        .bind(&cluster)?;
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let run = tokio::spawn(async move { bound.run(stop.cancelled_owned()).await });

    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let mut ticks = tokio::time::interval(Duration::from_millis(60));
    for n in 0..SOURCES {
        let source = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("source-{n}")),
                labels: Some([("role".to_owned(), "source".to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        api.create(&PostParams::default(), &source).await?;
    }
    for round in 0..ROUNDS {
        for n in 0..SOURCES {
            ticks.tick().await;
            let data = serde_json::json!({ "data": { "round": round.to_string() } });
            let patch = Patch::Merge(&data);
            api.patch(&format!("source-{n}"), &PatchParams::default(), &patch)
                .await?;
        }
    }
    let sources = api.list(&ListParams::default().labels("role")).await?;
    let last: HashMap<String, String> = sources
        .iter()
        .map(|s| (s.name_any(), s.resource_version().unwrap_or_default()))
        .collect();
    wait_for(
        Duration::from_secs(60),
        "the reconciler to finish every source's last change",
        || async { (*reconciled.lock() == last).then_some(()) },
    )
    .await?;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(30), run).await???;
    factory.shutdown().await;
    Ok(api)
}

/// How many copies the `generateName` copier made beyond one per source.
async fn duplicates(cp: &ControlPlane, fenced: bool, delay: Duration) -> anyhow::Result<usize> {
    let copier = |namespace, reconciled| GenerateName {
        namespace,
        reconciled,
    };
    let api = under_late_watches(cp, "dup", fenced, delay, copier).await?;
    let made = api.list(&ListParams::default().labels("copy-of")).await?;
    Ok(made.items.len().saturating_sub(SOURCES))
}

/// Runs the copier unfenced and fenced side by side with watches `delay` late; checks that
/// only the unfenced one duplicates.
async fn only_unfenced_reads_duplicate(delay: Duration) -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let (unfenced, fenced) =
        tokio::join!(duplicates(cp, false, delay), duplicates(cp, true, delay));
    let (unfenced, fenced) = (unfenced?, fenced?);
    eprintln!("duplicates with watches {delay:?} late: unfenced {unfenced}, fenced {fenced}");
    assert!(
        unfenced > 0,
        "without fencing the late watch made no duplicate: the test shows nothing"
    );
    assert_eq!(
        fenced, 0,
        "fenced reads acted on a cache older than their own create"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_reads_make_no_duplicate_with_watches_250_ms_late_and_unfenced_reads_do()
-> anyhow::Result<()> {
    only_unfenced_reads_duplicate(Duration::from_millis(250)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_reads_make_no_duplicate_with_watches_1_s_late_and_unfenced_reads_do()
-> anyhow::Result<()> {
    only_unfenced_reads_duplicate(Duration::from_secs(1)).await
}

/// How many 409s (Conflict, `AlreadyExists`) the recorder met.
async fn conflicts(cp: &ControlPlane, fenced: bool, delay: Duration) -> anyhow::Result<usize> {
    let conflicts = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&conflicts);
    let recorder = |namespace, reconciled| Recorder {
        namespace,
        reconciled,
        conflicts: counted,
    };
    under_late_watches(cp, "409", fenced, delay, recorder).await?;
    Ok(conflicts.load(Ordering::SeqCst))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_reads_meet_no_conflict_from_a_stale_resource_version_and_unfenced_reads_do()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let delay = Duration::from_millis(250);
    let (unfenced, fenced) = tokio::join!(conflicts(cp, false, delay), conflicts(cp, true, delay));
    let (unfenced, fenced) = (unfenced?, fenced?);
    eprintln!("409s with watches {delay:?} late: unfenced {unfenced}, fenced {fenced}");
    assert!(
        unfenced > 0,
        "without fencing the late watch caused no conflict: the test shows nothing"
    );
    assert_eq!(fenced, 0, "fenced reads wrote from a stale resourceVersion");
    Ok(())
}
