//! Latency from a watch event's arrival to the start of its reconcile, kubeward vs kube-runtime.
//!
//! Arrival: the instant the HTTP body frame carrying the event is handed up by hyper to kube's
//! client, before any decoding ([`crate::stamp`]). Start: the first statement of the reconcile.
//! One ConfigMap is patched `SAMPLES` times with a new `seq` in its data, each patch waiting until
//! the reconcile for the previous one started, so the span is the machinery's, not a backlog's.
//! Both controllers run with concurrency 1 on the same stamping client type.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::{
    Action as KrAction, Config as KrConfig, Controller as KrController,
};
use kube::runtime::watcher;
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::informer::CacheScope;
use kubeward::manager::{Config, Manager};
use kubeward::testing::ControlPlane;
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::ms;
use crate::stamp::{self, Arrivals};

/// Updates timed: 1,000, or 50 with `KUBEWARD_BENCH_QUICK=1`.
fn samples() -> u64 {
    if crate::quick() { 50 } else { 1_000 }
}
const NS: &str = "bench-latency";
const TIMEOUT: Duration = Duration::from_secs(30);

/// Reconcile starts by sequence number; `latest` tells the driver which seq last started.
struct Starts {
    at: Mutex<Vec<(u64, Instant)>>,
    latest: watch::Sender<u64>,
}

impl Starts {
    fn record(&self, cm: &ConfigMap) {
        let now = Instant::now();
        let seq = cm
            .data
            .as_ref()
            .and_then(|d| d.get("seq")?.parse().ok())
            .unwrap_or(0);
        self.at.lock().push((seq, now));
        self.latest.send_replace(seq);
    }
}

#[derive(Clone)]
struct Recorder(Arc<Starts>);

impl Reconciler<ConfigMap> for Recorder {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _: &Context<ConfigMap>,
    ) -> Result<Action, Self::Error> {
        self.0.record(&cm);
        Ok(Action::await_change())
    }
}

/// Patches the ConfigMap `SAMPLES` times; returns each seq's arrival → reconcile-start span.
async fn drive(
    cp: &ControlPlane,
    arrivals: &Arrivals,
    starts: &Starts,
) -> anyhow::Result<Vec<Duration>> {
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), NS);
    let mut latest = starts.latest.subscribe();
    tokio::time::timeout(TIMEOUT, latest.wait_for(|s| *s == 0)).await??;
    let mut spans = Vec::new();
    for seq in 1..=samples() {
        let patch = json!({ "data": { "seq": seq.to_string() } });
        api.patch("lat", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        tokio::time::timeout(TIMEOUT, latest.wait_for(|s| *s >= seq)).await??;
        let started = starts
            .at
            .lock()
            .iter()
            .find(|(s, _)| *s == seq)
            .map(|(_, at)| *at);
        if let (Some(arrived), Some(started)) = (arrivals.of(seq), started) {
            spans.push(started.saturating_duration_since(arrived));
        }
    }
    anyhow::ensure!(
        spans.len() as u64 == samples(),
        "only {} of {} events were stamped",
        spans.len(),
        samples()
    );
    // Reset for the next contender.
    api.patch(
        "lat",
        &PatchParams::default(),
        &Patch::Merge(&json!({ "data": { "seq": "0" } })),
    )
    .await?;
    Ok(spans)
}

fn starts() -> Arc<Starts> {
    Arc::new(Starts {
        at: Mutex::new(Vec::new()),
        latest: watch::channel(u64::MAX).0,
    })
}

async fn kubeward(cp: &ControlPlane) -> anyhow::Result<Vec<Duration>> {
    let arrivals = Arc::new(Arrivals::default());
    let starts = starts();
    let client = stamp::client(cp.client(), Arc::clone(&arrivals));
    let manager = Manager::new(
        client,
        Config::default().cache(CacheScope::default().namespaces([NS])),
    )?;
    manager.add(Controller::new(Recorder(Arc::clone(&starts))).concurrency(1))?;
    let stop = manager.shutdown_token();
    let running = tokio::spawn(manager.run());
    let spans = drive(cp, &arrivals, &starts).await;
    stop.cancel();
    running.await??;
    spans
}

async fn kube_runtime(cp: &ControlPlane) -> anyhow::Result<Vec<Duration>> {
    let arrivals = Arc::new(Arrivals::default());
    let starts = starts();
    let client = stamp::client(cp.client(), Arc::clone(&arrivals));
    let api: Api<ConfigMap> = Api::namespaced(client, NS);
    let run = KrController::new(api, watcher::Config::default())
        .with_config(KrConfig::default().concurrency(1))
        .run(
            |cm: Arc<ConfigMap>, starts: Arc<Starts>| async move {
                starts.record(&cm);
                Ok::<_, std::convert::Infallible>(KrAction::await_change())
            },
            |_, _, _| KrAction::await_change(),
            Arc::clone(&starts),
        );
    let task = tokio::spawn(run.for_each(|_| async {}));
    let spans = drive(cp, &arrivals, &starts).await;
    task.abort();
    let _ = task.await;
    spans
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

pub async fn run(cp: &ControlPlane) -> anyhow::Result<()> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cp.client());
    let mut namespace = k8s_openapi::api::core::v1::Namespace::default();
    namespace.metadata.name = Some(NS.into());
    namespaces
        .create(&PostParams::default(), &namespace)
        .await?;
    let mut lat = crate::config_map(NS, "lat".into());
    lat.data = Some([("seq".to_owned(), "0".to_owned())].into());
    Api::<ConfigMap>::namespaced(cp.client(), NS)
        .create(&PostParams::default(), &lat)
        .await?;

    let mut ours = kubeward(cp).await?;
    let mut theirs = kube_runtime(cp).await?;
    ours.sort_unstable();
    theirs.sort_unstable();
    println!("## Event latency");
    println!();
    println!(
        "From a watch event's bytes reaching the client to the start of its reconcile, {} updates of one ConfigMap, one at a time, local control plane.",
        samples()
    );
    println!();
    println!("| controller | p50 | p99 | max |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, spans) in [("kubeward", &ours), ("kube-runtime", &theirs)] {
        println!(
            "| {name} | {} | {} | {} |",
            ms(percentile(spans, 0.5)),
            ms(percentile(spans, 0.99)),
            ms(percentile(spans, 1.0))
        );
    }
    Ok(())
}
