//! The testing kit's garbage collector on the real control plane: an object goes once all of its
//! owners are gone, and not before.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ApiResource, DeleteParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt as _};
use kubeward::testing::{ControlPlane, GarbageCollector, wait_for};

const WAIT: Duration = Duration::from_secs(10);

/// A ConfigMap `name` owned by `owners`.
fn owned(name: &str, owners: &[&ConfigMap]) -> ConfigMap {
    let references = owners.iter().map(|owner| OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.name_any(),
        uid: owner.uid().unwrap_or_default(),
        ..OwnerReference::default()
    });
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            owner_references: Some(references.collect()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

#[tokio::test]
async fn an_object_is_collected_once_all_of_its_owners_are_gone() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("garbage").await?;
    let maps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let create = |map: ConfigMap| {
        let maps = maps.clone();
        async move { maps.create(&PostParams::default(), &map).await }
    };
    let first = create(owned("first-owner", &[])).await?;
    let second = create(owned("second-owner", &[])).await?;
    create(owned("of-the-first", &[&first])).await?;
    create(owned("of-both", &[&first, &second])).await?;
    let collector =
        GarbageCollector::start(cp.client(), &ns, vec![ApiResource::erase::<ConfigMap>(&())]);

    maps.delete("first-owner", &DeleteParams::default()).await?;
    wait_for(WAIT, "the first owner's own object to go", || async {
        maps.get_opt("of-the-first")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await?;
    assert!(
        maps.get_opt("of-both").await?.is_some(),
        "an object with an owner left stays"
    );
    maps.delete("second-owner", &DeleteParams::default())
        .await?;
    wait_for(WAIT, "the object of both owners to go", || async {
        maps.get_opt("of-both").await.ok()?.is_none().then_some(())
    })
    .await?;
    assert_eq!(collector.collected(), 2);
    Ok(())
}
