//! A plan of N objects beside one resync pass of the same operator, on the local control plane.
//!
//! The operator copies each ConfigMap labelled `role=source` into a Secret it owns (server-side
//! applied through the reconcile kit, skipped when the cache shows it unchanged). Once the
//! copies exist, a fresh manager's first pass (informers synced, every source reconciled once,
//! nothing written: a resync pass after a restart) is timed against a fresh manager's
//! `Manager::plan` (informers synced, every source reconciled once with dry-run writes, the plan
//! assembled), each several times, medians printed. The target: a plan at most 1.2× the
//! pass. The pass's end is seen by polling the controller's metrics every 50 ms (the test kit's
//! `wait_for`), so it reads up to 50 ms long.
//!
//! `cargo bench -p kubeward --all-features --bench plan` (`KUBEWARD_BIN` names the control
//! plane's binaries; 1,000 sources, 200 with `KUBEWARD_BENCH_QUICK=1`).
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, ResourceExt as _};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::informer::CacheScope;
use kubeward::manager::{Config, Manager};
use kubeward::plan::Options;
use kubeward::testing::{ControlPlane, wait_for};
use tokio::time::Instant;

const NS: &str = "bench-plan";
const NAME: &str = "copier";
const ROUNDS: usize = 5;

fn sources() -> usize {
    let quick = std::env::var_os("KUBEWARD_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0");
    if quick { 200 } else { 1_000 }
}

/// Copies a source ConfigMap's data into the Secret `NAME-copy`.
struct Copier;

impl Reconciler<ConfigMap> for Copier {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> Result<Action, kubeward::Error> {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(format!("{}-copy", cm.name_any())),
                ..ObjectMeta::default()
            },
            string_data: None,
            data: Some(
                (cm.data.clone().unwrap_or_default().into_iter())
                    .map(|(k, v)| (k, k8s_openapi::ByteString(v.into_bytes())))
                    .collect(),
            ),
            ..Secret::default()
        };
        ctx.apply(&*cm, secret).await?;
        Ok(Action::await_change())
    }
}

fn manager(cp: &ControlPlane) -> anyhow::Result<Manager> {
    let scope = CacheScope::default()
        .namespaces([NS.to_owned()])
        .labels::<ConfigMap>("role=source");
    let manager = Manager::new(cp.client(), Config::default().cache(scope))?;
    manager.add(Controller::new(Copier).name(NAME).owns::<Secret>())?;
    Ok(manager)
}

/// A fresh manager's first pass: from its start until it has reconciled every source and its
/// queue is empty.
async fn resync_pass(cp: &ControlPlane, n: usize) -> anyhow::Result<Duration> {
    let manager = manager(cp)?;
    let registry = manager.registry().clone();
    let token = manager.shutdown_token();
    let started = Instant::now();
    let run = tokio::spawn(manager.run());
    let read = |family: &str, label: (&str, &str)| {
        registry
            .gather()
            .into_iter()
            .filter(|f| f.name() == family)
            .flat_map(|f| f.get_metric().to_vec())
            .filter(|m| m.get_label().iter().any(|l| (l.name(), l.value()) == label))
            .map(|m| m.get_counter().get_value() + m.get_gauge().get_value())
            .sum::<f64>()
    };
    wait_for(
        Duration::from_secs(300),
        "a pass over every source",
        || async {
            let reconciled = read("controller_runtime_reconcile_total", ("controller", NAME));
            let depth = read("workqueue_depth", ("name", NAME));
            let busy = read("controller_runtime_active_workers", ("controller", NAME));
            (reconciled >= n as f64 && depth == 0.0 && busy == 0.0).then_some(())
        },
    )
    .await?;
    let took = started.elapsed();
    token.cancel();
    run.await??;
    Ok(took)
}

async fn plan(cp: &ControlPlane, n: usize) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let plan = manager(cp)?.plan(Options::default()).await?;
    let took = started.elapsed();
    anyhow::ensure!(
        plan.reconciled == n && !plan.has_changes() && plan.failures.is_empty(),
        "a plan of the converged copies should reconcile {n} and change nothing:\n{plan}"
    );
    Ok(took)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n = sources();
    let cp = ControlPlane::start().await?;
    let client = cp.client();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let mut ns = k8s_openapi::api::core::v1::Namespace::default();
    ns.metadata.name = Some(NS.to_owned());
    namespaces.create(&PostParams::default(), &ns).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    futures::stream::iter(0..n)
        .map(|i| {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("source-{i:05}")),
                    labels: Some(BTreeMap::from([("role".to_owned(), "source".to_owned())])),
                    ..ObjectMeta::default()
                },
                data: Some(BTreeMap::from([("value".to_owned(), i.to_string())])),
                ..ConfigMap::default()
            };
            let cms = cms.clone();
            async move { cms.create(&PostParams::default(), &cm).await.map(drop) }
        })
        .buffer_unordered(16)
        .try_collect::<()>()
        .await?;
    // The first pass writes the copies; the passes timed after it write nothing.
    resync_pass(&cp, n).await?;
    let (mut passes, mut plans) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        passes.push(resync_pass(&cp, n).await?);
        plans.push(plan(&cp, n).await?);
    }
    let (pass, plan) = (median(passes), median(plans));
    println!("## Plan mode\n");
    println!(
        "A plan of N objects beside one resync pass of the same operator (a fresh manager's \
         first pass, nothing to write), local control plane, median of {ROUNDS}.\n"
    );
    println!("| objects | resync pass | plan | plan / pass |");
    println!("| ---: | ---: | ---: | ---: |");
    println!(
        "| {n} | {:.0} ms | {:.0} ms | {:.2} |",
        pass.as_secs_f64() * 1000.0,
        plan.as_secs_f64() * 1000.0,
        plan.as_secs_f64() / pass.as_secs_f64()
    );
    Ok(())
}
