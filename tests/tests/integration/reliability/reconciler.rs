//! Reconciler faults: panics, hangs past the reconcile timeout, errors forever; other keys flow.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, ResourceExt};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::manager::Config;
use kubeward::queue::rate_limiter::ExponentialBackoff;
use kubeward::testing::{ControlPlane, wait_for};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::summary::Row;
use super::witness::{Checked, Operator, Visit, Witness, check, new_manager};
use super::writer::{Writer, create_config_maps};

/// Panics on its first attempts, then works.
const PANICS: usize = 3;
/// Hangs on its first attempts (each cut off by the timeout), then works.
const HANGS: usize = 2;
const TIMEOUT: Duration = Duration::from_millis(500);
const BACKOFF_BASE: Duration = Duration::from_millis(10);
const BACKOFF_CAP: Duration = Duration::from_millis(320);
/// Attempts of the failing key to watch: 6 to reach the cap, the rest at the cap.
const FAILURES: usize = 14;
/// Scheduling delay allowed on top of the cap on a busy two-core machine.
const SLACK: Duration = Duration::from_millis(300);

/// A reconciler that panics for `panics`, hangs for `hangs`, fails forever for `fails`, and
/// works for every other object; all through a [`Witness`].
#[derive(Clone, Default)]
struct Faulty {
    witness: Witness,
    attempts: Arc<Mutex<HashMap<String, Vec<Instant>>>>,
    hanging: Arc<AtomicBool>,
    while_hanging: Arc<AtomicU64>,
}

#[derive(Debug, thiserror::Error)]
#[error("fails forever")]
struct Forever;

/// Clears the hanging flag when a hanging reconcile is cut off.
struct Hanging(Arc<AtomicBool>);

impl Drop for Hanging {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Reconciler<ConfigMap> for Faulty {
    type Error = Forever;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _ctx: &Context<ConfigMap>,
    ) -> Result<Action, Forever> {
        let visit: Visit = self.witness.enter(cm.as_ref());
        let name = cm.name_any();
        let attempt = {
            let mut attempts = self.attempts.lock();
            let list = attempts.entry(name.clone()).or_default();
            list.push(Instant::now());
            list.len()
        };
        match name.as_str() {
            "panics" if attempt <= PANICS => panic!("a bug in the reconciler, attempt {attempt}"),
            "hangs" if attempt <= HANGS => {
                self.hanging.store(true, Ordering::SeqCst);
                let _hanging = Hanging(Arc::clone(&self.hanging));
                std::future::pending::<()>().await;
            }
            "fails" => {
                visit.done(cm.as_ref());
                return Err(Forever);
            }
            _ if self.hanging.load(Ordering::SeqCst) => {
                self.while_hanging.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
        visit.done(cm.as_ref());
        Ok(Action::await_change())
    }
}

impl Faulty {
    fn attempts(&self, name: &str) -> Vec<Instant> {
        self.attempts.lock().get(name).cloned().unwrap_or_default()
    }
}

/// Runs the three faults at once while 20 other objects keep changing.
pub(super) async fn faults(cp: &ControlPlane) -> anyhow::Result<Vec<Row>> {
    let ns = cp.create_namespace("rel-reconciler").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let names = create_config_maps(&api, "ok", 20).await?;
    for name in ["panics", "hangs", "fails"] {
        api.create(
            &kube::api::PostParams::default(),
            &super::writer::config_map(name),
        )
        .await?;
    }

    let faulty = Faulty::default();
    let (manager, probes) = new_manager(cp.client(), &ns, Config::default())?;
    let cache = manager
        .factory()
        .informer(Api::<ConfigMap>::namespaced(manager.client(), &ns))
        .store();
    manager.add(
        Controller::new(faulty.clone())
            .name("faulty")
            .concurrency(2)
            .reconcile_timeout(TIMEOUT)
            .rate_limiter(ExponentialBackoff::new(BACKOFF_BASE, BACKOFF_CAP)),
    )?;
    let started = Instant::now();
    let operator = Operator::start(manager, probes);
    let writer = Writer::start(&api, &names, 40, 1);
    wait_for(
        Duration::from_secs(60),
        &format!("{FAILURES} attempts of the failing key, and the others to recover"),
        || async {
            let done = faulty.attempts("fails").len() >= FAILURES
                && faulty.attempts("panics").len() > PANICS
                && faulty.attempts("hangs").len() > HANGS;
            done.then_some(())
        },
    )
    .await?;
    let paused = writer.pause().await;
    let checked = check(
        "reconciler faults",
        &api,
        &cache,
        &faulty.witness,
        &operator,
    )
    .await?;
    drop(paused);
    let written = writer.stop().await;

    let fails = faulty.attempts("fails");
    let gaps: Vec<Duration> = fails.windows(2).map(|w| w[1] - w[0]).collect();
    let widest = gaps.iter().copied().max().unwrap_or_default();
    anyhow::ensure!(
        widest <= BACKOFF_CAP + SLACK,
        "the backoff of a key that fails forever must stay capped at {BACKOFF_CAP:?}: {gaps:?}"
    );
    anyhow::ensure!(
        gaps.iter().rev().take(3).all(|gap| *gap >= BACKOFF_CAP),
        "the failing key must be retried at the cap once it is reached: {gaps:?}"
    );
    let hangs = faulty.attempts("hangs");
    anyhow::ensure!(
        hangs[1] - hangs[0] >= TIMEOUT,
        "a hanging reconcile must be cut off by the {TIMEOUT:?} timeout, not earlier: {hangs:?}"
    );
    let flowed = faulty.while_hanging.load(Ordering::SeqCst);
    anyhow::ensure!(
        flowed > 0,
        "other keys must be reconciled while one reconcile hangs"
    );

    let rows = rows(&faulty, &checked, written, started.elapsed());
    operator.stop().await?;
    Ok(rows)
}

/// One row per fault, from the attempts `faulty` saw.
fn rows(faulty: &Faulty, checked: &Checked, written: u64, took: Duration) -> Vec<Row> {
    let (fails, hangs) = (faulty.attempts("fails"), faulty.attempts("hangs"));
    let widest = fails
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default();
    let flowed = faulty.while_hanging.load(Ordering::SeqCst);
    let panics = faulty.attempts("panics");
    let mut panicked = Row::new(
        format!("reconcile panics ({PANICS} times on one key)"),
        "first panic → reconciled",
    );
    panicked.record(checked, panics[PANICS] - panics[0]);
    panicked.injected(PANICS as u64);
    let mut hung = Row::new(
        format!(
            "reconcile hangs past its {} ms timeout",
            TIMEOUT.as_millis()
        ),
        "hang starts → reconciled",
    );
    hung.record(checked, hangs[HANGS] - hangs[0]);
    hung.injected(HANGS as u64);
    hung.note(format!(
        "{flowed} other reconciles finished during the hangs"
    ));
    let mut failing = Row::new(
        format!(
            "reconcile fails forever (backoff {} ms → cap {} ms)",
            BACKOFF_BASE.as_millis(),
            BACKOFF_CAP.as_millis()
        ),
        "never recovers by design: widest retry gap shown",
    );
    failing.record(checked, widest);
    failing.injected(fails.len() as u64);
    failing.note(format!(
        "{written} changes to other keys reconciled in {:.1} s",
        took.as_secs_f64()
    ));
    vec![panicked, hung, failing]
}
