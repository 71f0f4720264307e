//! Read-your-writes on the real local control plane: kube-runtime, kubeward unfenced and fenced.
//!
//! Starts etcd + kube-apiserver (`KUBEWARD_BIN`) and, at watch delays of 0, 250 and 1,000 ms
//! (250 ms only with `KUBEWARD_BENCH_QUICK=1`), runs each [side](sides) through both
//! [workloads](workload), one run at a time, each in a namespace of its own, and prints one
//! markdown table:
//! - duplicates: copies the `generateName` copier made beyond one per source, listed through
//!   the direct client after the run;
//! - conflicts: the 409s kube-apiserver counted on ConfigMaps during the runs (its
//!   `apiserver_request_total`), all from the recorder replacing under a stale resourceVersion;
//! - reconciles per update: reconciles of a source (failed ones included) over the writes to
//!   the sources (3 creates and 3 per round);
//! - p99 latency, per workload: for each write to a source, from the instant the workload sent
//!   it to the instant the first reconcile of that source that read it (or a later version)
//!   returned successfully (writes start once the side reconciled a sentinel: no start-up);
//! - the fenced p99s minus the unfenced ones, which must stay within the delay.
//!
//! Exits 1 if kubeward with fencing on made a duplicate or met a conflict.
//!
//! `cargo bench -p kubeward --all-features --bench staleness`
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

mod server;
mod sides;
mod table;
mod workload;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kubeward::testing::ControlPlane;

use crate::sides::Side;
use crate::table::Cell;
use crate::workload::{Log, Workload};

/// `KUBEWARD_BENCH_QUICK=1` (`scripts/bench --quick`): one delay and few rounds, to check that
/// the bench runs (and that fencing holds), not its figures.
fn quick() -> bool {
    std::env::var_os("KUBEWARD_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The watch delays measured.
fn delays() -> Vec<Duration> {
    let ms = if quick() {
        vec![250]
    } else {
        vec![0, 250, 1_000]
    };
    ms.into_iter().map(Duration::from_millis).collect()
}

/// Rounds of changes per run: 30 (90 changes), or 3 with `KUBEWARD_BENCH_QUICK=1`.
fn rounds() -> usize {
    if quick() { 3 } else { 30 }
}

/// Runs `side` at `delay` through both workloads.
async fn measure(cp: &ControlPlane, side: Side, delay: Duration) -> anyhow::Result<Cell> {
    let mut cell = Cell::default();
    for workload in [Workload::Copier, Workload::Recorder] {
        let prefix = format!("stale-{side:?}-{workload:?}-{}", delay.as_millis());
        let ns = cp.create_namespace(&prefix.to_lowercase()).await?;
        let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
        let log = Arc::new(Log::default());
        let started = tokio::time::Instant::now();
        let before = server::conflicts_so_far(&cp.client()).await?;
        let drive = workload::drive(&api, rounds(), &log);
        let writes = sides::with_side(side, cp, &ns, delay, workload, &log, drive).await?;
        cell.conflicts += server::conflicts_so_far(&cp.client())
            .await?
            .saturating_sub(before);
        if workload == Workload::Copier {
            cell.duplicates = server::duplicates(&api).await?;
        }
        cell.reconciles += log.reconciles.load(Ordering::Relaxed);
        cell.updates += writes.len();
        let latencies = workload::latencies(&writes, &log);
        eprintln!(
            "{delay:?} {} {workload:?}: {} reconciles for {} writes, p99 {:?}, run {:?}",
            side.label(),
            log.reconciles.load(Ordering::Relaxed),
            writes.len(),
            table::p99(&latencies),
            started.elapsed()
        );
        match workload {
            Workload::Copier => cell.copier = latencies,
            Workload::Recorder => cell.recorder = latencies,
        }
    }
    Ok(cell)
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let starting = tokio::time::Instant::now();
        let cp = ControlPlane::start().await?;
        eprintln!("control plane up in {:?}", starting.elapsed());
        let mut rows = Vec::new();
        for delay in delays() {
            for side in Side::ALL {
                let cell = measure(&cp, side, delay).await?;
                rows.push((delay, side, cell));
            }
        }
        table::print(&rows, rounds());
        let stale: Vec<_> = rows
            .iter()
            .filter(|(_, side, cell)| *side == Side::Fenced && cell.stale())
            .map(|(delay, _, _)| format!("{} ms", delay.as_millis()))
            .collect();
        anyhow::ensure!(
            stale.is_empty(),
            "fenced reads made duplicates or met conflicts at {}",
            stale.join(", ")
        );
        Ok(())
    })
}
