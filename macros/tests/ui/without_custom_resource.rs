use std::sync::Arc;

use kubeward::Controller;
use kubeward::controller::{Action, Context, Reconciler};
use k8s_openapi::api::core::v1::ConfigMap;

#[derive(Controller, Clone, Debug)]
#[controller(reconciler = Builder)]
pub struct WidgetSpec {
    pub size: u32,
}

struct Builder;

impl Reconciler<ConfigMap> for Builder {
    type Error = kube::Error;

    async fn reconcile(&self, _: Arc<ConfigMap>, _: &Context<ConfigMap>) -> Result<Action, kube::Error> {
        Ok(Action::await_change())
    }
}

fn main() {}
