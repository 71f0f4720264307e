//! `.watches::<W>(mapper)`: a change to a watched object reconciles exactly what the mapper names.

use crate::fixtures::watching;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::cache::ObjectKey;
use kubeward::controller::Controller;
use kubeward::manager::Manager;
use kubeward::testing::ControlPlane;

use super::{Running, Seen, create, relabel};

const CONTROLLER: &str = "watches-readers";
/// A Secret annotation listing, comma-separated, the ConfigMaps (same namespace) that read it.
const READERS: &str = "kubeward.dev/readers";

/// The ConfigMaps a Secret names in its [`READERS`] annotation.
fn readers(secret: &Secret) -> Vec<ObjectKey> {
    let namespace = secret.metadata.namespace.as_deref();
    let names = secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(READERS));
    names
        .into_iter()
        .flat_map(|names| names.split(','))
        .map(|name| ObjectKey::new(namespace, name))
        .collect()
}

#[tokio::test]
async fn a_change_to_a_watched_object_reconciles_exactly_the_objects_its_mapper_names()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("watches").await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let mut created = Vec::new();
    for name in ["a", "b", "c"] {
        created.push(create(&config_maps, name).await?);
    }
    let [a, b, c] = <[String; 3]>::try_from(created)
        .map_err(|v| anyhow::anyhow!("three ConfigMaps, got {v:?}"))?;

    let seen = Seen::default();
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    manager.add(
        Controller::new(seen.clone())
            .name(CONTROLLER)
            .watches::<Secret>(readers),
    )?;
    let running = Running::start(manager);
    for (name, version) in [("a", &a), ("b", &b), ("c", &c)] {
        seen.reconciled_at(name, version).await?;
    }

    // A new Secret naming a and b reconciles both, though neither changed.
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            annotations: Some([(READERS.to_owned(), "a,b".to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    Api::<Secret>::namespaced(cp.client(), &ns)
        .create(&PostParams::default(), &secret)
        .await?;
    seen.reconciled_times("a", 2).await?;
    seen.reconciled_times("b", 2).await?;
    // The mapper's keys went into the queue together; once it is drained, a key for c would
    // have been reconciled too.
    running.drained(CONTROLLER).await?;

    // c's own change is reconciled: the only reconcile c had since its creation.
    let c_changed = relabel(&config_maps, "c", "1").await?;
    seen.reconciled_at("c", &c_changed).await?;
    assert_eq!(
        seen.of("c"),
        [c.clone(), c_changed],
        "c was reconciled for a Secret that does not name it"
    );
    assert_eq!(seen.of("a"), [a.clone(), a], "a: created, then the Secret");
    assert_eq!(seen.of("b"), [b.clone(), b], "b: created, then the Secret");
    running.stop().await
}
