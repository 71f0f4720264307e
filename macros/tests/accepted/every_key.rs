use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::CustomResource;
use kubeward::Controller;
use kubeward::cache::ObjectKey;
use kubeward::controller::{Action, Cleanup, Context, Predicate, Reconciler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A widget,
/// described on two lines.
#[derive(CustomResource, Controller, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
#[controller(
    reconciler = Builder,
    owns(ConfigMap),
    watches(Secret = by_secret),
    finalizer = "example.com/cleanup",
    concurrency = 4,
    predicate = Predicate::generation_changed(),
    name = "widgets",
    ring = "widgets",
    condition = "Available",
    initial_condition = false,
    owned_events = true,
    crate = "::kubeward"
)]
pub struct WidgetSpec {
    pub size: u32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct WidgetStatus {
    pub ready: bool,
}

fn by_secret(secret: &Secret) -> Vec<ObjectKey> {
    vec![ObjectKey::new(secret.metadata.namespace.as_deref(), "main")]
}

struct Builder;

impl Reconciler<Widget> for Builder {
    type Error = kube::Error;

    async fn reconcile(&self, _: Arc<Widget>, _: &Context<Widget>) -> Result<Action, kube::Error> {
        Ok(Action::await_change())
    }
}

impl Cleanup<Widget> for Builder {
    async fn cleanup(&self, _: Arc<Widget>, _: &Context<Widget>) -> Result<(), kube::Error> {
        Ok(())
    }
}

#[test]
fn the_derive_accepts_every_key() {
    let controller = Widget::controller(Builder);
    let debug = format!("{controller:?}");
    assert!(debug.contains("\"widgets\""), "{debug}");
    assert!(debug.contains("ring: Some(\"widgets\")"), "{debug}");
    assert!(debug.contains("Some(4)"), "{debug}");
    assert!(debug.contains("example.com/cleanup"), "{debug}");
    assert!(debug.contains("triggers: 2"), "{debug}");
    assert!(debug.contains("condition: \"Available\""), "{debug}");
    assert!(debug.contains("initial: false"), "{debug}");
    assert!(debug.contains("owned_events: true"), "{debug}");
    assert_eq!(
        Widget::CONDITION,
        "Available",
        "the reconciler's name for it"
    );

    let rules = Widget::rbac_rules();
    let resources: Vec<String> = rules
        .iter()
        .flat_map(|r| r.resources.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        resources,
        [
            "widgets",
            "widgets/status",
            "widgets/finalizers",
            "configmaps",
            "secrets",
            "events"
        ]
    );
    assert_eq!(rules[4].verbs, ["get", "list", "watch"]);

    let crd = <Widget as kubeward::crd::Definition>::definition();
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref());
    assert_eq!(
        schema.and_then(|s| s.description.as_deref()),
        Some("A widget,\ndescribed on two lines.")
    );
}
