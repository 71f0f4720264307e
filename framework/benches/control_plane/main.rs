//! Benchmarks against the real local control plane: initial sync, shared watches, event latency.
//!
//! Starts etcd + kube-apiserver (`KUBEWARD_BIN`), creates 10,000 ConfigMaps in one namespace and
//! 40,000 in another (concurrently, once per run), then runs the sections named on the command
//! line (`sync`, `watches`, `latency`; all when none is named) and prints a markdown table each,
//! with kube-runtime and, for the sync, a raw paginated list measured in the same run.
//!
//! `cargo bench -p kubeward --all-features --bench control_plane [-- SECTION...]`
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::must_use_candidate
)]

mod latency;
mod stamp;
mod sync;
mod watches;

use std::time::Duration;

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use kubeward::testing::ControlPlane;
use peak_alloc::PeakAlloc;

#[global_allocator]
static HEAP: PeakAlloc = PeakAlloc;

/// The namespace with [`small`] ConfigMaps.
pub const SMALL_NS: &str = "bench-10k";
/// The namespace with the other [`large`] - [`small`] ConfigMaps.
const REST_NS: &str = "bench-40k";
/// ConfigMaps in `SMALL_NS`: 10,000, or 500 with `KUBEWARD_BENCH_QUICK=1`.
pub fn small() -> usize {
    if quick() { 500 } else { 10_000 }
}

/// ConfigMaps in both namespaces: 50,000, or 1,500 with `KUBEWARD_BENCH_QUICK=1`.
pub fn large() -> usize {
    if quick() { 1_500 } else { 50_000 }
}

/// `KUBEWARD_BENCH_QUICK=1` (`scripts/bench --quick`): every section on a reduced workload, to
/// check that the bench runs, not its figures.
pub fn quick() -> bool {
    std::env::var_os("KUBEWARD_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

/// A ConfigMap of about 300 bytes of JSON, like a small settings file.
pub fn config_map(namespace: &str, name: String) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.into()),
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
    }
}

/// Creates `n` ConfigMaps in a new namespace `ns`, 64 requests at a time.
async fn populate(client: &Client, ns: &str, n: usize) -> anyhow::Result<()> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let namespace = k8s_openapi::api::core::v1::Namespace {
        metadata: ObjectMeta {
            name: Some(ns.into()),
            ..ObjectMeta::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &config_map(ns, format!("cm-{i}")))
                    .await
                    .map(drop)
            }
        })
        .buffer_unordered(64)
        .try_collect::<()>()
        .await
        .with_context(|| format!("creating {n} ConfigMaps in {ns}"))
}

/// The median of `samples` (sorted in place).
pub fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// Milliseconds with a useful precision.
pub fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// Live heap bytes of this process.
pub fn heap() -> usize {
    HEAP.current_usage()
}

fn main() -> anyhow::Result<()> {
    let mut sections: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if sections.is_empty() {
        sections = vec!["sync".into(), "watches".into(), "latency".into()];
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let cp = ControlPlane::start().await?;
        let client = cp.client();
        let seeding = tokio::time::Instant::now();
        if sections.iter().any(|s| s == "sync" || s == "watches") {
            populate(&client, SMALL_NS, small()).await?;
        }
        if sections.iter().any(|s| s == "sync") {
            populate(&client, REST_NS, large() - small()).await?;
        }
        eprintln!("created the ConfigMaps in {:?}", seeding.elapsed());
        for section in &sections {
            match section.as_str() {
                "sync" => sync::run(&cp).await?,
                "watches" => watches::run(&cp).await?,
                "latency" => latency::run(&cp).await?,
                other => anyhow::bail!("unknown section {other} (have sync, watches, latency)"),
            }
            println!();
        }
        Ok(())
    })
}
