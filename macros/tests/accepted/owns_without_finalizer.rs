use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::CustomResource;
use kubeward::controller::{Action, Context, Reconciler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Owns ConfigMaps, declares no finalizer: the owner references it sets block the owner's
/// deletion, which needs `update` on `sprockets/finalizers` where owner references are enforced.
#[derive(
    CustomResource, kubeward::Controller, Clone, Debug, Serialize, Deserialize, JsonSchema,
)]
#[kube(group = "example.com", version = "v1", kind = "Sprocket", namespaced)]
#[controller(reconciler = Turner, owns(ConfigMap))]
pub struct SprocketSpec {
    pub teeth: u32,
}

struct Turner;

impl Reconciler<Sprocket> for Turner {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        _: Arc<Sprocket>,
        _: &Context<Sprocket>,
    ) -> Result<Action, kube::Error> {
        Ok(Action::await_change())
    }
}

#[test]
fn the_derive_accepts_owns_without_finalizer() {
    let _controller = Sprocket::controller(Turner);
    let rules = Sprocket::rbac_rules();
    let resources: Vec<String> = rules
        .iter()
        .flat_map(|r| r.resources.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        resources,
        ["sprockets", "sprockets/finalizers", "configmaps", "events"]
    );
    assert_eq!(rules[1].verbs, ["update"]);
}
