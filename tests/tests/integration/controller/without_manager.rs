//! The example operator's controller run without a Manager, on the real control plane: bound to
//! a `Cluster`, it reconciles, runs its cleanup behind the finalizer, and stops on its shutdown
//! future.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kubeward::controller::Cluster;
use kubeward::informer::Factory;
use kubeward::testing::{ControlPlane, install_definition, wait_for};
use kubeward_examples::by_hand::{controller_without_macro, generated_name};
use kubeward_examples::configmap_generator::ConfigMapGenerator;
use tokio_util::sync::CancellationToken;

use super::generator;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_controller_reconciles_cleans_up_and_stops_without_a_manager() -> anyhow::Result<()>
{
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("without-manager").await?;
    let factory = Arc::new(Factory::new(cp.client()));
    let cluster = Cluster::new(Arc::clone(&factory)).namespace(Some(ns.clone()));
    let bound = controller_without_macro().bind(&cluster)?;
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let run = tokio::spawn(async move { bound.run(stop.cancelled_owned()).await });

    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let created = generators
        .create(&PostParams::default(), &generator("solo", "hello"))
        .await?;
    let name = generated_name(&created);
    wait_for(
        Duration::from_secs(30),
        "the generated ConfigMap",
        || async { configmaps.get_opt(&name).await.ok().flatten() },
    )
    .await?;

    generators.delete("solo", &DeleteParams::default()).await?;
    wait_for(
        Duration::from_secs(30),
        "the generator gone, its cleanup done",
        || async {
            generators
                .get_opt("solo")
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await?;
    // The test control plane runs no garbage collector: only the cleanup deletes the ConfigMap.
    assert!(
        configmaps.get_opt(&name).await?.is_none(),
        "the cleanup deleted the generated ConfigMap"
    );

    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(30), run).await???;
    factory.shutdown().await;
    Ok(())
}
