//! No-op reconcile throughput, kubeward vs kube-runtime, with slow reconciles parked in flight.
//!
//! Two workloads, each with 0, 1,000 and 10,000 reconciles parked (waiting for a signal) and 1
//! or 8 slots for the fast work (concurrency `parked` + 1 or + 8), for kubeward's `Controller`
//! and kube-runtime's on the same in-memory fake API server and runtime:
//! - [`watch`]: `FAST` ConfigMaps created at once, each reconciled from its watch event: the
//!   objects are made while the watch is paused, so the figures hold both sides' event
//!   decoding but not the fake's writing of the objects.
//! - [`keys`]: `FAST` keys of cached ConfigMaps sent on a stream (`reconcile_on` on both sides):
//!   only the controller machinery — queue, workers, cache read, the reconcile call.
//!
//! kube-runtime rescans its in-flight set as reconciles finish, so its time grows with what is parked.
//!
//! `cargo bench -p kubeward --all-features --bench controller` prints the markdown tables;
//! `-- CONCURRENCY PARKED` runs one row of each only and `-- keys` or `-- watch` one table only
//! (to profile them), e.g. `-- keys 8 0`; `-- ours` leaves kube-runtime's side out; `-- fencing`
//! runs only the table of read-your-writes' cost with nothing pending ([`fencing`]).
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

mod fencing;
mod floor;
mod keys;
mod watch;

use std::future::Future;
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

const CONCURRENCY: [usize; 2] = [1, 8];

/// `KUBEWARD_BENCH_QUICK=1` (`scripts/bench --quick`): 300 fast reconciles, at most 20 parked:
/// checks that the bench runs (in a debug build), not its figures.
fn quick() -> bool {
    std::env::var_os("KUBEWARD_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Fast reconciles timed per row.
fn fast() -> usize {
    if quick() { 300 } else { 100_000 }
}

/// Reconciles parked in flight, per row.
fn parked_rows() -> &'static [usize] {
    if quick() {
        &[0, 100]
    } else {
        &[0, 1_000, 10_000]
    }
}
const TIMEOUT: Duration = Duration::from_secs(180);

/// Counts parked and fast reconciles; parked ones wait for `release`, and `fast_done` is
/// notified when the fast count reaches `fast_target`.
struct Load {
    parked_target: usize,
    parked: AtomicUsize,
    fast: AtomicUsize,
    fast_target: AtomicUsize,
    fast_done: Notify,
    parked_in: Notify,
    release: CancellationToken,
}

impl Load {
    fn new(parked_target: usize, fast_target: usize) -> Arc<Self> {
        Arc::new(Self {
            parked_target,
            parked: AtomicUsize::new(0),
            fast: AtomicUsize::new(0),
            fast_target: AtomicUsize::new(fast_target),
            fast_done: Notify::new(),
            parked_in: Notify::new(),
            release: CancellationToken::new(),
        })
    }

    async fn reconcile(&self, name: &str) {
        if name.starts_with("parked") {
            if self.parked.fetch_add(1, Ordering::SeqCst) + 1 == self.parked_target {
                self.parked_in.notify_one();
            }
            self.release.cancelled().await;
        } else if self.fast.fetch_add(1, Ordering::SeqCst) + 1
            == self.fast_target.load(Ordering::SeqCst)
        {
            self.fast_done.notify_one();
        }
    }

    /// Waits until every parked reconcile is in flight (a timeout gives `None`).
    async fn parked_in_flight(&self) -> Option<()> {
        if self.parked_target == 0 {
            return Some(());
        }
        tokio::time::timeout(TIMEOUT, self.parked_in.notified())
            .await
            .ok()
    }

    /// Runs `work`, then waits for the fast count to reach `target`: the time taken, or `None`.
    async fn time_until(&self, target: usize, work: impl FnOnce()) -> Option<Timed> {
        self.fast_target.store(target, Ordering::SeqCst);
        let done = self.fast_done.notified();
        let cpu_before = cpu_time();
        let started = tokio::time::Instant::now();
        work();
        tokio::time::timeout(TIMEOUT, done).await.ok()?;
        let wall = started.elapsed();
        let cpu = cpu_time()
            .zip(cpu_before)
            .map(|(after, before)| after.saturating_sub(before));
        Some(Timed { wall, cpu })
    }
}

/// A timed row: its wall-clock time, and the CPU time the whole process used meanwhile (on
/// every thread; `None` if `/proc` could not be read).
#[derive(Clone, Copy)]
struct Timed {
    wall: Duration,
    cpu: Option<Duration>,
}

/// The CPU time this process has used so far (in the kernel's 10 ms ticks).
fn cpu_time() -> Option<Duration> {
    kubeward::testing::cpu_time(std::process::id()).ok()
}

/// kubeward's reconciler over a `Load`.
#[derive(Clone)]
struct Ours(Arc<Load>);

impl Reconciler<ConfigMap> for Ours {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _ctx: &Context<ConfigMap>,
    ) -> Result<Action, Self::Error> {
        self.0.reconcile(&cm.name_any()).await;
        Ok(Action::await_change())
    }
}

/// kube-runtime's reconciler over a `Load`.
async fn theirs(
    cm: Arc<ConfigMap>,
    load: Arc<Load>,
) -> Result<kube::runtime::controller::Action, std::convert::Infallible> {
    load.reconcile(&cm.name_any()).await;
    Ok(kube::runtime::controller::Action::await_change())
}

/// Stops a controller started by [`start_ours`] or [`start_theirs`].
struct Stop {
    cancel: Box<dyn FnOnce() + Send>,
    /// The runtime's live tasks before the controller started.
    tasks_before: usize,
}

impl Stop {
    /// `tasks_before`: [`live_tasks`] read before the controller's task was spawned.
    fn new(tasks_before: usize, cancel: impl FnOnce() + Send + 'static) -> Self {
        Stop {
            cancel: Box::new(cancel),
            tasks_before,
        }
    }

    /// Stops the controller and waits until its tasks are gone: a cancelled task is dropped, and
    /// its objects freed, only when the runtime next gets to it, so without the wait the next
    /// row's clock would run while this row's 100,000 objects are being freed.
    async fn wait(self) {
        (self.cancel)();
        let before = self.tasks_before;
        let gone = kubeward::testing::wait_for(TIMEOUT, "the row's tasks to end", || {
            let done = live_tasks() <= before;
            async move { done.then_some(()) }
        })
        .await;
        if let Err(err) = gone {
            eprintln!("{err}; the next row may be timed while this one's state is freed");
        }
    }
}

fn live_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Runs kubeward's controller over `load` on the fake, `slots` reconciles at once, as `with`
/// completes it.
fn start_ours(
    fake: &FakeApiServer,
    load: Arc<Load>,
    slots: u16,
    with: impl FnOnce(Controller<ConfigMap>) -> Controller<ConfigMap>,
) -> Stop {
    let manager = Manager::new(fake.client(), Config::default())
        .expect("a manager builds for a client given");
    manager
        .add(with(Controller::new(Ours(load)).concurrency(slots)))
        .expect("the manager takes it");
    let token = manager.shutdown_token();
    let tasks_before = live_tasks();
    tokio::spawn(manager.run());
    Stop::new(tasks_before, move || token.cancel())
}

/// Runs kube-runtime's controller over `load` on the fake, `slots` reconciles at once, as `with`
/// completes it.
fn start_theirs(
    fake: &FakeApiServer,
    load: Arc<Load>,
    slots: u16,
    with: impl FnOnce(KrController<ConfigMap>) -> KrController<ConfigMap>,
) -> Stop {
    let api: Api<ConfigMap> = Api::all(fake.client());
    let controller = KrController::new(api, watcher::Config::default())
        .with_config(KrConfig::default().concurrency(slots));
    let run = with(controller).run(theirs, |_, _, _| KrAction::await_change(), load);
    let tasks_before = live_tasks();
    let task = tokio::spawn(run.for_each(|_| async {}));
    Stop::new(tasks_before, move || task.abort())
}

fn slots(parked: usize, concurrency: usize) -> u16 {
    u16::try_from(parked + concurrency).unwrap_or(u16::MAX)
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

/// A fake API server with ConfigMaps `{prefix}-0` .. `{prefix}-{n-1}` for each `(prefix, n)`.
fn fake_with(sets: &[(&str, usize)]) -> FakeApiServer {
    let fake = FakeApiServer::new().with_history_limit(fast() * 2);
    fake.register::<ConfigMap>();
    for &(prefix, n) in sets {
        seed(&fake, prefix, n);
    }
    fake
}

fn seed(fake: &FakeApiServer, prefix: &str, n: usize) {
    for i in 0..n {
        fake.seed(&config_map(format!("{prefix}-{i}")))
            .expect("the fake stores ConfigMaps");
    }
}

/// Reconciles per second, or the timeout.
fn show(d: Option<Duration>) -> String {
    d.map_or_else(
        || format!("< {:.0}/s", fast() as f64 / TIMEOUT.as_secs_f64()),
        |d| format!("{:.0}/s", fast() as f64 / d.as_secs_f64()),
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

/// `-- ours` (to profile kubeward alone): kube-runtime's side is not run.
fn ours_only() -> bool {
    std::env::args().any(|a| a == "ours")
}

/// A floor's time (`None`: it could not be measured), on one thread: its CPU time too.
#[derive(Clone, Copy)]
struct Floor(Option<Duration>);

/// `part` / `whole`, as "1.23×"; "–" if either is missing.
fn times(part: Option<Duration>, whole: Option<Duration>) -> String {
    match (part, whole) {
        (Some(p), Some(w)) => format!("{:.2}×", p.as_secs_f64() / w.as_secs_f64()),
        _ => "–".into(),
    }
}

/// One table: every (concurrency, parked) row, or only the one named on the command line. With
/// a `floor` (the time to do only part of the work on one thread), three columns compare
/// kubeward with it: its rate, and kubeward's wall-clock and CPU time over the floor's.
async fn table<F, G>(
    mut ours: impl FnMut(usize, usize) -> F,
    mut theirs: impl FnMut(usize, usize) -> G,
    floor: Option<Floor>,
) where
    F: Future<Output = Option<Timed>>,
    G: Future<Output = Option<Timed>>,
{
    if floor.is_some() {
        println!(
            "| concurrency | parked | kubeward | kube-runtime | kubeward vs kube-runtime | decode floor | kubeward's time / the floor's | kubeward's CPU time / the floor's |"
        );
        println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    } else {
        println!("| concurrency | parked | kubeward | kube-runtime | kubeward vs kube-runtime |");
        println!("| ---: | ---: | ---: | ---: | ---: |");
    }
    let only: Vec<usize> = std::env::args().filter_map(|a| a.parse().ok()).collect();
    for concurrency in CONCURRENCY {
        for &parked in parked_rows() {
            if only.len() == 2 && only != [concurrency, parked] {
                continue;
            }
            let timed = ours(parked, concurrency).await;
            let b = if ours_only() {
                None
            } else {
                theirs(parked, concurrency).await.map(|t| t.wall)
            };
            let a = timed.map(|t| t.wall);
            let beside_floor = floor.map_or_else(String::new, |Floor(floor)| {
                let cpu = timed.and_then(|t| t.cpu);
                format!(
                    " {} | {} | {} |",
                    show(floor),
                    times(a, floor),
                    times(cpu, floor)
                )
            });
            println!(
                "| {concurrency} | {parked} | {} | {} | {} |{beside_floor}",
                show(a),
                show(b),
                ratio(a, b)
            );
        }
    }
    println!();
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    runtime.block_on(async {
        println!("## Reconcile throughput");
        println!();
        println!(
            "{} no-op reconciles with slow reconciles parked in flight, on an in-memory fake API server ({cores} cores); reconciles per second.",
            fast()
        );
        println!();
        let tables: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| a == "keys" || a == "watch" || a == "fencing")
            .collect();
        let wanted = |name: &str| tables.is_empty() || tables.iter().any(|t| t == name);
        if wanted("keys") {
            println!("### Keys sent on a stream to cached objects: the controller machinery alone");
            println!();
            table(keys::kubeward, keys::kube_runtime, None).await;
        }
        if wanted("watch") {
            println!("### Freshly created ConfigMaps, each from its watch event");
            println!();
            let floor = floor::decode();
            println!(
                "Decode floor: the same ADDED events' bytes decoded into `WatchEvent<ConfigMap>` and nothing else, single-threaded (fastest of 3), each object kept as a cache keeps it. Decoded and dropped at once instead (the allocator reusing warm memory, which no cache can): {}.",
                show(floor.dropped)
            );
            println!();
            table(watch::kubeward, watch::kube_runtime, Some(Floor(floor.kept))).await;
        }
        if wanted("fencing") {
            println!("### Read-your-writes with nothing pending");
            println!();
            fencing::table().await;
        }
    });
}
