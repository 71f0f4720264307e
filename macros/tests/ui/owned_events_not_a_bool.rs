use std::sync::Arc;

use kube::CustomResource;
use kubeward::Controller;
use kubeward::controller::{Action, Context, Reconciler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Controller, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[controller(reconciler = Builder, owned_events = "yes")]
pub struct WidgetSpec {
    pub size: u32,
}

struct Builder;

impl Reconciler<Widget> for Builder {
    type Error = kube::Error;

    async fn reconcile(&self, _: Arc<Widget>, _: &Context<Widget>) -> Result<Action, kube::Error> {
        Ok(Action::await_change())
    }
}

fn main() {
    let _ = Widget::controller(Builder);
}
