//! `.owns_metadata::<C>()`: owned objects cached by their metadata still reconcile their owner.

use crate::fixtures::watching;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::{Api, Resource as _};
use kubeward::controller::Controller;
use kubeward::manager::Manager;
use kubeward::testing::ControlPlane;

use super::{Running, Seen};

const CONTROLLER: &str = "owns-metadata";

#[tokio::test]
async fn a_change_to_an_owned_object_cached_as_metadata_reconciles_its_owner_and_the_body_stays_out()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("owns-metadata").await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let secrets: Api<Secret> = Api::namespaced(cp.client(), &ns);
    let owner = config_maps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("owner".into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await?;

    let seen = Seen::default();
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    let factory = manager.factory().clone();
    manager.add(
        Controller::new(seen.clone())
            .name(CONTROLLER)
            .owns_metadata::<Secret>(),
    )?;
    let running = Running::start(manager);
    seen.reconciled_times("owner", 1).await?;

    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("owned".into()),
            owner_references: owner.controller_owner_ref(&()).map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        string_data: Some([("password".to_owned(), "hunter2".to_owned())].into()),
        ..Secret::default()
    };
    secrets.create(&PostParams::default(), &secret).await?;
    seen.reconciled_times("owner", 2).await?;
    let relabel = serde_json::json!({ "metadata": { "labels": { "round": "1" } } });
    secrets
        .patch("owned", &PatchParams::default(), &Patch::Merge(&relabel))
        .await?;
    seen.reconciled_times("owner", 3).await?;
    assert!(
        seen.of("owned").is_empty(),
        "the Secret's own key is not the controller's"
    );

    // The controller's informer of Secrets is the shared metadata one: already synced and
    // holding the Secret, whose type has no room for its data.
    let cached = factory
        .informer(Api::<PartialObjectMeta<Secret>>::namespaced(
            cp.client(),
            &ns,
        ))
        .store()
        .list();
    let names: Vec<_> = cached
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    assert_eq!(names, ["owned"]);
    running.stop().await
}
