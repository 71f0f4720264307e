//! Custom resources that do not fit the Rust type are skipped and counted; the rest are cached.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResource;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use serde::{Deserialize, Serialize};

use super::*;

/// Only `replicas` is typed; the CRD keeps whatever else clients send.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize)]
#[kube(
    group = "informer.kubeward.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    schema = "disabled"
)]
pub(super) struct WidgetSpec {
    replicas: i32,
}

fn crd() -> anyhow::Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.informer.kubeward.dev"},
        "spec": {
            "group": "informer.kubeward.dev",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))?)
}

async fn install_crd(client: &Client, ns: &str) -> anyhow::Result<Api<DynamicObject>> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds.create(&PostParams::default(), &crd()?).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(err) => return Err(err.into()),
    }
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("informer.kubeward.dev", "v1", "Widget"),
        "widgets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
    wait_for(SYNC, "the Widget CRD to be served", || async {
        api.list(&ListParams::default()).await.ok().map(drop)
    })
    .await?;
    Ok(api)
}

fn widget(name: &str, replicas: &serde_json::Value) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(serde_json::json!({
        "apiVersion": "informer.kubeward.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"replicas": replicas}
    }))?)
}

#[tokio::test]
async fn a_custom_resource_that_does_not_decode_is_skipped_and_every_other_one_is_cached()
-> anyhow::Result<()> {
    if kubeward::testing::skip_on_existing_cluster(
        "a private control plane (a custom-resource write may crash this one)",
    ) {
        return Ok(());
    }
    let cp = ControlPlane::start().await?;
    let ns = cp.create_namespace("inf-crd").await?;
    let dynamic = match install_crd(&cp.client(), &ns).await {
        Ok(api) => api,
        Err(err) => panic!("install: {err}\n{}", cp.apiserver_log_tail(60)),
    };
    for i in 0..3 {
        let created = dynamic
            .create(
                &PostParams::default(),
                &widget(&format!("good-{i}"), &i.into())?,
            )
            .await;
        if let Err(err) = created {
            panic!("create: {err}\n{}", cp.apiserver_log_tail(60));
        }
    }
    dynamic
        .create(&PostParams::default(), &widget("bad", &"three".into())?)
        .await?;

    let factory = Factory::new(cp.client());
    let widgets = factory.informer(Api::<Widget>::namespaced(cp.client(), &ns));
    let untyped = factory.informer(dynamic.clone());
    factory.start()?;
    tokio::time::timeout(SYNC, factory.wait_for_sync()).await??;

    let mut names: Vec<String> = widgets
        .store()
        .list()
        .iter()
        .map(|w| w.metadata.name.clone().unwrap_or_default())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["good-0", "good-1", "good-2"],
        "the bad widget is skipped, the others cached"
    );
    assert_eq!(widgets.stats().decode_failures(), 1);
    assert_eq!(
        untyped.store().len(),
        4,
        "a DynamicObject informer caches every widget"
    );

    // The informer keeps running: a later good object still arrives.
    dynamic
        .create(&PostParams::default(), &widget("good-later", &7.into())?)
        .await?;
    wait_for(SYNC, "the widget created after the bad one", || async {
        widgets
            .store()
            .get(&kubeward::cache::ObjectKey::new(Some(&ns), "good-later"))
            .map(drop)
    })
    .await?;
    factory.shutdown().await;
    Ok(())
}
