//! Predicates: an update the predicate rejects is never reconciled; one it accepts is.

use crate::fixtures::watching;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kubeward::controller::{Controller, Predicate};
use kubeward::manager::Manager;
use kubeward::testing::ControlPlane;

use super::{Running, Seen, create, patch, relabel};

const CONTROLLER: &str = "predicate-labels";

#[tokio::test]
async fn an_update_the_predicate_rejects_is_never_reconciled_and_one_it_accepts_is()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("predicates").await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let x = create(&config_maps, "x").await?;
    let y = create(&config_maps, "y").await?;

    let seen = Seen::default();
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    manager.add(
        Controller::new(seen.clone())
            .name(CONTROLLER)
            .predicate(Predicate::labels_changed()),
    )?;
    let running = Running::start(manager);
    // Creations always pass.
    seen.reconciled_at("x", &x).await?;
    seen.reconciled_at("y", &y).await?;

    // Rejected: x's data changes, its labels do not.
    let x_data = patch(
        &config_maps,
        "x",
        serde_json::json!({ "data": { "key": "changed" } }),
    )
    .await?;
    // Accepted: y's labels change. The informer delivers changes in order, so once y's is
    // reconciled x's was judged before it; once the queue is drained, a key it let through would
    // have been reconciled.
    let y_labels = relabel(&config_maps, "y", "1").await?;
    seen.reconciled_at("y", &y_labels).await?;
    running.drained(CONTROLLER).await?;

    // Accepted: x's labels change.
    let x_labels = relabel(&config_maps, "x", "1").await?;
    seen.reconciled_at("x", &x_labels).await?;
    assert_ne!(x_data, x_labels);
    assert_eq!(
        seen.of("x"),
        [x, x_labels],
        "x was reconciled for the data change the predicate rejects (at {x_data})"
    );
    assert_eq!(seen.of("y"), [y, y_labels]);
    running.stop().await
}
