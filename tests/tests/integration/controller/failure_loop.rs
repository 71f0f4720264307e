//! A reconcile that fails again and again leaves a bounded number of Event objects behind: the
//! repeats of one failure are counted in one Event.

use crate::fixtures::watching;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::manager::Manager;
use kubeward::queue::rate_limiter::ExponentialBackoff;
use kubeward::testing::{ControlPlane, events_about, wait_for};

use super::{start, stop};

/// Fails every reconcile with the same retriable error, counting them.
#[derive(Clone, Default)]
struct AlwaysFailing(Arc<AtomicUsize>);

#[derive(Debug, thiserror::Error)]
#[error("the backing service is unavailable")]
struct Unavailable;

impl Reconciler<ConfigMap> for AlwaysFailing {
    type Error = Unavailable;

    async fn reconcile(
        &self,
        _: Arc<ConfigMap>,
        _: &Context<ConfigMap>,
    ) -> Result<Action, Unavailable> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Err(Unavailable)
    }
}

/// The `ReconcileError` Events about `cm`: how many objects, and the highest series count.
async fn reconcile_errors(cp: &ControlPlane, cm: &ConfigMap) -> Option<(usize, i32)> {
    let events = events_about(cp.client(), cm).await.ok()?;
    let errors: Vec<_> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("ReconcileError"))
        .collect();
    let count = errors
        .iter()
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .max()?;
    Some((errors.len(), count))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_loop_writes_one_event_whose_count_rises() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("failure-loop").await?;
    let failing = AlwaysFailing::default();
    // Retries every 20 ms: a minute of client-go's default backoff in well under a second each.
    let controller = Controller::new(failing.clone())
        .name("failure-loop")
        .rate_limiter(ExponentialBackoff::new(
            Duration::from_millis(20),
            Duration::from_millis(20),
        ));
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    manager.add(controller)?;
    let (token, run) = start(manager);

    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("troubled".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let cm = configmaps.create(&PostParams::default(), &cm).await?;
    wait_for(Duration::from_secs(60), "100 failed reconciles", || async {
        (failing.0.load(Ordering::Relaxed) >= 100).then_some(())
    })
    .await?;
    let (objects, first) = wait_for(
        Duration::from_secs(30),
        "a ReconcileError Event counting repeats",
        || async {
            reconcile_errors(cp, &cm)
                .await
                .filter(|(_, count)| *count > 1)
        },
    )
    .await?;
    let (_, later) = wait_for(
        Duration::from_secs(30),
        "the ReconcileError Event's count to rise",
        || async {
            reconcile_errors(cp, &cm)
                .await
                .filter(|(_, count)| *count > first)
        },
    )
    .await?;
    let failures = failing.0.load(Ordering::Relaxed);
    assert_eq!(
        objects, 1,
        "{failures} failures with one message are one Event object, not {objects}"
    );
    assert!(later > first, "the count rises ({first} then {later})");
    stop(token, run).await
}
