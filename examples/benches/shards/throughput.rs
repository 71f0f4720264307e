//! Reconciles per second of a CPU-bound reconciler ([`crate::burn`]) with 1 and 2 shards.

use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::testing::{ControlPlane, cpu_time, wait_for};
use tokio::time::Instant;

use crate::burn::{self, CHILD, RING};
use crate::process::{Process, Spawn, sum};
use crate::{namespace, quick};

/// ConfigMaps reconciled over and over: 200, or 20 with `KUBEWARD_BENCH_QUICK=1`.
fn objects() -> usize {
    if quick() { 20 } else { 200 }
}

/// How long reconciles are counted.
fn window() -> Duration {
    Duration::from_secs(if quick() { 2 } else { 20 })
}

/// Runs per shard count: 3, or 1 with `KUBEWARD_BENCH_QUICK=1`.
fn rounds() -> usize {
    if quick() { 1 } else { 3 }
}

/// The run with the median throughput.
fn median(mut runs: Vec<Rate>) -> Rate {
    runs.sort_by(|a, b| a.per_second.total_cmp(&b.per_second));
    runs.swap_remove(runs.len() / 2)
}

/// Reconciles and CPU time of one run.
struct Rate {
    per_second: f64,
    per_shard: Vec<f64>,
    cores: f64,
}

pub async fn run(cp: &ControlPlane) -> anyhow::Result<()> {
    let (system, apps) = ("burn-system", "burn-apps");
    namespace(cp, system).await?;
    namespace(cp, apps).await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), apps);
    futures::stream::iter(0..objects())
        .map(|i| {
            let api = api.clone();
            async move {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(format!("burn-{i}")),
                        ..ObjectMeta::default()
                    },
                    ..ConfigMap::default()
                };
                api.create(&PostParams::default(), &cm).await.map(drop)
            }
        })
        .buffer_unordered(16)
        .try_collect::<()>()
        .await?;
    let logs = tempfile::tempdir()?;
    // Rounds alternate which count runs first, so neither always meets the other's leftovers.
    let (mut ones, mut twos) = (Vec::new(), Vec::new());
    for round in 0..rounds() {
        for n in if round % 2 == 0 { [1, 2] } else { [2, 1] } {
            let measured = rate(cp, (system, apps), n, logs.path()).await?;
            if n == 1 { &mut ones } else { &mut twos }.push(measured);
        }
    }
    let (one, two) = (median(ones), median(twos));
    println!("### CPU-bound reconcile throughput");
    println!();
    println!(
        "A reconciler that burns {:.2} ms of one core per object (CPU time, measured in this process) and requeues it 1 ms later, over {} ConfigMaps; shards are separate processes (`--shard-ring {RING}`, leader election on, one reconcile at a time each), reconciles counted over {} s from `controller_runtime_reconcile_total`, the median of {} runs; CPU time of the shard processes from `/proc/<pid>/stat` over the same span.",
        calibrate()? * 1e3,
        objects(),
        window().as_secs(),
        rounds()
    );
    println!();
    println!(
        "| shards | reconciles/s | per shard | CPU used (cores) | reconciles per CPU second | vs 1 shard |"
    );
    println!("| ---: | ---: | --- | ---: | ---: | ---: |");
    for (n, r) in [(1, &one), (2, &two)] {
        println!(
            "| {n} | {:.0} | {} | {:.2} | {:.0} | {:.2}× |",
            r.per_second,
            r.per_shard
                .iter()
                .map(|s| format!("{s:.0}"))
                .collect::<Vec<_>>()
                .join(" / "),
            r.cores,
            r.per_second / r.cores,
            r.per_second / one.per_second
        );
    }
    Ok(())
}

/// Seconds of CPU one [`burn::burn`] takes here: this process's CPU time over 100 of them
/// (CPU, not wall time, so other load on the machine does not count; ± 10 ms in all).
fn calibrate() -> anyhow::Result<f64> {
    const BURNS: u32 = 100;
    let before = cpu_time(std::process::id())?;
    for _ in 0..BURNS {
        std::hint::black_box(burn::burn());
    }
    Ok(cpu_time(std::process::id())?
        .saturating_sub(before)
        .as_secs_f64()
        / f64::from(BURNS))
}

async fn rate(
    cp: &ControlPlane,
    (system, apps): (&str, &str),
    n: usize,
    logs: &std::path::Path,
) -> anyhow::Result<Rate> {
    let program = std::env::current_exe()?;
    let program = program.to_string_lossy();
    let shards: Vec<Process> = (0..n)
        .map(|i| {
            Spawn {
                program: &program,
                id: format!("burn{n}-{i}"),
                ring: Some(RING),
                system,
                apps,
                env: &[(CHILD, "1")],
            }
            .start(cp, logs)
        })
        .collect::<anyhow::Result<_>>()?;
    let selector = kubeward::sharding::shard_label(RING);
    let what = format!(
        "{n} burn shards to cache all {} ConfigMaps between them and reconcile",
        objects()
    );
    let (shards_ref, selector_ref) = (&shards, &selector);
    wait_for(Duration::from_secs(120), &what, || async move {
        let mut cached = 0.0;
        for shard in shards_ref {
            let page = shard.metrics().await.ok()?;
            let mine = sum(
                &page,
                "kubeward_informer_store_objects",
                &["configmaps", selector_ref],
            );
            let reconciles = sum(&page, "controller_runtime_reconcile_total", &[]);
            if mine == 0.0 || reconciles == 0.0 {
                return None;
            }
            cached += mine;
        }
        (cached as usize == objects()).then_some(())
    })
    .await
    .map_err(|e| {
        let logs: Vec<String> = shards.iter().map(Process::log).collect();
        anyhow::anyhow!("{e}\n{}", logs.join("\n"))
    })?;
    let cpu = |shards: &[Process]| -> anyhow::Result<f64> {
        shards.iter().map(|s| Ok(s.cpu()?.as_secs_f64())).sum()
    };
    let with_logs = |e: anyhow::Error| {
        let logs: Vec<String> = shards.iter().map(Process::log).collect();
        anyhow::anyhow!("{e}\n{}", logs.join("\n"))
    };
    let (started, before, cpu_before) = (
        Instant::now(),
        counts(&shards).await.map_err(with_logs)?,
        cpu(&shards).map_err(with_logs)?,
    );
    tokio::time::sleep(window()).await;
    let (after, cpu_after) = (
        counts(&shards).await.map_err(with_logs)?,
        cpu(&shards).map_err(with_logs)?,
    );
    let elapsed = started.elapsed().as_secs_f64();
    let per_shard: Vec<f64> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| (a - b) / elapsed)
        .collect();
    for shard in shards {
        shard.stop().await?;
    }
    Ok(Rate {
        per_second: per_shard.iter().sum(),
        per_shard,
        cores: (cpu_after - cpu_before) / elapsed,
    })
}

/// Each shard's `controller_runtime_reconcile_total`.
async fn counts(shards: &[Process]) -> anyhow::Result<Vec<f64>> {
    let mut counts = Vec::new();
    for shard in shards {
        let page = shard.metrics().await?;
        counts.push(sum(&page, "controller_runtime_reconcile_total", &[]));
    }
    Ok(counts)
}
