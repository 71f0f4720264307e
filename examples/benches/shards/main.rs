//! Sharding measured: the example operator's shards on the local control plane.
//!
//! Starts etcd + kube-apiserver (`KUBEWARD_BIN`) and runs, as separate processes with leader
//! election on:
//!
//! - `spread`: 3,000 generators over one unsharded replica, then 2, 3 and 4 shards of the
//!   `configmap-generator` ring: objects and resident memory per process. Fails when one of 3
//!   shards holds a share outside 1/3 ± 15 % or a generator is not assigned.
//! - `sharder`: the sharder's cost at 3,000 and 30,000 generators, from two shards: the
//!   leader's resident memory and CPU time beside the other shard's.
//! - `throughput`: reconciles per second of a CPU-bound reconciler (this bench, started again
//!   as a child with `KUBEWARD_BENCH_BURN=1`) with 1 and 2 shards.
//!
//! `KUBEWARD_BENCH_QUICK=1` (`scripts/bench --quick`) runs each on a few hundred objects.
//! `cargo bench -p kubeward-examples --bench shards [-- SECTION...]` prints markdown tables.
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::must_use_candidate,
    clippy::missing_errors_doc
)]

mod burn;
mod fleet;
mod generators;
mod process;
mod sharder;
mod spread;
mod throughput;

use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::testing::{ControlPlane, install_definition};
use kubeward_examples::configmap_generator::ConfigMapGenerator;

/// `KUBEWARD_BENCH_QUICK=1`: every section on a reduced workload, to check that it runs.
pub fn quick() -> bool {
    std::env::var_os("KUBEWARD_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Megabytes, one decimal.
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// Creates the namespace `name`.
pub async fn namespace(cp: &ControlPlane, name: &str) -> anyhow::Result<()> {
    let namespace = k8s_openapi::api::core::v1::Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..Default::default()
    };
    Api::<k8s_openapi::api::core::v1::Namespace>::all(cp.client())
        .create(&PostParams::default(), &namespace)
        .await?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    if burn::is_child() {
        // The CPU-bound reconciler of `throughput`, started by this bench.
        return burn::child();
    }
    let mut sections: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if sections.is_empty() {
        sections = vec!["spread".into(), "sharder".into(), "throughput".into()];
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let cp = ControlPlane::start().await?;
        install_definition::<ConfigMapGenerator>(cp.client()).await?;
        println!("## Sharding");
        println!();
        // A failed section does not stop the others; the bench fails at the end.
        let mut failed = Vec::new();
        for section in &sections {
            let outcome = match section.as_str() {
                "spread" => spread::run(&cp).await,
                "sharder" => sharder::run(&cp).await,
                "throughput" => throughput::run(&cp).await,
                other => {
                    anyhow::bail!("unknown section {other} (have spread, sharder, throughput)")
                }
            };
            if let Err(error) = outcome {
                eprintln!("shards: section {section} failed: {error:#}");
                failed.push(section.as_str());
            }
            println!();
        }
        anyhow::ensure!(failed.is_empty(), "sections failed: {}", failed.join(", "));
        Ok(())
    })
}
