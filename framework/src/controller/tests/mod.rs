//! Controllers run through [`Controller::bind`] and [`Bound::run`](super::Bound::run) on the
//! fake API server, without a Manager.

mod dynamic;
mod failure;
mod first_state;
mod paused_clock;
mod simulation;
mod simulation_cleanup;
mod simulation_expectations;
mod simulation_fencing;
mod simulation_pause;
mod simulation_triggers;
mod slow_user_code;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Bound, Cacheable, Cluster, Controller};
use crate::informer::{self, Factory};
use crate::metrics::Metrics;
use crate::testing::{FakeApiServer, wait_for};

/// A controller running on a fake API server, with the registry it counts in.
struct Running<K> {
    bound: Bound<K>,
    factory: Arc<Factory>,
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), informer::Error>>,
    registry: prometheus::Registry,
}

/// A fake API server serving the custom resource `K`, the ConfigMaps its controllers own and
/// the Events they write.
fn fake_for<K: kube::CustomResourceExt>() -> FakeApiServer {
    let fake = FakeApiServer::new();
    fake.register_crd::<K>();
    fake.register::<k8s_openapi::api::core::v1::ConfigMap>();
    fake.register::<k8s_openapi::api::events::v1::Event>();
    fake
}

/// Binds `controller` to the fake's informers and runs it.
fn start<K: Cacheable>(fake: &FakeApiServer, controller: Controller<K>) -> Running<K> {
    let registry = prometheus::Registry::new();
    let metrics = Metrics::new(&registry).expect("a new registry takes every family");
    let factory = Arc::new(Factory::new(fake.client()));
    let cluster = Cluster::new(Arc::clone(&factory)).metrics(metrics);
    let bound = controller.bind(&cluster).expect("a valid controller");
    let shutdown = CancellationToken::new();
    let (runner, token) = (bound.clone(), shutdown.clone());
    let task = tokio::spawn(async move { runner.run(token.cancelled_owned()).await });
    Running {
        bound,
        factory,
        shutdown,
        task,
        registry,
    }
}

impl<K: Cacheable> Running<K> {
    /// Cancels the run and waits until it returned, which it does once its reconciles finished.
    async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("the controller stops within 10 s")
            .expect("the controller's task does not panic")
            .expect("the controller stops cleanly");
        self.factory.shutdown().await;
    }

    /// The sum of the samples of `family` (counters and gauges), over series whose labels
    /// include `label` if given.
    fn sample(&self, family: &str, label: Option<(&str, &str)>) -> f64 {
        self.registry
            .gather()
            .iter()
            .filter(|f| f.name() == family)
            .flat_map(|f| f.get_metric().iter())
            .filter(|m| {
                label.is_none_or(|(name, value)| {
                    m.get_label()
                        .iter()
                        .any(|l| l.name() == name && l.value() == value)
                })
            })
            .map(|m| m.get_counter().get_value() + m.get_gauge().get_value())
            .sum()
    }

    /// How many samples the histogram `family` holds, over all its series.
    fn observations(&self, family: &str) -> u64 {
        self.registry
            .gather()
            .iter()
            .filter(|f| f.name() == family)
            .flat_map(|f| f.get_metric().iter())
            .map(|m| m.get_histogram().get_sample_count())
            .sum()
    }

    /// Waits until the controller's caches have their first list.
    async fn synced(&self) {
        wait_for(
            Duration::from_secs(10),
            "the controller's cache to sync",
            || async { self.bound.has_synced().then_some(()) },
        )
        .await
        .expect("the cache syncs");
    }

    /// Waits until `workqueue_depth` (keys waiting, not those being reconciled) is `depth`.
    async fn queued(&self, depth: usize) {
        let what = format!("{depth} keys waiting in the queue");
        wait_for(Duration::from_secs(10), &what, || async {
            #[allow(clippy::cast_precision_loss)] // a handful of keys
            let wanted = depth as f64;
            ((self.sample("workqueue_depth", None) - wanted).abs() < f64::EPSILON).then_some(())
        })
        .await
        .expect("the keys are queued");
    }
}
