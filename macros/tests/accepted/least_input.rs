use std::sync::Arc;

use kube::CustomResource;
use kubeward::controller::{Action, Context, Reconciler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A cluster-scoped kind without status or finalizer: only its own rule and Events.
#[derive(
    CustomResource, kubeward::Controller, Clone, Debug, Serialize, Deserialize, JsonSchema,
)]
#[kube(group = "example.com", version = "v1alpha1", kind = "Gadget")]
#[controller(reconciler = Tinker)]
pub struct GadgetSpec {
    pub on: bool,
}

struct Tinker;

impl Reconciler<Gadget> for Tinker {
    type Error = kube::Error;

    async fn reconcile(&self, _: Arc<Gadget>, _: &Context<Gadget>) -> Result<Action, kube::Error> {
        Ok(Action::await_change())
    }
}

#[test]
fn the_derive_accepts_least_input() {
    let _controller = Gadget::controller(Tinker);
    assert_eq!(Gadget::CONDITION, "Ready", "the default condition, named");
    let rules = Gadget::rbac_rules();
    assert_eq!(rules.len(), 2);
    assert_eq!(
        rules[0].resources.as_deref(),
        Some(&["gadgets".to_owned()][..])
    );
    assert_eq!(rules[0].verbs, ["get", "list", "watch", "update", "patch"]);

    let crd = <Gadget as kubeward::crd::Definition>::definition();
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref());
    assert_eq!(
        schema.and_then(|s| s.description.as_deref()),
        Some("A cluster-scoped kind without status or finalizer: only its own rule and Events.")
    );
}
