//! Shared watches: watch connections and heap for 1, 2, 4 and 8 controllers on ConfigMaps.
//!
//! kubeward's controllers of one manager share one informer per type; kube-runtime's
//! `Controller`s each run their own watcher and store. Each controller reconciles the namespace's
//! `SMALL` ConfigMaps with a no-op; once every controller has reconciled every object, the open
//! watches are read from the apiserver's `apiserver_longrunning_gauge` (WATCH on
//! configmaps, less those open before) and the heap growth of this process from a counting allocator.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::controller::{
    Action as KrAction, Config as KrConfig, Controller as KrController,
};
use kube::runtime::watcher;
use kube::{Api, Client};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::informer::CacheScope;
use kubeward::manager::{Config, Manager};
use kubeward::testing::{ControlPlane, wait_for};

use crate::{SMALL_NS, heap, small};

/// Controllers per row: 1, 2, 4, 8, or 1 and 2 with `KUBEWARD_BENCH_QUICK=1`.
fn controllers() -> &'static [usize] {
    if crate::quick() {
        &[1, 2]
    } else {
        &[1, 2, 4, 8]
    }
}
const TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Clone)]
struct Noop(Arc<AtomicUsize>);

impl Reconciler<ConfigMap> for Noop {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        _: Arc<ConfigMap>,
        _: &Context<ConfigMap>,
    ) -> Result<Action, Self::Error> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(Action::await_change())
    }
}

/// Open WATCH requests on configmaps, from the apiserver's own gauge (`apiserver_longrunning_gauge`,
/// renamed `apiserver_longrunning_requests` in newer releases).
async fn open_watches(client: &Client) -> anyhow::Result<u64> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let total = text
        .lines()
        .filter(|l| l.starts_with("apiserver_longrunning_"))
        .filter(|l| l.contains(r#"resource="configmaps""#) && l.contains(r#"verb="WATCH""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>();
    Ok(total as u64)
}

/// What `n` controllers cost once they have reconciled everything.
struct Cost {
    watches: u64,
    heap: usize,
}

async fn settle(
    client: &Client,
    count: &AtomicUsize,
    n: usize,
    base: usize,
) -> anyhow::Result<Cost> {
    let what = format!("{n} controllers to reconcile {} ConfigMaps each", small());
    wait_for(TIMEOUT, &what, || async {
        (count.load(Ordering::Relaxed) >= n * small()).then_some(())
    })
    .await?;
    Ok(Cost {
        watches: open_watches(client).await?,
        heap: heap().saturating_sub(base),
    })
}

async fn kubeward(cp: &ControlPlane, n: usize) -> anyhow::Result<Cost> {
    let base = heap();
    let count = Arc::new(AtomicUsize::new(0));
    let manager = Manager::new(
        cp.client(),
        Config::default().cache(CacheScope::default().namespaces([SMALL_NS])),
    )?;
    for i in 0..n {
        manager.add(Controller::new(Noop(Arc::clone(&count))).name(format!("noop-{i}")))?;
    }
    let stop = manager.shutdown_token();
    let running = tokio::spawn(manager.run());
    let cost = settle(&cp.client(), &count, n, base).await;
    stop.cancel();
    running.await??;
    cost
}

async fn kube_runtime(cp: &ControlPlane, n: usize) -> anyhow::Result<Cost> {
    let base = heap();
    let count = Arc::new(AtomicUsize::new(0));
    let client = cp.client();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), SMALL_NS);
            let run = KrController::new(api, watcher::Config::default())
                .with_config(KrConfig::default().concurrency(1))
                .run(
                    |_, count: Arc<Arc<AtomicUsize>>| async move {
                        count.fetch_add(1, Ordering::Relaxed);
                        Ok::<_, std::convert::Infallible>(KrAction::await_change())
                    },
                    |_, _, _| KrAction::await_change(),
                    Arc::new(Arc::clone(&count)),
                );
            tokio::spawn(run.for_each(|_| async {}))
        })
        .collect();
    let cost = settle(&cp.client(), &count, n, base).await;
    for task in tasks {
        task.abort();
        let _ = task.await;
    }
    cost
}

/// Waits until only the apiserver's own `idle` watches are open, so each measurement starts clean.
async fn drained(client: &Client, idle: u64) -> anyhow::Result<()> {
    wait_for(TIMEOUT, "the previous watches to close", || async {
        (open_watches(client).await.ok()? == idle).then_some(())
    })
    .await?;
    Ok(())
}

pub async fn run(cp: &ControlPlane) -> anyhow::Result<()> {
    let client = cp.client();
    println!("## Shared watches");
    println!();
    println!(
        "Controllers on ConfigMaps in one namespace of {}: open watches (apiserver gauge) and heap growth of the process once all have reconciled everything.",
        small()
    );
    println!();
    println!(
        "| controllers | kubeward watches | kubeward heap | kube-runtime watches | kube-runtime heap | heap, kube-runtime / kubeward |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    let idle = open_watches(&client).await?;
    for &n in controllers() {
        drained(&client, idle).await?;
        let ours = kubeward(cp, n).await?;
        drained(&client, idle).await?;
        let theirs = kube_runtime(cp, n).await?;
        println!(
            "| {n} | {} | {:.1} MB | {} | {:.1} MB | {:.2}× |",
            ours.watches - idle,
            ours.heap as f64 / 1e6,
            theirs.watches - idle,
            theirs.heap as f64 / 1e6,
            theirs.heap as f64 / ours.heap as f64
        );
    }
    Ok(())
}
