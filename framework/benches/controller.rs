//! No-op reconcile throughput must not fall as slow reconciles pile up in flight.
//!
//! Workload: `parked` ConfigMaps whose reconciles wait for a signal (slow work in flight), then
//! `FAST` ConfigMaps created at once whose reconciles return at once; the time from their creation
//! until every fast reconcile finished gives the throughput. It runs with 0, 1,000 and 10,000
//! parked and with 1 and 8 slots for the fast work (concurrency `parked` + 1 or + 8), for
//! kubeward's `Controller` and kube-runtime's, against the same in-memory fake API server, on the
//! same runtime, so the difference is the controller machinery (the fake's watch fan-out is in both).
//! kube-runtime rescans its in-flight set as reconciles finish, so its time grows with what is parked.
//!
//! `cargo bench -p kubeward --all-features --bench controller` prints a markdown table;
//! `-- CONCURRENCY PARKED` runs one row only (to profile it), e.g. `-- 8 0`.
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube::runtime::controller::{
    Action as KrAction, Config as KrConfig, Controller as KrController,
};
use kube::runtime::watcher;
use kube::{Api, ResourceExt as _};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::manager::{Config, Manager};
use kubeward::testing::FakeApiServer;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const FAST: usize = 100_000;
const PARKED: [usize; 3] = [0, 1_000, 10_000];
const CONCURRENCY: [usize; 2] = [1, 8];
const TIMEOUT: Duration = Duration::from_secs(180);

/// Counts parked and fast reconciles; parked ones wait for `release`.
#[derive(Default)]
struct Load {
    parked: AtomicUsize,
    fast: AtomicUsize,
    fast_done: Notify,
    parked_in: Notify,
    release: CancellationToken,
}

impl Load {
    async fn reconcile(&self, name: &str, parked_target: usize) {
        if name.starts_with("parked") {
            if self.parked.fetch_add(1, Ordering::SeqCst) + 1 == parked_target {
                self.parked_in.notify_one();
            }
            self.release.cancelled().await;
        } else if self.fast.fetch_add(1, Ordering::SeqCst) + 1 == FAST {
            self.fast_done.notify_one();
        }
    }
}

#[derive(Clone)]
struct Ours(Arc<Load>, usize);

fn slots(parked: usize, concurrency: usize) -> u16 {
    u16::try_from(parked + concurrency).unwrap_or(u16::MAX)
}

impl Reconciler<ConfigMap> for Ours {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _ctx: &Context<ConfigMap>,
    ) -> Result<Action, Self::Error> {
        self.0.reconcile(&cm.name_any(), self.1).await;
        Ok(Action::await_change())
    }
}

fn config_map(name: String) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        data: Some([("k".to_owned(), "v".to_owned())].into()),
        ..ConfigMap::default()
    }
}

fn seed(fake: &FakeApiServer, prefix: &str, n: usize) {
    for i in 0..n {
        fake.seed(&config_map(format!("{prefix}-{i}")))
            .expect("the fake stores ConfigMaps");
    }
}

/// Parks `parked` reconciles, then times `FAST` fresh ones; `start` runs the controller.
async fn measure(parked: usize, start: impl FnOnce(FakeApiServer, Arc<Load>)) -> Option<Duration> {
    let fake = FakeApiServer::new().with_history_limit(FAST * 2);
    fake.register::<ConfigMap>();
    seed(&fake, "parked", parked);
    let load = Arc::new(Load::default());
    let parked_in = load.parked_in.notified();
    start(fake.clone(), Arc::clone(&load));
    if parked > 0 {
        tokio::time::timeout(TIMEOUT, parked_in).await.ok()?;
    }
    let done = load.fast_done.notified();
    let started = tokio::time::Instant::now();
    seed(&fake, "fast", FAST);
    let finished = tokio::time::timeout(TIMEOUT, done)
        .await
        .ok()
        .map(|()| started.elapsed());
    load.release.cancel();
    finished
}

async fn kubeward(parked: usize, concurrency: usize) -> Option<Duration> {
    let stop = CancellationToken::new();
    let stopper = stop.clone();
    let elapsed = measure(parked, move |fake, load| {
        let manager = Manager::new(fake.client(), Config::default());
        manager.add(Controller::new(Ours(load, parked)).concurrency(slots(parked, concurrency)));
        let token = manager.shutdown_token();
        tokio::spawn(async move {
            stopper.cancelled().await;
            token.cancel();
        });
        tokio::spawn(manager.run());
    })
    .await;
    stop.cancel();
    elapsed
}

async fn kube_runtime(parked: usize, concurrency: usize) -> Option<Duration> {
    let task = Arc::new(parking_lot::Mutex::new(None));
    let slot = Arc::clone(&task);
    let elapsed = measure(parked, move |fake, load| {
        let api: Api<ConfigMap> = Api::all(fake.client());
        let config = KrConfig::default().concurrency(slots(parked, concurrency));
        let run = KrController::new(api, watcher::Config::default())
            .with_config(config)
            .run(
                move |cm: Arc<ConfigMap>, load: Arc<Load>| async move {
                    load.reconcile(&cm.name_any(), parked).await;
                    Ok::<_, std::convert::Infallible>(KrAction::await_change())
                },
                |_, _, _| KrAction::await_change(),
                load,
            );
        *slot.lock() = Some(tokio::spawn(run.for_each(|_| async {})));
    })
    .await;
    if let Some(task) = task.lock().take() {
        task.abort();
    }
    elapsed
}

/// Reconciles per second, or the timeout.
fn show(d: Option<Duration>) -> String {
    d.map_or_else(
        || format!("< {:.0}/s", FAST as f64 / TIMEOUT.as_secs_f64()),
        |d| format!("{:.0}/s", FAST as f64 / d.as_secs_f64()),
    )
}

/// How many times faster `ours` finished than `theirs`.
fn ratio(ours: Option<Duration>, theirs: Option<Duration>) -> String {
    match (ours, theirs) {
        (Some(a), Some(b)) => format!("{:.2}×", b.as_secs_f64() / a.as_secs_f64()),
        (Some(_), None) => format!("> {:.0}×", TIMEOUT.as_secs_f64()),
        _ => "–".into(),
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        println!("## Reconcile throughput");
        println!();
        println!(
            "{FAST} no-op reconciles of freshly created ConfigMaps, with slow reconciles parked in flight, on an in-memory fake API server ({} cores); reconciles per second.",
            std::thread::available_parallelism().map_or(1, usize::from)
        );
        println!();
        println!("| concurrency | parked | kubeward | kube-runtime | kubeward vs kube-runtime |");
        println!("| ---: | ---: | ---: | ---: | ---: |");
        let only: Vec<usize> = std::env::args().filter_map(|a| a.parse().ok()).collect();
        for concurrency in CONCURRENCY {
            for parked in PARKED {
                if only.len() == 2 && only != [concurrency, parked] {
                    continue;
                }
                let ours = kubeward(parked, concurrency).await;
                let theirs = kube_runtime(parked, concurrency).await;
                println!(
                    "| {concurrency} | {parked} | {} | {} | {} |",
                    show(ours),
                    show(theirs),
                    ratio(ours, theirs)
                );
            }
        }
    });
}
