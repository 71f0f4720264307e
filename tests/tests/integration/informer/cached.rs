//! What an informer caches: metadata only, indexes, managedFields and transforms, compact objects.

use kube::core::PartialObjectMeta;

use super::*;

#[tokio::test]
async fn a_metadata_informer_caches_only_metadata_and_follows_changes() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-meta").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_many(&admin, "meta", 3).await?;

    let factory = Factory::new(cp.client());
    let metadata = factory.informer(Api::<PartialObjectMeta<ConfigMap>>::namespaced(
        cp.client(),
        &ns,
    ));
    factory.start()?;
    tokio::time::timeout(SYNC, factory.wait_for_sync()).await??;
    admin
        .create(&PostParams::default(), &config_map("meta-later", "1"))
        .await?;
    let expected = server_state(&admin).await?;
    wait_for(SYNC, "the metadata cache to equal the server", || async {
        let cached: BTreeMap<String, String> = metadata
            .store()
            .list()
            .iter()
            .map(|m| {
                (
                    m.metadata.name.clone().unwrap_or_default(),
                    m.metadata.resource_version.clone().unwrap_or_default(),
                )
            })
            .collect();
        (cached == expected).then_some(())
    })
    .await?;
    let kinds: Vec<Option<String>> = metadata
        .store()
        .list()
        .iter()
        .map(|m| m.types.as_ref().map(|t| t.kind.clone()))
        .collect();
    assert!(
        kinds
            .iter()
            .all(|k| k.as_deref() == Some("PartialObjectMetadata")),
        "the server sent metadata only: {kinds:?}"
    );
    factory.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn pods_indexed_by_node_are_found_by_node_and_follow_a_move() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};

    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-index").await?;
    let pods: Api<Pod> = Api::namespaced(cp.client(), &ns);
    let pod = |name: &str, node: &str| Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.into()),
            containers: vec![Container {
                name: "main".into(),
                image: Some("example.invalid/none".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    for (name, node) in [("a", "node-1"), ("b", "node-1"), ("c", "node-2")] {
        pods.create(&PostParams::default(), &pod(name, node))
            .await?;
    }

    let factory = Factory::new(cp.client());
    let informer = factory.informer(Api::<Pod>::namespaced(cp.client(), &ns));
    informer.add_index("node", |pod: &Pod| {
        pod.spec
            .as_ref()
            .and_then(|spec| spec.node_name.clone())
            .into_iter()
            .collect()
    })?;
    factory.start()?;
    tokio::time::timeout(SYNC, factory.wait_for_sync()).await??;
    let store = informer.store();
    let names = |node: &str| -> anyhow::Result<Vec<String>> {
        let mut names: Vec<String> = store
            .by_index("node", node)?
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        names.sort();
        Ok(names)
    };
    assert_eq!(names("node-1")?, ["a", "b"]);
    assert_eq!(names("node-2")?, ["c"]);
    let mut nodes = store.index_values("node")?;
    nodes.sort();
    assert_eq!(nodes, ["node-1", "node-2"]);
    assert_eq!(
        store.by_index(kubeward::cache::NAMESPACE_INDEX, &ns)?.len(),
        3
    );

    // nodeName cannot change on a live Pod: delete and recreate `b` on node-2.
    pods.delete("b", &DeleteParams::default().grace_period(0))
        .await?;
    wait_for(SYNC, "b to leave node-1", || async {
        (names("node-1").ok()? == ["a"]).then_some(())
    })
    .await?;
    pods.create(&PostParams::default(), &pod("b", "node-2"))
        .await?;
    wait_for(SYNC, "b to show up on node-2", || async {
        (names("node-2").ok()? == ["b", "c"]).then_some(())
    })
    .await?;
    factory.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn managed_fields_are_stripped_unless_kept_and_transforms_run_before_caching()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-transform").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_many(&admin, "t", 2).await?;
    let on_server = admin.get("t-0").await?;
    assert!(
        on_server.metadata.managed_fields.is_some(),
        "the server tracks managedFields, so stripping them can be seen"
    );

    let stripped = SharedInformer::new(
        Api::<ConfigMap>::namespaced(cp.client(), &ns),
        informer::Config::default(),
    );
    stripped.add_transform(|cm: &mut ConfigMap| {
        cm.data.get_or_insert_default().remove("value");
    })?;
    let kept = SharedInformer::new(
        Api::<ConfigMap>::namespaced(cp.client(), &ns),
        informer::Config::default().strip_managed_fields(false),
    );
    for informer in [&stripped, &kept] {
        informer.start()?;
        tokio::time::timeout(SYNC, informer.wait_for_sync()).await??;
    }
    admin
        .create(&PostParams::default(), &config_map("t-later", "1"))
        .await?;
    for informer in [&stripped, &kept] {
        wait_for(SYNC, "the object created after sync", || async {
            (informer.store().len() == 3).then_some(())
        })
        .await?;
    }
    for cm in stripped.store().list() {
        assert!(
            cm.metadata.managed_fields.is_none(),
            "managedFields are stripped by default"
        );
        assert!(
            cm.data.as_ref().is_some_and(|d| !d.contains_key("value")),
            "the transform ran on every object, listed or watched"
        );
    }
    for cm in kept.store().list() {
        assert!(
            cm.metadata.managed_fields.is_some(),
            "managedFields are kept on request"
        );
        assert!(cm.data.as_ref().is_some_and(|d| d.contains_key("value")));
    }
    stripped.shutdown().await;
    kept.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_compact_informer_caches_the_same_objects_as_a_default_one_through_lists_and_watches()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-compact").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_many(&admin, "c", 250).await?;

    let informer = |config: informer::Config| -> anyhow::Result<SharedInformer<ConfigMap>> {
        let informer = SharedInformer::new(Api::<ConfigMap>::namespaced(cp.client(), &ns), config);
        informer.add_transform(|cm: &mut ConfigMap| {
            cm.metadata
                .labels
                .get_or_insert_default()
                .insert("cached".into(), "yes".into());
        })?;
        Ok(informer)
    };
    let default = informer(informer::Config::default().page_size(100))?;
    let compact = informer(informer::Config::default().page_size(100).compact(16))?;
    let kept = informer(
        informer::Config::default()
            .compact(0)
            .strip_managed_fields(false),
    )?;
    for informer in [&default, &compact, &kept] {
        informer.start()?;
        tokio::time::timeout(SYNC, informer.wait_for_sync()).await??;
    }
    assert!(compact.store().is_compact() && !default.store().is_compact());

    // Watched changes: an update, a delete, a create.
    let mut changed = config_map("c-1", "changed");
    changed.metadata.resource_version = None;
    admin
        .patch("c-1", &PatchParams::default(), &Patch::Merge(&changed))
        .await?;
    admin.delete("c-2", &DeleteParams::default()).await?;
    admin
        .create(&PostParams::default(), &config_map("c-new", "1"))
        .await?;
    for informer in [&default, &compact, &kept] {
        wait_until_converged(informer, &admin, "every informer to follow the watch").await?;
    }

    let by_name = |informer: &SharedInformer<ConfigMap>| -> BTreeMap<String, ConfigMap> {
        informer
            .store()
            .list()
            .into_iter()
            .map(|cm| (cm.metadata.name.clone().unwrap_or_default(), (*cm).clone()))
            .collect()
    };
    assert_eq!(
        by_name(&compact),
        by_name(&default),
        "a compact store decodes exactly what the default store holds, transforms applied"
    );
    let updated = compact
        .store()
        .get(&kubeward::cache::ObjectKey::new(Some(&ns), "c-1"));
    assert_eq!(
        updated.and_then(|cm| cm.data.as_ref()?.get("value").cloned()),
        Some("changed".to_owned())
    );
    assert!(
        kept.store()
            .list()
            .iter()
            .all(|cm| cm.metadata.managed_fields.is_some()
                && cm
                    .metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("cached"))),
        "a compact store that keeps managedFields has them, and the transform ran on read"
    );
    for informer in [&default, &compact, &kept] {
        informer.shutdown().await;
    }
    Ok(())
}
