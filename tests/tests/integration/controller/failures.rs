//! A failed reconcile on the control plane: it reaches the object, and a 422 is not retried.

use crate::fixtures::watching;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, CustomResource, ResourceExt as _};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::manager::Manager;
use kubeward::queue::rate_limiter::ExponentialBackoff;
use kubeward::reconcile::{Condition, Conditions, NewCondition as _};
use kubeward::testing::{ControlPlane, events_about, install_crd, wait_for};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{counter, start, stop};

/// Asks for a ConfigMap named `configMapName`.
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "failures.kubeward.dev",
    version = "v1",
    kind = "Namer",
    namespaced,
    status = "NamerStatus"
)]
#[serde(rename_all = "camelCase")]
pub(super) struct NamerSpec {
    config_map_name: String,
}

/// Conditions, like the example operator's.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub(super) struct NamerStatus {
    #[serde(default)]
    conditions: Conditions,
}

/// Creates the ConfigMap, sets Ready=True once it exists, and counts its reconciles per object.
#[derive(Clone, Default)]
struct Creator(Arc<Mutex<HashMap<String, usize>>>);

impl Creator {
    fn count(&self, name: &str) -> usize {
        self.0.lock().get(name).copied().unwrap_or(0)
    }
}

impl Reconciler<Namer> for Creator {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        namer: Arc<Namer>,
        ctx: &Context<Namer>,
    ) -> Result<Action, kube::Error> {
        *self.0.lock().entry(namer.name_any()).or_default() += 1;
        let ns = namer.namespace().unwrap_or_default();
        let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client(), &ns);
        let wanted = ConfigMap {
            metadata: ObjectMeta {
                name: Some(namer.spec.config_map_name.clone()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let apply = PatchParams::apply("failures-test").force();
        configmaps
            .patch(&namer.spec.config_map_name, &apply, &Patch::Apply(&wanted))
            .await?;
        let ready = namer
            .status
            .as_ref()
            .is_some_and(|s| s.conditions.is_true("Ready"));
        if !ready {
            let mut ready = Condition::new("Ready", true, "Created", "the ConfigMap exists");
            ready.observed_generation = namer.metadata.generation;
            let patch = json!({ "status": { "conditions": [ready] } });
            let namers: Api<Namer> = Api::namespaced(ctx.client(), &ns);
            namers
                .patch_status(
                    &namer.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
        }
        Ok(Action::await_change())
    }
}

fn namer(name: &str, config_map_name: &str) -> Namer {
    Namer::new(
        name,
        NamerSpec {
            config_map_name: config_map_name.into(),
        },
    )
}

fn ready(namer: &Namer) -> Option<&Condition> {
    namer.status.as_ref()?.conditions.find("Ready")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_object_gets_ready_false_and_an_event_is_not_retried_and_recovers_when_fixed()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_crd::<Namer>(cp.client()).await?;
    let ns = cp.create_namespace("failures").await?;
    let namers: Api<Namer> = Api::namespaced(cp.client(), &ns);
    let bad = namers
        .create(&PostParams::default(), &namer("bad", "Not_A_Valid_Name"))
        .await?;

    let creator = Creator::default();
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    // Zero backoff: a retry, if the controller made one, would be queued at once, ahead of any
    // key added later (one worker, first in first out). With the default limiter it would come
    // 5 ms later, and nothing observable could tell it was never coming.
    manager.add(
        Controller::new(creator.clone())
            .name("failures")
            .rate_limiter(ExponentialBackoff::new(Duration::ZERO, Duration::ZERO)),
    )?;
    let registry = manager.registry().clone();
    let (token, run) = start(manager);

    let failed = wait_for(Duration::from_secs(10), "bad to be Ready=False", || async {
        let now = namers.get("bad").await.ok()?;
        ready(&now).filter(|c| c.status == "False").cloned()
    })
    .await?;
    assert_eq!(
        failed.reason, "Invalid",
        "the API server's reason: {failed:?}"
    );
    assert!(
        failed.message.contains("Not_A_Valid_Name") && failed.message.contains("metadata.name"),
        "the API server's message: {failed:?}"
    );
    assert_eq!(failed.observed_generation, bad.metadata.generation);

    let event = wait_for(
        Duration::from_secs(10),
        "a ReconcileError Event about bad",
        || async {
            let events = events_about(cp.client(), &bad).await.ok()?;
            events
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("ReconcileError"))
        },
    )
    .await?;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert!(
        event
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("Not_A_Valid_Name"),
        "{event:?}"
    );

    // Another object, created now, is reconciled after anything queued before it: had the 422
    // (or the controller's own status write) brought bad back, it would have run first.
    namers
        .create(&PostParams::default(), &namer("marker", "marker"))
        .await?;
    wait_for(
        Duration::from_secs(10),
        "marker to be reconciled",
        || async { (creator.count("marker") >= 1).then_some(()) },
    )
    .await?;
    assert_eq!(
        creator.count("bad"),
        1,
        "a 422 is terminal: reconciled once"
    );
    let terminal = counter(
        &registry,
        "controller_runtime_terminal_reconcile_errors_total",
        "failures",
    );
    assert!(
        (terminal - 1.0).abs() < f64::EPSILON,
        "terminal errors: {terminal}"
    );

    // Fixing the spec is a change: reconciled again, and Ready turns True.
    let fix = json!({ "spec": { "configMapName": "a-valid-name" } });
    namers
        .patch("bad", &PatchParams::default(), &Patch::Merge(&fix))
        .await?;
    wait_for(
        Duration::from_secs(10),
        "bad to be Ready=True after the fix",
        || async {
            let now = namers.get("bad").await.ok()?;
            ready(&now).filter(|c| c.status == "True").map(drop)
        },
    )
    .await?;
    assert!(creator.count("bad") >= 2);
    stop(token, run).await
}
