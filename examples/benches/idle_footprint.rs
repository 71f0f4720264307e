//! Idle footprint: resident memory of the example operator at rest, with and without objects.
//!
//! Starts the local control plane, creates 10,000 ConfigMaps in one namespace, and runs the
//! `configmap_generator` binary twice: watching an empty namespace (the fixed cost) and watching
//! the full one (it owns ConfigMaps, so it caches them all). Each run waits for `/readyz`, lets the
//! process sit 10 s, and reads `VmRSS` from `/proc`. The raw JSON of the same list is the
//! yardstick for the per-object cost.
//!
//! `cargo bench -p kubeward-examples --bench idle_footprint` prints a markdown table.
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss
)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::testing::{ControlPlane, free_addr, get, install_crd, resident_bytes, wait_for};
use kubeward_examples::configmap_generator::ConfigMapGenerator;

/// ConfigMaps cached: 10,000, or 500 with `KUBEWARD_BENCH_QUICK=1` (`scripts/bench --quick`,
/// which checks that the bench runs, not its figures).
fn objects() -> usize {
    if quick() { 500 } else { 10_000 }
}

/// How long the operator rests before its memory is read: 10 s, or 2 s when quick.
fn rest() -> Duration {
    Duration::from_secs(if quick() { 2 } else { 10 })
}

fn quick() -> bool {
    std::env::var_os("KUBEWARD_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}
const WRITERS: usize = 64;

/// Kills the operator when dropped.
struct Operator(Child);

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn namespace(cp: &ControlPlane, name: &str) -> anyhow::Result<()> {
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    Api::<Namespace>::all(cp.client())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

async fn populate(cp: &ControlPlane, ns: &str) -> anyhow::Result<()> {
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..WRITERS {
        let api: Api<ConfigMap> = Api::namespaced(cp.client(), ns);
        writers.spawn(async move {
            for i in (w..objects()).step_by(WRITERS) {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(format!("cm-{i}")),
                        labels: Some([("app".to_owned(), "bench".to_owned())].into()),
                        ..ObjectMeta::default()
                    },
                    data: Some(
                        [
                            ("mode".to_owned(), "fast".to_owned()),
                            (
                                "endpoint".to_owned(),
                                "https://example.invalid:8443/v1".to_owned(),
                            ),
                        ]
                        .into(),
                    ),
                    ..ConfigMap::default()
                };
                api.create(&PostParams::default(), &cm).await?;
            }
            Ok::<_, kube::Error>(())
        });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok(())
}

/// The operator's resident bytes after it synced `ns` and rested.
async fn operator_rss(cp: &ControlPlane, ns: &str) -> anyhow::Result<u64> {
    let probes = free_addr()?;
    let child = Command::new(env!("CARGO_BIN_EXE_configmap_generator"))
        .args(["--namespace", ns])
        .args(["--metrics-bind-address", &free_addr()?.to_string()])
        .args(["--health-probe-bind-address", &probes.to_string()])
        .env("KUBECONFIG", cp.kubeconfig())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()?;
    let operator = Operator(child);
    wait_for(
        Duration::from_secs(120),
        "the operator's /readyz to turn 200",
        || async {
            get(probes, "/readyz")
                .await
                .ok()?
                .status()
                .is_success()
                .then_some(())
        },
    )
    .await?;
    tokio::time::sleep(rest()).await;
    Ok(resident_bytes(operator.0.id())?)
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let cp = ControlPlane::start().await?;
        install_crd::<ConfigMapGenerator>(cp.client()).await?;
        namespace(&cp, "idle-empty").await?;
        namespace(&cp, "idle-full").await?;
        populate(&cp, "idle-full").await?;
        let raw = cp
            .client()
            .request_text(http::Request::get("/api/v1/namespaces/idle-full/configmaps").body(Vec::new())?)
            .await?
            .len();
        let empty = operator_rss(&cp, "idle-empty").await?;
        let full = operator_rss(&cp, "idle-full").await?;
        let per_object = full.saturating_sub(empty) as f64 / objects() as f64;
        println!("## Idle footprint");
        println!();
        println!(
            "Resident memory (VmRSS) of the example operator `configmap_generator`, {} s after /readyz turned 200; the raw list JSON of the same ConfigMaps for scale.",
            rest().as_secs()
        );
        println!();
        println!("| | resident | per ConfigMap |");
        println!("| --- | ---: | ---: |");
        println!("| operator, empty namespace | {:.1} MB | |", empty as f64 / 1e6);
        println!(
            "| operator, {} ConfigMaps cached | {:.1} MB | {:.0} B over empty |",
            objects(),
            full as f64 / 1e6,
            per_object
        );
        println!(
            "| raw list JSON of the {} ConfigMaps | {:.1} MB | {:.0} B |",
            objects(),
            raw as f64 / 1e6,
            raw as f64 / objects() as f64
        );
        println!("| cached / raw JSON | | {:.2}× |", per_object / (raw as f64 / objects() as f64));
        Ok(())
    })
}
