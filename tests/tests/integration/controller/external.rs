//! Keys from outside the informers (`Controller::reconcile_on`) reach the reconciler.

use crate::fixtures::watching;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt as _};
use kubeward::cache::ObjectKey;
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::manager::Manager;
use kubeward::testing::{ControlPlane, wait_for};
use parking_lot::Mutex;

use super::{create_configmaps, start, stop};

/// Records the name of every reconciled ConfigMap, in order.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn count(&self, name: &str) -> usize {
        self.0.lock().iter().filter(|n| *n == name).count()
    }
}

impl Reconciler<ConfigMap> for Log {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _ctx: &Context<ConfigMap>,
    ) -> Result<Action, Self::Error> {
        self.0.lock().push(cm.name_any());
        Ok(Action::await_change())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_sent_on_a_stream_are_reconciled_and_unknown_ones_skipped() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("external").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_configmaps(&api, ["a", "b"].into_iter().map(String::from)).await?;

    let log = Log::default();
    let (keys, stream) = futures::channel::mpsc::unbounded();
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    manager.add(
        Controller::new(log.clone())
            .name("external")
            .reconcile_on(stream),
    )?;
    let (token, run) = start(manager);
    let timeout = Duration::from_secs(30);
    wait_for(timeout, "both ConfigMaps reconciled once", || async {
        (log.count("a") == 1 && log.count("b") == 1).then_some(())
    })
    .await?;

    // One worker takes keys in order: "ghost" is handled before the second "b".
    keys.unbounded_send(ObjectKey::new(Some(&ns), "ghost"))?;
    keys.unbounded_send(ObjectKey::new(Some(&ns), "b"))?;
    wait_for(timeout, "b reconciled again from the stream", || async {
        (log.count("b") == 2).then_some(())
    })
    .await?;
    assert_eq!(log.count("ghost"), 0, "a key with no object is skipped");
    assert_eq!(log.count("a"), 1, "a was not sent and did not change");

    // The stream ending stops nothing: changes still arrive through the informer.
    drop(keys);
    let patch = serde_json::json!({ "data": { "n": "1" } });
    api.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for(timeout, "a reconciled after its change", || async {
        (log.count("a") == 2).then_some(())
    })
    .await?;
    stop(token, run).await
}
