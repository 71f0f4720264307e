//! The workers: the order keys are reconciled in, one reconcile per key at a time, requeues,
//! the error policy, and shutdown with a reconcile in flight.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use super::start;
use crate::controller::{self, Action, Cluster, Context, Controller, ErrorAction, Reconciler};
use crate::informer::Factory;
use crate::queue::rate_limiter::ExponentialBackoff;
use crate::testing::FakeApiServer;

/// What the probe saw, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    /// A reconcile of this object began, at this resourceVersion.
    Started(String, String),
    /// A reconcile of this object ended.
    Finished(String),
}

/// The error a probe's reconcile fails with when its script says so.
#[derive(Debug, thiserror::Error)]
#[error("the script says fail")]
struct Scripted;

/// What a reconcile returns, by object name and attempt (from 1).
type Script = fn(&str, usize) -> Result<Action, Scripted>;

/// A reconciler that reports each start and end, holds the objects it is told to until
/// released, and returns what its script says.
#[derive(Clone)]
struct Probe {
    seen: mpsc::UnboundedSender<(Seen, Instant)>,
    gates: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
    attempts: Arc<Mutex<HashMap<String, usize>>>,
    in_flight: Arc<Mutex<HashMap<String, usize>>>,
    /// The most reconciles of one object ever in flight at once.
    most_at_once: Arc<Mutex<usize>>,
    script: Script,
    /// Set when the controller's run returned, if a test watches for that.
    returned: Arc<AtomicBool>,
    /// Whether a reconcile ever ended after the run returned.
    late: Arc<AtomicBool>,
    /// The errors the policy was asked about, as `Debug`.
    judged: Arc<Mutex<Vec<String>>>,
    policy: ErrorAction,
}

/// The other end of a probe: what it saw.
struct Seeing(mpsc::UnboundedReceiver<(Seen, Instant)>);

fn probe(script: Script) -> (Probe, Seeing) {
    let (tx, rx) = mpsc::unbounded_channel();
    let probe = Probe {
        seen: tx,
        gates: Arc::default(),
        attempts: Arc::default(),
        in_flight: Arc::default(),
        most_at_once: Arc::default(),
        script,
        returned: Arc::default(),
        late: Arc::default(),
        judged: Arc::default(),
        policy: ErrorAction::Retry,
    };
    (probe, Seeing(rx))
}

#[allow(clippy::unnecessary_wraps)] // a `Script`, which may fail
fn succeed(_: &str, _: usize) -> Result<Action, Scripted> {
    Ok(Action::await_change())
}

impl Probe {
    /// Holds every reconcile of `name` until the returned gate gets a permit per reconcile.
    fn hold(&self, name: &str) -> Arc<Semaphore> {
        let gate = Arc::new(Semaphore::new(0));
        self.gates.lock().insert(name.to_owned(), Arc::clone(&gate));
        gate
    }

    fn report(&self, seen: Seen) {
        // The receiver lives as long as the test that reads it.
        let _ = self.seen.send((seen, Instant::now()));
    }
}

impl Reconciler<ConfigMap> for Probe {
    type Error = Scripted;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _: &Context<ConfigMap>,
    ) -> Result<Action, Scripted> {
        let name = cm.name_any();
        let attempt = {
            let mut attempts = self.attempts.lock();
            let n = attempts.entry(name.clone()).or_default();
            *n += 1;
            *n
        };
        {
            let mut in_flight = self.in_flight.lock();
            let n = in_flight.entry(name.clone()).or_default();
            *n += 1;
            let mut most = self.most_at_once.lock();
            *most = (*most).max(*n);
        }
        self.report(Seen::Started(
            name.clone(),
            cm.resource_version().unwrap_or_default(),
        ));
        let gate = self.gates.lock().get(&name).cloned();
        if let Some(gate) = gate {
            gate.acquire()
                .await
                .expect("the test never closes a gate")
                .forget();
        }
        *self.in_flight.lock().entry(name.clone()).or_default() -= 1;
        if self.returned.load(Ordering::SeqCst) {
            self.late.store(true, Ordering::SeqCst);
        }
        self.report(Seen::Finished(name.clone()));
        (self.script)(&name, attempt)
    }

    fn error_policy(
        &self,
        _: &ConfigMap,
        error: &controller::Error<Scripted>,
        _: &Context<ConfigMap>,
    ) -> ErrorAction {
        self.judged.lock().push(format!("{error:?}"));
        self.policy
    }
}

impl Seeing {
    /// The next thing the probe saw, and when.
    async fn next(&mut self) -> (Seen, Instant) {
        tokio::time::timeout(Duration::from_secs(10), self.0.recv())
            .await
            .expect("the probe sees something within 10 s")
            .expect("the probe lives as long as the test")
    }

    /// The next thing the probe saw, without when.
    async fn next_seen(&mut self) -> Seen {
        self.next().await.0
    }

    /// What else the probe saw, without waiting.
    fn rest(&mut self) -> Vec<Seen> {
        std::iter::from_fn(|| self.0.try_recv().ok().map(|(seen, _)| seen)).collect()
    }
}

fn fake() -> FakeApiServer {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    fake
}

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

async fn create(fake: &FakeApiServer, name: &str) -> ConfigMap {
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "default");
    api.create(&PostParams::default(), &config_map(name))
        .await
        .expect("create")
}

async fn touch(fake: &FakeApiServer, name: &str, n: usize) -> ConfigMap {
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "default");
    let change = json!({ "metadata": { "labels": { "touched": n.to_string() } } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&change))
        .await
        .expect("patch")
}

fn started(name: &str, resource_version: &str) -> Seen {
    Seen::Started(name.to_owned(), resource_version.to_owned())
}

fn finished(name: &str) -> Seen {
    Seen::Finished(name.to_owned())
}

/// Failed reconciles are not reported on the objects: these tests watch the queue.
fn quiet(probe: Probe) -> Controller<ConfigMap> {
    Controller::new(probe)
        .report_errors_as_events(false)
        .report_errors_on_status(false)
}

#[tokio::test]
async fn one_worker_reconciles_keys_in_the_order_they_were_queued() {
    let fake = fake();
    let (probe, mut seen) = probe(succeed);
    let gate = probe.hold("first");
    let running = start(&fake, quiet(probe).concurrency(1));
    running.synced().await;

    let first = create(&fake, "first").await;
    assert_eq!(
        seen.next_seen().await,
        started("first", &first.resource_version().unwrap_or_default())
    );
    // The only worker is busy: these wait, in the order they were created.
    let mut versions = Vec::new();
    for name in ["c", "a", "b"] {
        versions.push(
            create(&fake, name)
                .await
                .resource_version()
                .unwrap_or_default(),
        );
    }
    running.queued(3).await;
    gate.add_permits(1);

    assert_eq!(seen.next_seen().await, finished("first"));
    for (name, version) in ["c", "a", "b"].into_iter().zip(&versions) {
        assert_eq!(seen.next_seen().await, started(name, version));
        assert_eq!(seen.next_seen().await, finished(name));
    }
    running.stop().await;
}

#[tokio::test]
async fn changes_during_a_reconcile_wait_for_it_and_fold_into_one_more_pass_at_the_latest_state() {
    let fake = fake();
    let seeded = fake.seed(&config_map("busy")).expect("seed");
    let (probe, mut seen) = probe(succeed);
    let gate = probe.hold("busy");
    let most_at_once = Arc::clone(&probe.most_at_once);
    let running = start(&fake, quiet(probe).concurrency(2));

    assert_eq!(
        seen.next_seen().await,
        started("busy", &seeded.resource_version().unwrap_or_default())
    );
    let mut latest = String::new();
    for n in 0..3 {
        latest = touch(&fake, "busy", n)
            .await
            .resource_version()
            .unwrap_or_default();
    }
    // The watch delivers in order: once `other` is reconciled by the free worker, the three
    // changes of `busy` were queued before it.
    let other = create(&fake, "other").await;
    assert_eq!(
        seen.next_seen().await,
        started("other", &other.resource_version().unwrap_or_default())
    );
    assert_eq!(seen.next_seen().await, finished("other"));
    // `busy` changed while a worker is free: it is held back until its reconcile is done
    // (the probe counts reconciles of one object in flight at once).

    gate.add_permits(2);
    assert_eq!(seen.next_seen().await, finished("busy"));
    assert_eq!(seen.next_seen().await, started("busy", &latest));
    assert_eq!(seen.next_seen().await, finished("busy"));
    // Every pass is reported done before the next key is handed out; the queue reports a
    // key's `done` and a requeue of it under one lock, so once three passes are done, a
    // fourth would be waiting or handed out by now.
    let what = "three reconciles reported done";
    crate::testing::wait_for(Duration::from_secs(10), what, || async {
        (running.observations("workqueue_work_duration_seconds") == 3).then_some(())
    })
    .await
    .expect("the passes finish");
    assert_eq!(
        running.observations("workqueue_queue_duration_seconds"),
        3,
        "busy, other, busy were handed out, nothing more"
    );
    running.queued(0).await;
    assert_eq!(
        *most_at_once.lock(),
        1,
        "one reconcile of an object at a time"
    );
    running.stop().await;
    assert_eq!(seen.rest(), []);
}

#[tokio::test]
async fn a_requeue_reconciles_the_object_again_after_the_delay() {
    const DELAY: Duration = Duration::from_millis(300);
    let fake = fake();
    fake.seed(&config_map("poll")).expect("seed");
    let (probe, mut seen) = probe(|_, attempt| {
        Ok(match attempt {
            1 => Action::requeue(DELAY),
            _ => Action::await_change(),
        })
    });
    let running = start(&fake, quiet(probe));

    let (first, _) = seen.next().await;
    assert!(matches!(first, Seen::Started(..)), "{first:?}");
    let (_, done) = seen.next().await;
    let (again, at) = seen.next().await;
    assert!(matches!(again, Seen::Started(..)), "{again:?}");
    assert!(
        at.duration_since(done) >= DELAY,
        "requeued after {:?}, asked for {DELAY:?}",
        at.duration_since(done)
    );
    assert_eq!(seen.next_seen().await, finished("poll"));
    running.stop().await;
    assert_eq!(seen.rest(), [], "await_change asks for no third pass");
}

#[tokio::test]
async fn a_requeue_without_delay_goes_through_the_rate_limiter() {
    const BASE: Duration = Duration::from_millis(300);
    let fake = fake();
    fake.seed(&config_map("again")).expect("seed");
    let (probe, mut seen) = probe(|_, attempt| {
        Ok(match attempt {
            1 => Action::requeue(Duration::ZERO),
            _ => Action::await_change(),
        })
    });
    let controller = quiet(probe).rate_limiter(ExponentialBackoff::new(BASE, BASE * 10));
    let running = start(&fake, controller);

    seen.next().await;
    let (_, done) = seen.next().await;
    let (_, again) = seen.next().await;
    assert!(
        again.duration_since(done) >= BASE,
        "requeued after {:?}, the limiter's base delay is {BASE:?}",
        again.duration_since(done)
    );
    running.stop().await;
}

#[tokio::test]
async fn the_error_policy_sees_the_typed_error_and_its_delay_is_kept() {
    const DELAY: Duration = Duration::from_millis(300);
    let fake = fake();
    fake.seed(&config_map("flaky")).expect("seed");
    let (mut probe, mut seen) = probe(|_, attempt| match attempt {
        1 => Err(Scripted),
        _ => Ok(Action::await_change()),
    });
    probe.policy = ErrorAction::RetryAfter(DELAY);
    let judged = Arc::clone(&probe.judged);
    let running = start(&fake, quiet(probe));

    seen.next().await;
    let (_, failed) = seen.next().await;
    let (_, again) = seen.next().await;
    assert!(
        again.duration_since(failed) >= DELAY,
        "retried after {:?}, the policy said {DELAY:?}",
        again.duration_since(failed)
    );
    assert_eq!(seen.next_seen().await, finished("flaky"));
    assert_eq!(*judged.lock(), ["Reconcile(Scripted)"]);
    let errors = running.sample("controller_runtime_reconcile_errors_total", None);
    assert!((errors - 1.0).abs() < f64::EPSILON, "one error: {errors}");
    running.stop().await;
}

#[tokio::test]
async fn a_terminal_error_is_not_retried() {
    let fake = fake();
    fake.seed(&config_map("doomed")).expect("seed");
    let (mut probe, mut seen) = probe(|name, _| match name {
        "doomed" => Err(Scripted),
        _ => Ok(Action::await_change()),
    });
    probe.policy = ErrorAction::Terminal;
    // No backoff: a retry, if one came, would be queued before the marker created below.
    let controller = quiet(probe)
        .concurrency(1)
        .rate_limiter(ExponentialBackoff::new(Duration::ZERO, Duration::ZERO));
    let running = start(&fake, controller);

    seen.next().await;
    assert_eq!(seen.next_seen().await, finished("doomed"));
    let marker = create(&fake, "marker").await;
    assert_eq!(
        seen.next_seen().await,
        started("marker", &marker.resource_version().unwrap_or_default())
    );
    assert_eq!(seen.next_seen().await, finished("marker"));
    let terminal = running.sample("controller_runtime_terminal_reconcile_errors_total", None);
    assert!((terminal - 1.0).abs() < f64::EPSILON, "{terminal}");
    running.stop().await;
    assert_eq!(seen.rest(), []);
}

#[tokio::test]
async fn shutdown_lets_the_reconcile_in_flight_finish_and_starts_nothing_new() {
    let fake = fake();
    let seeded = fake.seed(&config_map("in-flight")).expect("seed");
    let (probe, mut seen) = probe(succeed);
    let gate = probe.hold("in-flight");
    let (returned, late) = (Arc::clone(&probe.returned), Arc::clone(&probe.late));
    let registry = prometheus::Registry::new();
    let metrics = crate::metrics::Metrics::new(&registry).expect("a new registry");
    let cluster = Cluster::new(Arc::new(Factory::new(fake.client()))).metrics(metrics);
    let bound = quiet(probe)
        .concurrency(1)
        .bind(&cluster)
        .expect("a valid controller");
    let shutdown = tokio_util::sync::CancellationToken::new();
    let token = shutdown.clone();
    let run = tokio::spawn(async move {
        let outcome = bound.run(token.cancelled_owned()).await;
        returned.store(true, Ordering::SeqCst);
        outcome
    });

    assert_eq!(
        seen.next_seen().await,
        started("in-flight", &seeded.resource_version().unwrap_or_default())
    );
    create(&fake, "waiting").await;
    let what = "waiting to be queued behind in-flight";
    crate::testing::wait_for(Duration::from_secs(10), what, || async {
        let depth: f64 = registry
            .gather()
            .iter()
            .filter(|f| f.name() == "workqueue_depth")
            .flat_map(|f| f.get_metric().iter())
            .map(|m| m.get_gauge().get_value())
            .sum();
        ((depth - 1.0).abs() < f64::EPSILON).then_some(())
    })
    .await
    .expect("the second key is queued");

    shutdown.cancel();
    gate.add_permits(1);
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the run returns once the reconcile in flight finished")
        .expect("the run does not panic")
        .expect("the run ends cleanly");
    assert_eq!(seen.next_seen().await, finished("in-flight"));
    assert!(
        !late.load(Ordering::SeqCst),
        "the run returned before the reconcile in flight finished"
    );
    assert_eq!(seen.rest(), [], "nothing starts after shutdown");
    cluster.factory.shutdown().await;
}

#[tokio::test]
async fn a_reconcile_cut_off_by_its_timeout_is_counted_as_a_timeout_and_an_error() {
    let fake = fake();
    fake.seed(&config_map("stuck")).expect("seed");
    let (probe, mut seen) = probe(succeed);
    // Held for good: only the timeout ends its reconcile.
    let _gate = probe.hold("stuck");
    let controller = quiet(probe)
        .concurrency(1)
        .reconcile_timeout(Duration::from_millis(50))
        .rate_limiter(ExponentialBackoff::new(
            Duration::from_secs(60),
            Duration::from_secs(60),
        ));
    let running = start(&fake, controller);

    seen.next().await;
    crate::testing::wait_for(Duration::from_secs(10), "the timeout to be counted", || {
        let timeouts = running.sample("controller_runtime_reconcile_timeouts_total", None);
        async move { (timeouts >= 1.0).then_some(timeouts) }
    })
    .await
    .expect("the cut-off reconcile is counted");
    let timeouts = running.sample("controller_runtime_reconcile_timeouts_total", None);
    let errors = running.sample("controller_runtime_reconcile_errors_total", None);
    assert!(
        (timeouts - 1.0).abs() < f64::EPSILON,
        "one timeout: {timeouts}"
    );
    assert!(
        (errors - 1.0).abs() < f64::EPSILON,
        "counted as an error too: {errors}"
    );
    running.stop().await;
}
