//! The event path needs no thread outside the runtime and no real time: a controller on the fake
//! API server works on a paused, current-thread runtime, the ground a simulation stands on.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use serde_json::json;
use tokio::sync::mpsc;

use super::start;
use crate::controller::{Action, Context, Controller, Reconciler};
use crate::testing::FakeApiServer;

/// Reports the resourceVersion of every reconcile.
struct Versions(mpsc::UnboundedSender<String>);

impl Reconciler<ConfigMap> for Versions {
    type Error = kube::Error;

    async fn reconcile(&self, cm: Arc<ConfigMap>, _: &Context<ConfigMap>) -> kube::Result<Action> {
        // The receiver lives as long as the test that reads it.
        let _ = self.0.send(cm.resource_version().unwrap_or_default());
        Ok(Action::await_change())
    }
}

/// Waits until a reconcile at `version` is reported. On a paused clock, a wait that nothing in
/// the runtime can end makes the clock jump to the timeout at once: the test fails fast rather
/// than hanging when something needs a thread of its own or real time.
async fn reconciled_at(seen: &mut mpsc::UnboundedReceiver<String>, version: &str) {
    let found = async {
        while let Some(seen) = seen.recv().await {
            if seen == version {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), found)
        .await
        .unwrap_or_else(|_| panic!("no reconcile at resourceVersion {version} in 30 virtual s"));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_controller_reconciles_each_change_on_a_paused_current_thread_runtime()
-> anyhow::Result<()> {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    let api = Api::<ConfigMap>::namespaced(fake.client(), "ns");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("a".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let created = api.create(&PostParams::default(), &cm).await?;
    let (tx, mut seen) = mpsc::unbounded_channel();
    let running = start(&fake, Controller::new(Versions(tx)));
    reconciled_at(&mut seen, &created.resource_version().unwrap_or_default()).await;

    for i in 0..20 {
        let data = json!({ "data": { "i": i.to_string() } });
        let patched = api
            .patch("a", &PatchParams::default(), &Patch::Merge(&data))
            .await?;
        reconciled_at(&mut seen, &patched.resource_version().unwrap_or_default()).await;
    }
    running.stop().await;
    Ok(())
}
