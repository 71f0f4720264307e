//! What the sharder costs its replica at 3,000 and 30,000 generators: two shards, the leader
//! (which runs the sharder) beside the other.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::DeleteParams;
use kubeward::testing::ControlPlane;
use kubeward_examples::configmap_generator::ConfigMapGenerator;
use tokio::time::Instant;

use crate::fleet::Fleet;
use crate::{generators, mb, namespace, quick};

/// Generator counts: 3,000 and 30,000, or 100 and 300 with `KUBEWARD_BENCH_QUICK=1`.
fn counts() -> [usize; 2] {
    if quick() { [100, 300] } else { [3_000, 30_000] }
}

/// The quiet interval over which CPU time at rest is read.
fn quiet() -> Duration {
    Duration::from_secs(if quick() { 1 } else { 20 })
}

pub async fn run(cp: &ControlPlane) -> anyhow::Result<()> {
    let (system, apps) = ("cost-system", "cost-apps");
    namespace(cp, system).await?;
    namespace(cp, apps).await?;
    let api: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), apps);
    let logs = tempfile::tempdir()?;
    println!("### The sharder's cost");
    println!();
    println!(
        "Two shard processes of the example operator; the leader runs the sharder, which caches the metadata of every generator and of every generated ConfigMap. Resident memory once all were assigned and reconciled; CPU time from start until then, and over {} s at rest after it.",
        quiet().as_secs()
    );
    println!();
    let mut rows = Vec::new();
    let mut created = 0;
    for count in counts() {
        let seeding = Instant::now();
        generators::create(&api, created, count).await?;
        created = count;
        eprintln!("created {count} generators in {:?}", seeding.elapsed());
        let fleet = Fleet::start(cp, (system, apps), &format!("cost{count}"), 2, logs.path())?;
        let settling = Instant::now();
        let held = fleet.settle(cp, count as u64).await?;
        eprintln!(
            "2 shards settled {count} generators in {:?}",
            settling.elapsed()
        );
        let (leader, other) = if held[0].leader { (0, 1) } else { (1, 0) };
        anyhow::ensure!(
            held[leader].leader && !held[other].leader,
            "exactly one of the two shards leads"
        );
        let (p, q) = (&fleet.processes[leader], &fleet.processes[other]);
        let settle_cpu = (p.cpu()?, q.cpu()?);
        tokio::time::sleep(quiet()).await;
        rows.push(Row {
            count,
            cached: held[leader].sharder_objects,
            generators: (held[leader].generators, held[other].generators),
            rss: (p.rss()?, q.rss()?),
            settle_cpu,
            rest_cpu: (
                p.cpu()?.saturating_sub(settle_cpu.0),
                q.cpu()?.saturating_sub(settle_cpu.1),
            ),
        });
        fleet.stop().await?;
    }
    // What a shard's own share costs per generator (with its ConfigMap), from the non-leaders
    // of the two rows; the leader's extra share is taken off its excess with it.
    let (small, large) = (&rows[0], &rows[1]);
    let per_generator = (large.rss.1 as f64 - small.rss.1 as f64)
        / (large.generators.1 as f64 - small.generators.1 as f64);
    println!(
        "| generators | sharder's metadata cache | generators cached, leader / other | RSS leader / other | leader − other | less the leader's extra share | per object in the sharder's cache | CPU to settle, leader / other | CPU at rest, leader / other |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for row in &rows {
        let excess = row.rss.0 as f64 - row.rss.1 as f64;
        let extra_share = row.generators.0 as f64 - row.generators.1 as f64;
        let sharder = excess - extra_share * per_generator;
        println!(
            "| {} | {} objects | {} / {} | {} / {} | {:.1} MB | {:.1} MB | {:.0} B | {} / {} | {} / {} |",
            row.count,
            row.cached,
            row.generators.0,
            row.generators.1,
            mb(row.rss.0),
            mb(row.rss.1),
            excess / 1e6,
            sharder / 1e6,
            sharder / row.cached.max(1) as f64,
            secs(row.settle_cpu.0),
            secs(row.settle_cpu.1),
            secs(row.rest_cpu.0),
            secs(row.rest_cpu.1),
        );
    }
    println!();
    println!(
        "A shard's own share costs {per_generator:.0} B per generator with its ConfigMap (the non-leaders' growth between the rows)."
    );
    // Marked for deletion; the local control plane has no namespace controller to finish it,
    // and is discarded when the bench ends.
    Api::<Namespace>::all(cp.client())
        .delete(apps, &DeleteParams::default())
        .await?;
    Ok(())
}

/// One generator count's measurements, leader first in each pair.
struct Row {
    count: usize,
    cached: u64,
    generators: (u64, u64),
    rss: (u64, u64),
    settle_cpu: (Duration, Duration),
    rest_cpu: (Duration, Duration),
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}
