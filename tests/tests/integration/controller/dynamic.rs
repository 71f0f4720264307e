//! Controllers over kinds found at run time: a CRD created by the test, discovered, reconciled as
//! `DynamicObject`s by the example's labelling controller under a Manager, namespaced and
//! cluster-scoped; an unknown kind is a clear error.

use crate::fixtures::watching;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject};
use kube::discovery::ApiCapabilities;
use kubeward_examples::label_everything::{LABEL, controller, discover};

use super::*;

const GROUP: &str = "dynamic.kubeward.dev";

/// A CRD of `kind` (plural `plural`) in [`GROUP`] with `scope`, keeping any fields.
fn crd(kind: &str, plural: &str, scope: &str) -> anyhow::Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{plural}.{GROUP}") },
        "spec": {
            "group": GROUP,
            "names": { "kind": kind, "plural": plural },
            "scope": scope,
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true
                } }
            }]
        }
    }))?)
}

/// Creates the CRD of `kind` (unless an earlier test did) and waits until discovery finds it.
async fn create_and_discover(
    client: &Client,
    kind: &str,
    plural: &str,
    scope: &str,
) -> anyhow::Result<(ApiResource, ApiCapabilities)> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds
        .create(&PostParams::default(), &crd(kind, plural, scope)?)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(err) => return Err(err.into()),
    }
    let name = format!("{kind}.v1.{GROUP}");
    Ok(wait_for(
        Duration::from_secs(30),
        &format!("discovery to find {name}"),
        || async { discover(client, &name).await.ok() },
    )
    .await?)
}

fn object(resource: &ApiResource, name: &str) -> DynamicObject {
    let mut obj = DynamicObject::new(name, resource);
    obj.data = serde_json::json!({ "spec": { "size": 3 } });
    obj
}

/// Waits until every object `api` names in `names` carries the controller's label.
async fn wait_labelled(
    api: &Api<DynamicObject>,
    names: &[String],
    controller: &str,
) -> anyhow::Result<()> {
    for name in names {
        wait_for(
            Duration::from_secs(30),
            &format!("{name} labelled {LABEL}={controller}"),
            || async {
                let obj = api.get(name).await.ok()?;
                (obj.labels().get(LABEL).map(String::as_str) == Some(controller)).then_some(())
            },
        )
        .await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_over_a_kind_discovered_at_run_time_reconciles_each_of_its_objects()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let client = cp.client();
    let (doodads, doodad_caps) =
        create_and_discover(&client, "Doodad", "doodads", "Namespaced").await?;
    let (globals, global_caps) =
        create_and_discover(&client, "GlobalDoodad", "globaldoodads", "Cluster").await?;
    assert_eq!(doodads.plural, "doodads", "the plural comes from discovery");
    let ns = cp.create_namespace("dynamic").await?;

    let manager = Manager::new(client.clone(), watching(ns.clone()))?;
    manager.add(controller(&doodads, &doodad_caps))?;
    manager.add(controller(&globals, &global_caps))?;
    let (token, run) = start(manager);

    let namespaced: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &doodads);
    let cluster: Api<DynamicObject> = Api::all_with(client.clone(), &globals);
    let names: Vec<String> = (0..3).map(|i| format!("{ns}-{i}")).collect();
    for name in &names {
        namespaced
            .create(&PostParams::default(), &object(&doodads, name))
            .await?;
        cluster
            .create(&PostParams::default(), &object(&globals, name))
            .await?;
    }
    wait_labelled(&namespaced, &names, "label-doodads").await?;
    // Cluster-scoped objects are watched everywhere, though the manager watches one namespace.
    wait_labelled(&cluster, &names, "label-globaldoodads").await?;

    // A label taken off is put back: the controller keeps reconciling changes.
    let unlabel = serde_json::json!({ "metadata": { "labels": { LABEL: null } } });
    namespaced
        .patch(&names[0], &PatchParams::default(), &Patch::Merge(&unlabel))
        .await?;
    wait_labelled(&namespaced, &names[..1], "label-doodads").await?;

    stop(token, run).await?;
    for name in &names {
        cluster.delete(name, &DeleteParams::default()).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovering_a_kind_the_api_server_does_not_serve_is_an_error_naming_it()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let client = cp.client();
    for name in [
        "Nothing",
        "Nothing.v1",
        "Nothing.v1.apps",
        "Widget.v1.nowhere.kubeward.dev",
        "Deployment.v9.apps",
    ] {
        let error = discover(&client, name)
            .await
            .expect_err("no such kind is served");
        assert_eq!(
            error.to_string(),
            format!("the API server serves no kind {name:?}")
        );
    }
    let (deployments, caps) = discover(&client, "Deployment").await?;
    assert_eq!(deployments.api_version, "apps/v1");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    Ok(())
}
