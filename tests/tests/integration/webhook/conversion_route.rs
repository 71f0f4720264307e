//! A route marked as a CRD's conversion webhook: with a self-signed certificate the manager
//! points the CRD's conversion at itself, trusting its CA, and the route answers over HTTPS.

use std::time::Duration;

use bytes::Bytes;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, CustomResource};
use kubeward::testing::{ControlPlane, install_crd, wait_for};
use kubeward::webhook::{self, Route};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::manager;

/// A kind of this test alone, so that pointing its conversion elsewhere touches no other test.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "webhook.kubeward.dev",
    version = "v1",
    kind = "Converted",
    namespaced
)]
struct ConvertedSpec {
    size: u32,
}

const CRD: &str = "converteds.webhook.kubeward.dev";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversion_route_gets_its_crd_pointed_at_the_manager_with_the_ca_bundle()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_crd::<Converted>(cp.client()).await?;
    let ns = cp.create_namespace("webhook-conversion").await?;
    let (manager, port) = manager(
        cp.client(),
        &ns,
        webhook::Config::default().self_signed(true),
    )
    .await?;
    manager.add_route(
        Route::new("/convert", |body: Bytes| async move {
            http::Response::new(body)
        })
        .converts(CRD),
    )?;
    let stop = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    let crds: Api<CustomResourceDefinition> = Api::all(cp.client());
    let client_config = wait_for(
        Duration::from_secs(30),
        "the CRD's conversion to be a webhook",
        || async {
            let conversion = crds.get(CRD).await.ok()?.spec.conversion?;
            (conversion.strategy == "Webhook").then_some(())?;
            conversion.webhook?.client_config
        },
    )
    .await?;
    assert_eq!(
        client_config.url,
        Some(format!("https://127.0.0.1:{port}/convert"))
    );
    let ca = client_config.ca_bundle.map(|b| b.0).unwrap_or_default();
    assert!(
        ca.starts_with(b"-----BEGIN CERTIFICATE-----"),
        "the caBundle is the CA, PEM"
    );

    stop.cancel();
    run.await??;
    Ok(())
}
