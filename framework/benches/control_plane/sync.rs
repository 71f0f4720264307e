//! Initial sync: time until kubeward's informer, kube-runtime's reflector and a raw list are done.
//!
//! Each contender lists in pages of 500 (every default) through its own fresh client. kubeward
//! counts as synced when `wait_for_sync` returns, kube-runtime when its watcher yields `InitDone`
//! (the reflector's store is then complete), the raw list when the last page is decoded.
//! The median of `ROUNDS` rounds is shown, the contenders taking turns within a round, each round
//! starting with the next one (so none always runs first, right after the previous round).

use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ListParams;
use kube::runtime::{reflector, watcher};
use kube::{Api, Client};
use kubeward::informer::{self, SharedInformer};
use kubeward::testing::{ControlPlane, cpu_time};
use tokio::time::Instant;

use crate::{SMALL_NS, large, median, ms, small};

/// Rounds per row: 9, or 1 with `KUBEWARD_BENCH_QUICK=1`.
fn rounds() -> usize {
    if crate::quick() { 1 } else { 9 }
}
const PAGE: u32 = 500;

/// Lists every page; returns the number of objects.
async fn raw_list(api: &Api<ConfigMap>) -> anyhow::Result<usize> {
    let mut items = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await?;
        items.extend(page.items);
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(items.len()),
        }
    }
}

async fn kubeward(api: Api<ConfigMap>) -> anyhow::Result<usize> {
    let informer = SharedInformer::new(api, informer::Config::default().page_size(PAGE));
    informer.start()?;
    informer.wait_for_sync().await?;
    let n = informer.store().len();
    informer.shutdown().await;
    Ok(n)
}

async fn kube_runtime(api: Api<ConfigMap>) -> anyhow::Result<usize> {
    let (reader, writer) = reflector::store();
    let config = watcher::Config::default().page_size(PAGE);
    let mut stream = std::pin::pin!(reflector(writer, watcher(api, config)));
    while let Some(event) = stream.next().await {
        if matches!(event?, watcher::Event::InitDone) {
            return Ok(reader.state().len());
        }
    }
    anyhow::bail!("the watcher ended before its initial list was done")
}

/// Wall time and this process's CPU time of one sync.
#[derive(Clone, Copy)]
struct Sample {
    wall: Duration,
    cpu: Duration,
}

/// Times `f` on a fresh client; checks it saw `expected` objects.
async fn timed<F, Fut>(cp: &ControlPlane, expected: usize, f: F) -> anyhow::Result<Sample>
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = anyhow::Result<usize>>,
{
    let fresh = Client::try_from(cp.config())?;
    let (started, cpu) = (Instant::now(), cpu_time(std::process::id())?);
    let n = f(fresh).await?;
    let sample = Sample {
        wall: started.elapsed(),
        cpu: cpu_time(std::process::id())?.saturating_sub(cpu),
    };
    anyhow::ensure!(n == expected, "synced {n} objects, expected {expected}");
    Ok(sample)
}

/// The median wall time and the median CPU time of `samples`.
fn medians(samples: &[Sample]) -> (Duration, Duration) {
    let mut wall: Vec<_> = samples.iter().map(|s| s.wall).collect();
    let mut cpu: Vec<_> = samples.iter().map(|s| s.cpu).collect();
    (median(&mut wall), median(&mut cpu))
}

pub async fn run(cp: &ControlPlane) -> anyhow::Result<()> {
    println!("## Initial sync");
    println!();
    println!(
        "Time from start until the cache holds every ConfigMap (median of {}), pages of {PAGE}, local etcd + kube-apiserver.",
        rounds()
    );
    println!();
    println!(
        "| ConfigMaps | raw list (floor) | kubeward informer | vs floor | kube-runtime reflector | vs floor |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut cpu_rows = Vec::new();
    for (label, namespace) in [(small(), Some(SMALL_NS)), (large(), None)] {
        let api = |c: Client| match namespace {
            Some(ns) => Api::<ConfigMap>::namespaced(c, ns),
            None => Api::all(c),
        };
        let expected = raw_list(&api(cp.client())).await?;
        let (mut floor, mut ours, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds() {
            for turn in 0..3 {
                match (round + turn) % 3 {
                    0 => floor.push(
                        timed(cp, expected, |c| async move { raw_list(&api(c)).await }).await?,
                    ),
                    1 => ours.push(timed(cp, expected, |c| kubeward(api(c))).await?),
                    _ => theirs.push(timed(cp, expected, |c| kube_runtime(api(c))).await?),
                }
            }
        }
        let ((floor, floor_cpu), (ours, ours_cpu), (theirs, theirs_cpu)) =
            (medians(&floor), medians(&ours), medians(&theirs));
        cpu_rows.push(format!(
            "| {label} | {} | {} | {} |",
            ms(floor_cpu),
            ms(ours_cpu),
            ms(theirs_cpu)
        ));
        let ratio = |d: Duration| format!("{:.2}×", d.as_secs_f64() / floor.as_secs_f64());
        println!(
            "| {label} ({expected} listed) | {} | {} | {} | {} | {} |",
            ms(floor),
            ms(ours),
            ratio(ours),
            ms(theirs),
            ratio(theirs)
        );
    }
    println!();
    println!(
        "CPU time of the benchmark process during the same syncs (median; the client side only):"
    );
    println!();
    println!("| ConfigMaps | raw list | kubeward informer | kube-runtime reflector |");
    println!("| ---: | ---: | ---: | ---: |");
    for row in cpu_rows {
        println!("{row}");
    }
    Ok(())
}
