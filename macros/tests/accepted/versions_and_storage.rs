use std::convert::Infallible;
use std::sync::Arc;

use kube::CustomResource;
use kubeward::Controller;
use kubeward::controller::{Action, Context, Reconciler};
use kubeward::conversion::Convertible;
use kubeward::crd::Definition as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod v1alpha1 {
    use super::*;

    #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "example.com",
        version = "v1alpha1",
        kind = "Widget",
        namespaced
    )]
    pub struct WidgetSpec {
        pub size: u32,
    }
}

/// The hub; `v1alpha1` stays the storage version for a release.
#[derive(CustomResource, Controller, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[controller(reconciler = Builder, versions(v1alpha1::Widget), storage = "v1alpha1")]
pub struct WidgetSpec {
    pub replicas: u32,
}

impl Convertible<Widget> for v1alpha1::Widget {
    type Error = Infallible;

    fn to_hub(self) -> Result<Widget, Infallible> {
        let spec = WidgetSpec {
            replicas: self.spec.size,
        };
        Ok(Widget {
            metadata: self.metadata,
            spec,
        })
    }

    fn from_hub(hub: Widget) -> Result<Self, Infallible> {
        let spec = v1alpha1::WidgetSpec {
            size: hub.spec.replicas,
        };
        Ok(Self {
            metadata: hub.metadata,
            spec,
        })
    }
}

struct Builder;

impl Reconciler<Widget> for Builder {
    type Error = kube::Error;

    async fn reconcile(&self, _: Arc<Widget>, _: &Context<Widget>) -> Result<Action, kube::Error> {
        Ok(Action::await_change())
    }
}

#[test]
fn the_derive_accepts_versions_and_storage() {
    let _ = Widget::controller(Builder);
    let stored: Vec<(String, bool)> = Widget::definition()
        .spec
        .versions
        .iter()
        .map(|v| (v.name.clone(), v.storage))
        .collect();
    assert_eq!(
        stored,
        [("v1".to_owned(), false), ("v1alpha1".to_owned(), true)]
    );
    let old = serde_json::json!({
        "apiVersion": "example.com/v1alpha1", "kind": "Widget",
        "metadata": { "name": "w" }, "spec": { "size": 2 },
    });
    let new = Widget::converter()
        .convert(old, "example.com/v1")
        .expect("converts");
    assert_eq!(new["spec"]["replicas"], 2);
}
