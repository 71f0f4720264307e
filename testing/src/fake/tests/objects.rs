//! Creates, reads, lists, changes and deletes objects on the fake.

use super::*;

#[tokio::test]
async fn create_fills_in_uid_timestamp_generation_and_increasing_resource_versions() {
    let fake = fake();
    let widgets: Api<Widget> = Api::namespaced(fake.client(), "ns");
    let first = widgets
        .create(&PostParams::default(), &widget("a", 1))
        .await
        .unwrap();
    let second = widgets
        .create(&PostParams::default(), &widget("b", 1))
        .await
        .unwrap();
    assert!(first.uid().is_some_and(|uid| uid.len() == 36));
    assert!(first.metadata.creation_timestamp.is_some());
    assert_eq!(first.metadata.generation, Some(1));
    assert_eq!(first.namespace().as_deref(), Some("ns"));
    assert!(rv(&second) > rv(&first));
    assert_ne!(first.uid(), second.uid());
}

#[tokio::test]
async fn create_refuses_taken_and_invalid_names_and_honours_generate_name() {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake().client());
    let post = PostParams::default();
    configmaps
        .create(&post, &config_map("taken", &[]))
        .await
        .unwrap();
    let taken = configmaps.create(&post, &config_map("taken", &[])).await;
    assert_eq!(api_status(taken), (409, "AlreadyExists".into()));
    let invalid = configmaps
        .create(&post, &config_map("Not_Valid", &[]))
        .await;
    assert_eq!(api_status(invalid), (422, "Invalid".into()));
    let mut generated = config_map("", &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let created = configmaps.create(&post, &generated).await.unwrap();
    assert!(created.name_any().starts_with("gen-") && created.name_any().len() == 9);
}

#[tokio::test]
async fn get_of_a_missing_object_is_404_not_found() {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake().client());
    assert_eq!(
        api_status(configmaps.get("missing").await),
        (404, "NotFound".into())
    );
}

#[tokio::test]
async fn list_filters_by_label_and_field_selectors() {
    let fake = fake();
    for (name, labels) in [
        ("web", &[("tier", "web")][..]),
        ("db", &[("tier", "db")][..]),
        ("bare", &[][..]),
    ] {
        fake.seed(&ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                ..config_map(name, labels).metadata
            },
            ..ConfigMap::default()
        })
        .unwrap();
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(fake.client(), "ns");
    let names = |params: ListParams| {
        let configmaps = configmaps.clone();
        async move {
            let list = configmaps.list(&params).await.unwrap();
            list.items
                .iter()
                .map(ResourceExt::name_any)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        names(ListParams::default().labels("tier=web")).await,
        ["web"]
    );
    assert_eq!(
        names(ListParams::default().labels("tier!=web")).await,
        ["bare", "db"]
    );
    assert_eq!(
        names(ListParams::default().labels("tier in (db,web)")).await,
        ["db", "web"]
    );
    assert_eq!(
        names(ListParams::default().labels("tier notin (db)")).await,
        ["bare", "web"]
    );
    assert_eq!(
        names(ListParams::default().labels("tier")).await,
        ["db", "web"]
    );
    assert_eq!(names(ListParams::default().labels("!tier")).await, ["bare"]);
    assert_eq!(
        names(ListParams::default().fields("metadata.name=db")).await,
        ["db"]
    );
    let everywhere: Api<ConfigMap> = Api::all(fake.client());
    let list = everywhere
        .list(&ListParams::default().fields("metadata.namespace=ns"))
        .await;
    assert_eq!(list.unwrap().items.len(), 3);
}

#[tokio::test]
async fn list_pages_with_limit_and_continue_and_reports_a_resource_version() {
    let fake = fake();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    for index in 0..5 {
        let name = format!("cm-{index}");
        configmaps
            .create(&PostParams::default(), &config_map(&name, &[]))
            .await
            .unwrap();
    }
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(2);
    let mut pages = 0;
    loop {
        let page = configmaps.list(&params).await.unwrap();
        pages += 1;
        assert_eq!(
            page.metadata.resource_version,
            Some(fake.resource_version().to_string())
        );
        names.extend(page.items.iter().map(ResourceExt::name_any));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4"]);
}

#[tokio::test]
async fn a_continue_token_from_before_a_compaction_is_410_expired() {
    let fake = fake();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    for name in ["a", "b"] {
        configmaps
            .create(&PostParams::default(), &config_map(name, &[]))
            .await
            .unwrap();
    }
    let first = configmaps
        .list(&ListParams::default().limit(1))
        .await
        .unwrap();
    let token = first.metadata.continue_.unwrap();
    let continued = ListParams::default().limit(1).continue_token(&token);
    assert_eq!(configmaps.list(&continued).await.unwrap().items.len(), 1);

    configmaps
        .create(&PostParams::default(), &config_map("c", &[]))
        .await
        .unwrap();
    fake.compact();
    match configmaps.list(&continued).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
        }
        other => panic!("an expired token was served: {other:?}"),
    }
    let fresh = configmaps.list(&ListParams::default()).await.unwrap();
    assert_eq!(fresh.items.len(), 3, "a new list without a token works");
}

#[tokio::test]
async fn an_update_with_a_stale_resource_version_is_409_conflict() {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake().client());
    let created = configmaps
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    let mut first = created.clone();
    first.data = Some([("k".to_owned(), "1".to_owned())].into());
    let updated = configmaps
        .replace("a", &PostParams::default(), &first)
        .await
        .unwrap();
    assert!(rv(&updated) > rv(&created));
    let mut stale = created;
    stale.data = Some([("k".to_owned(), "2".to_owned())].into());
    match configmaps
        .replace("a", &PostParams::default(), &stale)
        .await
    {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
            assert!(status.message.contains("the object has been modified"));
        }
        other => panic!("a stale update must conflict, got {other:?}"),
    }
}

#[tokio::test]
async fn merge_json_and_apply_patches_change_the_object_and_apply_creates() {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake().client());
    configmaps
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    let merge = Patch::Merge(json!({ "data": { "m": "1" } }));
    configmaps
        .patch("a", &PatchParams::default(), &merge)
        .await
        .unwrap();
    let add = Patch::Json::<()>(
        serde_json::from_value(json!([{ "op": "add", "path": "/data/j", "value": "2" }])).unwrap(),
    );
    let patched = configmaps
        .patch("a", &PatchParams::default(), &add)
        .await
        .unwrap();
    let data = patched.data.unwrap_or_default();
    assert_eq!((data["m"].as_str(), data["j"].as_str()), ("1", "2"));

    let applied = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "b" },
                          "data": { "x": "1" } });
    let params = PatchParams::apply("tests");
    let created = configmaps
        .patch("b", &params, &Patch::Apply(&applied))
        .await
        .unwrap();
    assert_eq!(created.data.unwrap_or_default()["x"], "1");
    let reapplied = json!({ "apiVersion": "v1", "kind": "ConfigMap", "data": { "x": "2" } });
    let changed = configmaps
        .patch("b", &params, &Patch::Apply(&reapplied))
        .await
        .unwrap();
    assert_eq!(changed.data.unwrap_or_default()["x"], "2");
    let missing_manager = configmaps
        .patch("b", &PatchParams::default(), &Patch::Apply(&reapplied))
        .await;
    assert_eq!(api_status(missing_manager).0, 422);
}

#[tokio::test]
async fn the_status_subresource_and_the_main_endpoint_change_only_their_own_part() {
    let widgets: Api<Widget> = Api::default_namespaced(fake().client());
    let mut with_status = widget("a", 1);
    with_status.status = Some(WidgetStatus { ready: true });
    let created = widgets
        .create(&PostParams::default(), &with_status)
        .await
        .unwrap();
    assert_eq!(
        created.status, None,
        "create drops the status of a kind with /status"
    );

    let status = Patch::Merge(json!({ "status": { "ready": true }, "spec": { "size": 9 } }));
    let patched = widgets
        .patch_status("a", &PatchParams::default(), &status)
        .await
        .unwrap();
    assert_eq!(patched.status, Some(WidgetStatus { ready: true }));
    assert_eq!(
        patched.spec.size, 1,
        "a status patch must not change the spec"
    );

    let main = Patch::Merge(json!({ "status": { "ready": false }, "spec": { "size": 2 } }));
    let patched = widgets
        .patch("a", &PatchParams::default(), &main)
        .await
        .unwrap();
    assert_eq!(patched.spec.size, 2);
    assert_eq!(patched.status, Some(WidgetStatus { ready: true }));
}

#[tokio::test]
async fn generation_is_bumped_by_spec_changes_only() {
    let widgets: Api<Widget> = Api::default_namespaced(fake().client());
    widgets
        .create(&PostParams::default(), &widget("a", 1))
        .await
        .unwrap();
    let params = PatchParams::default();
    let labelled = Patch::Merge(json!({ "metadata": { "labels": { "x": "y" } } }));
    let after_label = widgets.patch("a", &params, &labelled).await.unwrap();
    let status = Patch::Merge(json!({ "status": { "ready": true } }));
    let after_status = widgets.patch_status("a", &params, &status).await.unwrap();
    let spec = Patch::Merge(json!({ "spec": { "size": 2 } }));
    let after_spec = widgets.patch("a", &params, &spec).await.unwrap();
    let generations = [&after_label, &after_status, &after_spec].map(|w| w.metadata.generation);
    assert_eq!(generations, [Some(1), Some(1), Some(2)]);
    let unchanged = widgets.patch("a", &params, &spec).await.unwrap();
    assert_eq!(
        rv(&unchanged),
        rv(&after_spec),
        "a no-op patch keeps the resourceVersion"
    );
}

#[tokio::test]
async fn delete_waits_for_finalizers_and_removes_the_object_when_the_last_goes() {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake().client());
    let mut held = config_map("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    configmaps
        .create(&PostParams::default(), &held)
        .await
        .unwrap();
    configmaps
        .delete("held", &DeleteParams::default())
        .await
        .unwrap();
    let deleting = configmaps.get("held").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    let release = Patch::Merge(json!({ "metadata": { "finalizers": null } }));
    configmaps
        .patch("held", &PatchParams::default(), &release)
        .await
        .unwrap();
    assert_eq!(api_status(configmaps.get("held").await).0, 404);

    configmaps
        .create(&PostParams::default(), &config_map("free", &[]))
        .await
        .unwrap();
    configmaps
        .delete("free", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(api_status(configmaps.get("free").await).0, 404);
}

#[tokio::test]
async fn cluster_scoped_kinds_live_outside_namespaces_and_seeds_keep_their_status() {
    let fake = fake();
    let roles: Api<ClusterRole> = Api::all(fake.client());
    let role = ClusterRole {
        metadata: ObjectMeta {
            name: Some("reader".into()),
            ..ObjectMeta::default()
        },
        ..ClusterRole::default()
    };
    let created = roles.create(&PostParams::default(), &role).await.unwrap();
    assert_eq!(created.metadata.namespace, None);
    assert_eq!(
        created.metadata.generation, None,
        "ClusterRoles have no generation"
    );

    let mut seeded = widget("seeded", 3);
    seeded.status = Some(WidgetStatus { ready: true });
    fake.seed(&seeded).unwrap();
    let widgets: Api<Widget> = Api::default_namespaced(fake.client());
    let read = widgets.get("seeded").await.unwrap();
    assert_eq!(read.status, Some(WidgetStatus { ready: true }));
    let direct = fake.get::<Widget>("default", "seeded").unwrap();
    assert_eq!(direct.map(|w| w.metadata), Some(read.metadata));
}

#[tokio::test]
async fn custom_resource_updates_need_a_resource_version_and_preconditions_guard_deletes() {
    let widgets: Api<Widget> = Api::default_namespaced(fake().client());
    let created = widgets
        .create(&PostParams::default(), &widget("a", 1))
        .await
        .unwrap();
    let mut unconditional = created.clone();
    unconditional.metadata.resource_version = None;
    let refused = widgets
        .replace("a", &PostParams::default(), &unconditional)
        .await;
    assert_eq!(api_status(refused), (422, "Invalid".into()));

    let stale =
        Patch::Merge(json!({ "metadata": { "resourceVersion": "1000" }, "spec": { "size": 2 } }));
    let conflict = widgets.patch("a", &PatchParams::default(), &stale).await;
    assert_eq!(api_status(conflict), (409, "Conflict".into()));

    let wrong_uid = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    assert_eq!(
        api_status(widgets.delete("a", &wrong_uid).await),
        (409, "Conflict".into())
    );
    assert!(
        widgets.get("a").await.is_ok(),
        "a failed precondition must not delete"
    );
}

#[tokio::test]
async fn a_failing_json_patch_test_is_refused_and_changes_nothing() {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake().client());
    let created = configmaps
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    let test_fails = Patch::Json::<()>(
        serde_json::from_value(json!([
            { "op": "test", "path": "/metadata/name", "value": "b" },
            { "op": "add", "path": "/data", "value": { "k": "v" } },
        ]))
        .unwrap(),
    );
    let refused = configmaps
        .patch("a", &PatchParams::default(), &test_fails)
        .await;
    assert_eq!(api_status(refused).0, 422);
    let read = configmaps.get("a").await.unwrap();
    assert_eq!((rv(&read), read.data), (rv(&created), None));
}

#[tokio::test]
async fn unregistered_kinds_and_unknown_subresources_are_404() {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    let widgets: Api<Widget> = Api::default_namespaced(fake.client());
    assert_eq!(
        api_status(widgets.list(&ListParams::default()).await).0,
        404
    );
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let status = configmaps.get_status("a").await;
    assert_eq!(
        api_status(status).0,
        404,
        "ConfigMaps have no status subresource"
    );
    assert!(matches!(
        fake.seed(&widget("w", 1)),
        Err(Error::NotRegistered { .. })
    ));
}

#[tokio::test]
async fn delete_collection_removes_only_the_selected_objects() {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake().client());
    for (name, tier) in [("a", "web"), ("b", "db"), ("c", "web")] {
        let object = config_map(name, &[("tier", tier)]);
        configmaps
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
    }
    let selected = ListParams::default().labels("tier=web");
    configmaps
        .delete_collection(&DeleteParams::default(), &selected)
        .await
        .unwrap();
    let left = configmaps.list(&ListParams::default()).await.unwrap();
    let names: Vec<_> = left.items.iter().map(ResourceExt::name_any).collect();
    assert_eq!(names, ["b"]);
}

#[tokio::test]
async fn apply_removes_fields_its_manager_stops_applying_and_conflicts_with_other_managers() {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake().client());
    let config = |data: serde_json::Value| json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "a" }, "data": data });
    let first = PatchParams::apply("first");
    let both = config(json!({ "x": "1", "y": "2" }));
    configmaps
        .patch("a", &first, &Patch::Apply(&both))
        .await
        .unwrap();
    let only_x = config(json!({ "x": "1" }));
    let reapplied = configmaps
        .patch("a", &first, &Patch::Apply(&only_x))
        .await
        .unwrap();
    assert_eq!(
        reapplied.data.unwrap_or_default().len(),
        1,
        "y must be gone"
    );

    let second = PatchParams::apply("second");
    let other = config(json!({ "x": "2" }));
    let conflict = configmaps.patch("a", &second, &Patch::Apply(&other)).await;
    assert_eq!(api_status(conflict), (409, "Conflict".into()));
    let forced = configmaps
        .patch("a", &second.force(), &Patch::Apply(&other))
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap_or_default()["x"], "2");
    let dropped = configmaps
        .patch("a", &first, &Patch::Apply(&config(json!({}))))
        .await
        .unwrap();
    assert_eq!(
        dropped.data.unwrap_or_default()["x"],
        "2",
        "a field the first manager lost to a forced apply stays when it stops applying it"
    );
}

#[tokio::test]
async fn discovery_lists_the_registered_kinds_and_their_status_subresources() {
    let client = fake().client();
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "20")
    );
    let discovery = kube::Discovery::new(client).run().await.unwrap();
    let (widgets, capabilities) = discovery
        .resolve_gvk(&kube::api::GroupVersionKind::gvk(
            "fake.kubeward.dev",
            "v1",
            "Widget",
        ))
        .unwrap();
    assert_eq!(widgets.plural, "widgets");
    assert_eq!(capabilities.scope, kube::discovery::Scope::Namespaced);
    assert!(
        capabilities
            .subresources
            .iter()
            .any(|(sub, _)| sub.plural == "status")
    );
    let core = discovery.get("").unwrap();
    let kinds: Vec<String> = core
        .recommended_resources()
        .into_iter()
        .map(|(r, _)| r.kind)
        .collect();
    assert_eq!(kinds, ["ConfigMap"]);
}
