use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::CustomResource;
use kube::core::PartialObjectMeta;
use kubeward::Controller;
use kubeward::cache::ObjectKey;
use kubeward::controller::{Action, Context, Reconciler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A vault.
#[derive(CustomResource, Controller, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Vault", namespaced)]
#[controller(
    reconciler = Keeper,
    owns_metadata(Secret),
    watches_metadata(Pod = by_pod)
)]
pub struct VaultSpec {
    pub size: u32,
}

fn by_pod(pod: &PartialObjectMeta<Pod>) -> Vec<ObjectKey> {
    vec![ObjectKey::new(pod.metadata.namespace.as_deref(), "main")]
}

struct Keeper;

impl Reconciler<Vault> for Keeper {
    type Error = kube::Error;

    async fn reconcile(&self, _: Arc<Vault>, _: &Context<Vault>) -> Result<Action, kube::Error> {
        Ok(Action::await_change())
    }
}

#[test]
fn the_derive_accepts_metadata_only() {
    let controller = Vault::controller(Keeper);
    let debug = format!("{controller:?}");
    assert!(debug.contains("triggers: 2"), "{debug}");

    // The same rules as `owns` and `watches`: the owned objects are written in full.
    let rules = Vault::rbac_rules();
    let resources: Vec<String> = rules
        .iter()
        .flat_map(|r| r.resources.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        resources,
        ["vaults", "vaults/finalizers", "secrets", "pods", "events"]
    );
    assert!(
        rules[2].verbs.iter().any(|v| v == "create"),
        "{:?}",
        rules[2]
    );
    assert_eq!(rules[3].verbs, ["get", "list", "watch"]);
}
