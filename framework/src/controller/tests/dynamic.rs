//! A controller over a kind given at run time: `DynamicObject`s of a CRD, reconciled behind a
//! finalizer, cleaned up, their failures reported as for a compiled kind, owning what they apply.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams};
use kube::discovery::Scope;
use kube::{Api, CustomResource, CustomResourceExt as _, ResourceExt as _};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{fake_for, start};
use crate::controller::{Action, Cleanup, Context, Controller, Reconciler};
use crate::testing::{FakeApiServer, events_about, wait_for};

const FINALIZER: &str = "test.kubeward.dev/gizmo";

/// The compiled twin of the kind the controller only knows at run time, to seed and read it.
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "dynamic.test.kubeward.dev",
    version = "v1",
    kind = "Gizmo",
    namespaced,
    status = "GizmoStatus"
)]
struct GizmoSpec {
    /// Whether its reconcile fails.
    fail: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
struct GizmoStatus {
    #[serde(default)]
    conditions: Vec<serde_json::Value>,
}

/// Records what it reconciled and cleaned up, by name; fails where `spec.fail` is true, else
/// applies a ConfigMap `<name>-child` that the object owns.
#[derive(Clone, Default)]
struct Seen {
    reconciled: Arc<Mutex<Vec<String>>>,
    cleaned: Arc<Mutex<Vec<String>>>,
}

impl Reconciler<DynamicObject> for Seen {
    type Error = std::io::Error;

    async fn reconcile(
        &self,
        obj: Arc<DynamicObject>,
        ctx: &Context<DynamicObject>,
    ) -> Result<Action, Self::Error> {
        self.reconciled.lock().push(obj.name_any());
        if obj.data["spec"]["fail"] == true {
            return Err(std::io::Error::other("this gizmo always fails"));
        }
        let child = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("{}-child", obj.name_any())),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        ctx.apply(&obj, child)
            .await
            .map_err(std::io::Error::other)?;
        Ok(Action::await_change())
    }
}

impl Cleanup<DynamicObject> for Seen {
    async fn cleanup(
        &self,
        obj: Arc<DynamicObject>,
        _: &Context<DynamicObject>,
    ) -> Result<(), Self::Error> {
        self.cleaned.lock().push(obj.name_any());
        Ok(())
    }
}

fn gizmo(name: &str, fail: bool) -> Gizmo {
    let mut g = Gizmo::new(name, GizmoSpec { fail });
    g.metadata.namespace = Some("default".into());
    g
}

impl Seen {
    fn reconciles_of(&self, name: &str) -> usize {
        self.reconciled.lock().iter().filter(|n| *n == name).count()
    }
}

fn has_finalizer(fake: &FakeApiServer, name: &str) -> Option<()> {
    let g: Gizmo = fake.get("default", name).ok()??;
    g.finalizers().iter().any(|f| f == FINALIZER).then_some(())
}

#[tokio::test]
async fn a_dynamic_controller_finalizes_cleans_up_reports_failures_and_owns_what_it_applies() {
    let fake = fake_for::<Gizmo>();
    fake.seed(&gizmo("good", false)).expect("seed");
    fake.seed(&gizmo("bad", true)).expect("seed");
    let seen = Seen::default();
    let resource = Gizmo::api_resource();
    let controller =
        Controller::dynamic_with_finalizer(seen.clone(), FINALIZER, &resource, &Scope::Namespaced)
            .owns::<ConfigMap>();
    let running = start(&fake, controller);
    assert_eq!(running.bound.name(), "gizmo", "named after the kind");

    wait_for(
        Duration::from_secs(10),
        "good to carry the finalizer",
        || async { has_finalizer(&fake, "good") },
    )
    .await
    .expect("the finalizer is added through the kind's URL");
    let bad = gizmo("bad", true);
    let warning = wait_for(
        Duration::from_secs(10),
        "a Warning Event about bad",
        || async {
            let events = events_about(fake.client(), &bad).await.ok()?;
            events
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("ReconcileError"))
        },
    )
    .await
    .expect("the failure is reported about the object");
    let regarding = warning.regarding.expect("the Event names its object");
    assert_eq!(regarding.kind.as_deref(), Some("Gizmo"));
    assert_eq!(
        regarding.api_version.as_deref(),
        Some("dynamic.test.kubeward.dev/v1")
    );
    wait_for(Duration::from_secs(10), "bad to be Ready=False", || async {
        let g: Gizmo = fake.get("default", "bad").ok()??;
        let conditions = g.status?.conditions;
        conditions
            .into_iter()
            .find(|c| c["type"] == "Ready" && c["status"] == "False")
    })
    .await
    .expect("the failure is set on the custom resource's status");

    let child: ConfigMap = wait_for(Duration::from_secs(10), "good's child", || async {
        fake.get("default", "good-child").ok()?
    })
    .await
    .expect("the reconcile applies its child");
    let owner = &child.metadata.owner_references.expect("an owner")[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.api_version.as_str(),
            owner.name.as_str()
        ),
        ("Gizmo", "dynamic.test.kubeward.dev/v1", "good"),
        "the child's controller owner is the gizmo, as discovered"
    );
    assert_eq!(owner.controller, Some(true));
    let before = seen.reconciles_of("good");
    let children: Api<ConfigMap> = Api::namespaced(fake.client(), "default");
    let edit = serde_json::json!({ "data": { "edited": "by hand" } });
    children
        .patch("good-child", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .expect("edit the child");
    wait_for(Duration::from_secs(10), "good reconciled again", || async {
        (seen.reconciles_of("good") > before).then_some(())
    })
    .await
    .expect("a change to an owned object reconciles its dynamic owner");

    let api: Api<DynamicObject> = Api::namespaced_with(fake.client(), "default", &resource);
    api.delete("good", &DeleteParams::default())
        .await
        .expect("delete");
    wait_for(Duration::from_secs(10), "good to be gone", || async {
        let g: Option<Gizmo> = fake.get("default", "good").ok()?;
        g.is_none().then_some(())
    })
    .await
    .expect("the finalizer is removed once the cleanup ran");
    assert_eq!(*seen.cleaned.lock(), ["good"]);
    assert!(seen.reconciled.lock().iter().any(|n| n == "good"));
    running.stop().await;
}
