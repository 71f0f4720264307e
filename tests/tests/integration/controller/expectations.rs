//! Expectations on the real control plane: with watch events 250 ms or 1 s late and writes on
//! time, reconcilers that find their owned objects in the cache's store itself (a read no
//! fence covers) make no duplicate `generateName` create and no wrong delete with expectations
//! on, and do without them.
//!
//! The informers' client goes through a [`TcpProxy`] that holds every byte from kube-apiserver
//! for the delay; the reconciles' client and the workload talk to it directly, so only the cache
//! lags. The workload creates three sources and changes one every 60 ms (each every 180 ms) for
//! 1.8 s; for the wrong-delete test, for 3.6 s, adding a foreign copy of the source just before
//! each change.
//! What the reconcilers did is counted on the API server's side, by a watch of the copies that
//! does not go through the proxy.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher as _;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Api, ResourceExt};
use kubeward::controller::{Action, Cluster, Context, Controller, Reconciler};
use kubeward::informer::Factory;
use kubeward::testing::{ControlPlane, TcpProxy, wait_for};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

const SOURCES: usize = 3;
/// Rounds of changes: each source changes once a round, every 180 ms.
const ROUNDS: usize = 10;
/// Rounds for the wrong-delete test: a wrong delete needs a stale view and an unlucky pick,
/// so it runs twice as long to show one without expectations in every run.
const DELETE_ROUNDS: usize = 20;
/// How many copies of each source the trimmer keeps.
const KEEP: usize = 2;

/// What a reconciler notes: the resourceVersion of each source it finished reconciling.
type Reconciled = Arc<Mutex<HashMap<String, String>>>;

/// Keeps `want` copies of each source, finding them in its cache's store: creates one with
/// `generateName` when it sees fewer, deletes the extras it sees when more. Which extras it
/// deletes is arbitrary, as a ReplicaSet's ranking of its pods changes between reconciles.
struct Keeper {
    namespace: String,
    want: usize,
    reconciled: Reconciled,
}

impl Reconciler<ConfigMap> for Keeper {
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
        let mut copies: Vec<String> = ctx
            .store()
            .list()
            .iter()
            .filter(|cm| cm.labels().get("copy-of") == Some(&name))
            .map(|cm| cm.name_any())
            .collect();
        let api: Api<ConfigMap> = Api::namespaced(ctx.client(), &self.namespace);
        if copies.len() < self.want {
            api.create(&PostParams::default(), &copy_of(&name)).await?;
        }
        let order = std::collections::hash_map::RandomState::new();
        copies.sort_by_key(|copy| order.hash_one(copy));
        for extra in copies.iter().skip(self.want) {
            match api.delete(extra, &DeleteParams::default()).await {
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                deleted => drop(deleted?),
            }
        }
        let version = source.resource_version().unwrap_or_default();
        self.reconciled.lock().insert(name, version);
        Ok(Action::await_change())
    }
}

/// A copy of the source `name`, named by the API server.
fn copy_of(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            labels: Some([("copy-of".to_owned(), name.to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// What the API server saw happen to the copies, from a watch that does not go through the
/// proxy.
#[derive(Debug, Default)]
struct Seen {
    /// The live copies of each source.
    live: HashMap<String, HashSet<String>>,
    /// Copies the keeper created beyond the copies it keeps of their source.
    duplicates: usize,
    /// Deletes that left a source with fewer copies than the keeper keeps.
    wrong_deletes: usize,
}

impl Seen {
    /// Counts `event` of a copy, where `want` copies per source are kept.
    fn count(&mut self, event: WatchEvent<ConfigMap>, want: usize) -> anyhow::Result<()> {
        match event {
            WatchEvent::Added(copy) => {
                let of = self
                    .live
                    .entry(copy.labels()["copy-of"].clone())
                    .or_default();
                of.insert(copy.name_any());
                if of.len() > want && !copy.labels().contains_key("extra") {
                    self.duplicates += 1;
                }
            }
            WatchEvent::Deleted(copy) => {
                let of = self
                    .live
                    .entry(copy.labels()["copy-of"].clone())
                    .or_default();
                of.remove(&copy.name_any());
                if of.len() < want {
                    self.wrong_deletes += 1;
                }
            }
            WatchEvent::Modified(_) | WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(status) => anyhow::bail!("the copies' watch failed: {status:?}"),
        }
        Ok(())
    }

    fn live_names(&self) -> HashSet<String> {
        self.live.values().flatten().cloned().collect()
    }
}

/// Runs a [`Keeper`] of `want` copies with expectations on or off, with watches `delay` late,
/// while the workload changes the sources (and adds a foreign copy before each change if
/// `extras`); waits until it reconciled each source's last change, and returns what the API
/// server saw, once the direct watch has shown every copy there is.
async fn keep(
    cp: &ControlPlane,
    test: &str,
    expecting: bool,
    delay: Duration,
    want: usize,
    extras: bool,
    rounds: usize,
) -> anyhow::Result<Seen> {
    let on = if expecting { "on" } else { "off" };
    let ns = cp
        .create_namespace(&format!("expect-{test}-{on}-{}ms", delay.as_millis()))
        .await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let listed = api.list(&ListParams::default()).await?;
    let from = listed.metadata.resource_version.unwrap_or_default();
    let mut copies = api
        .watch(&WatchParams::default().labels("copy-of"), &from)
        .await?
        .boxed();
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let counting = tokio::spawn({
        let seen = Arc::clone(&seen);
        async move {
            while let Some(event) = copies.try_next().await? {
                seen.lock().count(event, want)?;
            }
            Err::<(), _>(anyhow::anyhow!("the copies' watch ended"))
        }
    });

    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    proxy.delay(delay);
    let factory = Arc::new(Factory::new(cp.client_through(&proxy)));
    let cluster = Cluster::new(Arc::clone(&factory))
        .namespace(Some(ns.clone()))
        .client(cp.client());
    let reconciled = Reconciled::default();
    let keeper = Keeper {
        namespace: ns.clone(),
        want,
        reconciled: Arc::clone(&reconciled),
    };
    let bound = Controller::new(keeper)
        .read_your_writes(expecting)
        .bind(&cluster)?;
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let run = tokio::spawn(async move { bound.run(stop.cancelled_owned()).await });

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
    for round in 0..rounds {
        for n in 0..SOURCES {
            ticks.tick().await;
            let source = format!("source-{n}");
            if extras {
                let mut extra = copy_of(&source);
                extra.labels_mut().insert("extra".into(), "yes".into());
                api.create(&PostParams::default(), &extra).await?;
            }
            let data = serde_json::json!({ "data": { "round": round.to_string() } });
            api.patch(&source, &PatchParams::default(), &Patch::Merge(&data))
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
    wait_for(
        Duration::from_secs(30),
        "the direct watch to show every copy the API server holds",
        || async {
            let made = api
                .list(&ListParams::default().labels("copy-of"))
                .await
                .ok()?;
            let names: HashSet<String> = made.iter().map(ResourceExt::name_any).collect();
            (names == seen.lock().live_names()).then_some(())
        },
    )
    .await?;
    counting.abort();
    if let Ok(Err(failed)) = counting.await {
        return Err(failed);
    }
    Ok(std::mem::take(&mut *seen.lock()))
}

/// Runs the keeper with expectations off and on side by side, with watches `delay` late.
async fn off_and_on(
    test: &str,
    delay: Duration,
    want: usize,
    extras: bool,
) -> anyhow::Result<(Seen, Seen)> {
    let cp = ControlPlane::shared().await?;
    let rounds = if extras { DELETE_ROUNDS } else { ROUNDS };
    let (off, on) = tokio::join!(
        keep(cp, test, false, delay, want, extras, rounds),
        keep(cp, test, true, delay, want, extras, rounds)
    );
    Ok((off?, on?))
}

/// A keeper of one copy per source, without foreign copies: every copy beyond one is a
/// duplicate of its own create.
async fn only_the_keeper_without_expectations_duplicates(delay: Duration) -> anyhow::Result<()> {
    let (off, on) = off_and_on("dup", delay, 1, false).await?;
    eprintln!(
        "generateName duplicates with watches {delay:?} late: without expectations {} \
         (wrong deletes {}), with them {} (wrong deletes {})",
        off.duplicates, off.wrong_deletes, on.duplicates, on.wrong_deletes
    );
    assert!(
        off.duplicates > 0,
        "without expectations the late watch made no duplicate: the test shows nothing"
    );
    assert_eq!(
        on.duplicates, 0,
        "a reconcile acted before its cache showed its own create"
    );
    assert_eq!(on.wrong_deletes, 0, "a reconcile deleted a copy it keeps");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expectations_make_no_duplicate_generate_name_create_with_watches_250_ms_late()
-> anyhow::Result<()> {
    only_the_keeper_without_expectations_duplicates(Duration::from_millis(250)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expectations_make_no_duplicate_generate_name_create_with_watches_1_s_late()
-> anyhow::Result<()> {
    only_the_keeper_without_expectations_duplicates(Duration::from_secs(1)).await
}

/// A keeper of two copies per source, with a foreign copy added before each change: it deletes
/// one extra per change, and a delete its stale cache still shows makes it delete a kept copy.
async fn only_the_keeper_without_expectations_deletes_wrongly(
    delay: Duration,
) -> anyhow::Result<()> {
    let (off, on) = off_and_on("del", delay, KEEP, true).await?;
    eprintln!(
        "wrong deletes with watches {delay:?} late: without expectations {} (duplicates {}), \
         with them {} (duplicates {})",
        off.wrong_deletes, off.duplicates, on.wrong_deletes, on.duplicates
    );
    assert!(
        off.wrong_deletes > 0,
        "without expectations the late watch made no wrong delete: the test shows nothing"
    );
    assert_eq!(
        on.wrong_deletes, 0,
        "a reconcile deleted a kept copy, acting before its cache showed its own delete"
    );
    // Not asserted here: with foreign copies coming, a create decided on a view that does not
    // yet hold a foreign copy made meanwhile counts as a duplicate too (one in a run, with
    // expectations on or off alike); the test without foreign copies asserts on duplicates.
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expectations_make_no_wrong_delete_with_watches_250_ms_late() -> anyhow::Result<()> {
    only_the_keeper_without_expectations_deletes_wrongly(Duration::from_millis(250)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expectations_make_no_wrong_delete_with_watches_1_s_late() -> anyhow::Result<()> {
    only_the_keeper_without_expectations_deletes_wrongly(Duration::from_secs(1)).await
}
