//! `watches` and predicates on the real control plane: which changes reconcile which objects.
//!
//! The controllers here reconcile ConfigMaps and record the resourceVersion of each one they
//! reconcile. That an object was *not* reconciled is shown without waiting for nothing: after the
//! change that must not reconcile it, the informer and the queue are brought past that change
//! (a later change is reconciled, the queue is drained), then an accepted change to the object is
//! reconciled, and its history must hold that reconcile and nothing in between.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use kubeward::controller::{Action, Context, Reconciler};
use kubeward::manager::Manager;
use kubeward::testing::wait_for;
use kubeward_tests::metric_sum;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod metadata;
mod predicates;
mod watches;

/// How long the controller may take to react to a change.
const REACT: Duration = Duration::from_secs(30);

/// Records, per ConfigMap name, the resourceVersion of every reconcile.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<HashMap<String, Vec<String>>>>);

impl Reconciler<ConfigMap> for Seen {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _: &Context<ConfigMap>,
    ) -> Result<Action, kube::Error> {
        let version = cm.resource_version().unwrap_or_default();
        self.0
            .lock()
            .entry(cm.name_any())
            .or_default()
            .push(version);
        Ok(Action::await_change())
    }
}

impl Seen {
    /// The resourceVersions `name` was reconciled at, in order.
    fn of(&self, name: &str) -> Vec<String> {
        self.0.lock().get(name).cloned().unwrap_or_default()
    }

    /// Waits until `name` has been reconciled `times` times.
    async fn reconciled_times(&self, name: &str, times: usize) -> anyhow::Result<()> {
        let what = format!("{times} reconciles of ConfigMap {name}");
        Ok(wait_for(REACT, &what, || async {
            (self.of(name).len() >= times).then_some(())
        })
        .await?)
    }

    /// Waits until `name` has been reconciled at resourceVersion `version`.
    async fn reconciled_at(&self, name: &str, version: &str) -> anyhow::Result<()> {
        let what = format!("a reconcile of ConfigMap {name} at resourceVersion {version}");
        Ok(wait_for(REACT, &what, || async {
            self.of(name).iter().any(|v| v == version).then_some(())
        })
        .await?)
    }
}

/// A running manager, and the means to stop it.
struct Running {
    registry: prometheus::Registry,
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
}

impl Running {
    fn start(manager: Manager) -> Self {
        let registry = manager.registry().clone();
        let token = manager.shutdown_token();
        let run = tokio::spawn(manager.run());
        Self {
            registry,
            token,
            run,
        }
    }

    /// Waits until the queue of `controller` holds no key and no reconcile runs: every key
    /// enqueued so far has been reconciled.
    async fn drained(&self, controller: &str) -> anyhow::Result<()> {
        let what = format!("the queue of {controller} drained, with no reconcile running");
        Ok(wait_for(REACT, &what, || async {
            let gauge = |family| {
                metric_sum(&self.registry, family, ("controller", controller), |m| {
                    m.get_gauge().get_value()
                })
            };
            let idle = gauge("workqueue_depth") == 0.0
                && gauge("controller_runtime_active_workers") == 0.0;
            idle.then_some(())
        })
        .await?)
    }

    async fn stop(self) -> anyhow::Result<()> {
        self.token.cancel();
        tokio::time::timeout(REACT, self.run)
            .await??
            .map_err(Into::into)
    }
}

/// Creates ConfigMap `name` and returns its resourceVersion.
async fn create(config_maps: &Api<ConfigMap>, name: &str) -> anyhow::Result<String> {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let created = config_maps.create(&PostParams::default(), &cm).await?;
    Ok(created.resource_version().unwrap_or_default())
}

/// Merge-patches ConfigMap `name` and returns its new resourceVersion.
async fn patch(
    config_maps: &Api<ConfigMap>,
    name: &str,
    patch: serde_json::Value,
) -> anyhow::Result<String> {
    let patched = config_maps
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(patched.resource_version().unwrap_or_default())
}

/// Sets label `round` of ConfigMap `name` to `value`; returns the new resourceVersion.
async fn relabel(config_maps: &Api<ConfigMap>, name: &str, value: &str) -> anyhow::Result<String> {
    let labels = BTreeMap::from([("round", value)]);
    patch(
        config_maps,
        name,
        serde_json::json!({ "metadata": { "labels": labels } }),
    )
    .await
}
