//! The second example operator on the real control plane: two owned kinds, sized from the spec,
//! its own `Available` condition (failures included), events from what each write did, cleanup.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kubeward::crd::Definition as _;
use kubeward::informer::CacheScope;
use kubeward::manager::{Config, Manager};
use kubeward::testing::{ControlPlane, install_definition, wait_for};
use kubeward_examples::webapp::{WebApp, WebAppSpec, WebApps};

use crate::waits::{REACT, condition_of, event};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webapp_owns_a_sized_deployment_and_a_service_reports_available_and_cleans_up()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<WebApp>(cp.client()).await?;
    let ns = cp.create_namespace("webapp").await?;
    let manager = Manager::new(
        cp.client(),
        Config::default().cache(CacheScope::default().namespaces([ns.clone()])),
    )?;
    manager.add(WebApp::controller(WebApps))?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    let apps: Api<WebApp> = Api::namespaced(cp.client(), &ns);
    let deployments: Api<Deployment> = Api::namespaced(cp.client(), &ns);
    let services: Api<Service> = Api::namespaced(cp.client(), &ns);
    let spec = WebAppSpec {
        image: "registry.invalid/web:1".into(),
        replicas: 2,
        port: 8080,
    };
    apps.create(&PostParams::default(), &WebApp::new("web", spec))
        .await?;
    // No kube-controller-manager runs here: no pod ever becomes available on its own.
    let app = condition_of(&apps, "web", WebApp::CONDITION, |c| {
        c.status == "False" && c.message == "0 of 2 replicas available"
    })
    .await?;
    // `ctx.report` wrote the condition and the generation it describes together.
    let observed = app.status.as_ref().and_then(|s| s.observed_generation);
    assert_eq!(observed, app.metadata.generation, "{:?}", app.status);
    let replicas = |d: &Deployment| d.spec.replicas;
    assert_eq!(replicas(&deployments.get("web").await?), Some(2));
    assert!(services.get_opt("web").await?.is_some(), "the Service");
    // The opt-in owned-object Events: one per object created.
    event(cp, &app, "Created", "Created Deployment web").await?;
    event(cp, &app, "Created", "Created Service web").await?;

    let scale = serde_json::json!({ "spec": { "replicas": 3 } });
    apps.patch("web", &PatchParams::default(), &Patch::Merge(&scale))
        .await?;
    event(cp, &app, "Scaled", "scaled from 2 to 3 replicas").await?;
    assert_eq!(replicas(&deployments.get("web").await?), Some(3));
    // The pods come up: the Deployment's status change reconciles its owner.
    let up = serde_json::json!({ "status": {
        "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 3,
    } });
    deployments
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&up))
        .await?;
    condition_of(&apps, "web", WebApp::CONDITION, |c| {
        c.status == "True" && c.message == "3 of 3 replicas available"
    })
    .await?;

    // A spec the API server refuses: the failure goes on the operator's own condition, and no
    // `Ready` condition appears.
    let refused = serde_json::json!({ "spec": { "port": 0 } });
    apps.patch("web", &PatchParams::default(), &Patch::Merge(&refused))
        .await?;
    let failed = condition_of(&apps, "web", WebApp::CONDITION, |c| {
        c.status == "False" && c.reason == "Invalid"
    })
    .await?;
    let status = failed.status.unwrap_or_default();
    assert!(
        status.conditions.find("Ready").is_none(),
        "no stray Ready condition: {:?}",
        status.conditions
    );
    let columns: Vec<String> = WebApp::definition().spec.versions[0]
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(columns, ["Available", "Reason", "Message", "Age"]);

    apps.delete("web", &DeleteParams::default()).await?;
    event(cp, &app, "Deleted", "Deleted Deployment web").await?;
    event(cp, &app, "Deleted", "Deleted Service web").await?;
    wait_for(REACT, "the WebApp and what it owned to be gone", || async {
        let gone = apps.get_opt("web").await.ok()?.is_none()
            && deployments.get_opt("web").await.ok()?.is_none()
            && services.get_opt("web").await.ok()?.is_none();
        gone.then_some(())
    })
    .await?;
    token.cancel();
    tokio::time::timeout(REACT, run).await???;
    Ok(())
}
