//! A per-kind label selector keeps unlabelled objects out of the cache, and an object relabelled
//! into and out of it enters and leaves the cache as an add and a delete.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kubeward::controller::Cluster;
use kubeward::informer::{CacheScope, Factory, handler_fns};
use kubeward::testing::{ControlPlane, wait_for};
use parking_lot::Mutex;

use super::{REACT, create};

/// The label the selector asks for.
const LABEL: &str = "scope.kubeward.dev/cached";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_selector_keeps_unlabelled_objects_out_and_a_relabelled_one_comes_and_goes()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let client = cp.client();
    let ns = cp.create_namespace("scope-labels").await?;
    create(&client, &ns, "labelled", &[(LABEL, "yes")]).await?;
    for name in ["plain", "moving"] {
        create(&client, &ns, name, &[]).await?;
    }
    let factory = Arc::new(Factory::new(client.clone()));
    let scope = CacheScope::default()
        .namespaces([ns.clone()])
        .labels::<ConfigMap>(&format!("{LABEL}=yes"));
    scope.check()?;
    let informer = Cluster::new(Arc::clone(&factory))
        .cache(scope)
        .informer::<ConfigMap>();
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let (added, updated, deleted) = (events.clone(), events.clone(), events.clone());
    let name = |cm: &ConfigMap| cm.metadata.name.clone().unwrap_or_default();
    let _registration = informer.add_handler(
        handler_fns()
            .on_add(move |cm: Arc<ConfigMap>| added.lock().push(format!("add {}", name(&cm))))
            .on_update(move |_, cm: Arc<ConfigMap>| {
                updated.lock().push(format!("update {}", name(&cm)));
            })
            .on_delete(move |gone| {
                deleted
                    .lock()
                    .push(format!("delete {}", name(gone.object())));
            }),
    );
    factory.start()?;
    factory.wait_for_sync().await?;
    let store = informer.store();
    assert_eq!(
        store.len(),
        1,
        "only the labelled ConfigMap is cached: {store:?}"
    );

    let api: Api<ConfigMap> = Api::namespaced(client, &ns);
    let relabel = |value: Option<&str>| {
        let patch = serde_json::json!({ "metadata": { "labels": { LABEL: value } } });
        let api = api.clone();
        async move {
            api.patch("moving", &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }
    };
    relabel(Some("yes")).await?;
    wait_for(
        REACT,
        "the relabelled ConfigMap added to the cache",
        || async { (store.len() == 2).then_some(()) },
    )
    .await?;
    relabel(None).await?;
    wait_for(
        REACT,
        "the unlabelled ConfigMap deleted from the cache",
        || async { (store.len() == 1).then_some(()) },
    )
    .await?;
    wait_for(REACT, "the handler told of the delete", || async {
        events
            .lock()
            .iter()
            .any(|e| e == "delete moving")
            .then_some(())
    })
    .await?;
    assert_eq!(
        *events.lock(),
        ["add labelled", "add moving", "delete moving"],
        "the handler saw the relabelled object come and go, and nothing of the plain one"
    );
    assert!(store.get_by_name(Some(&ns), "plain").is_none());
    factory.shutdown().await;
    Ok(())
}
