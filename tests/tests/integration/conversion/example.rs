//! The example operator's conversion on its own CRD: a generator written as `v1alpha1` is
//! stored as `v1`, read as either, and its `data` is `v1`'s `content`.

use std::time::Duration;

use kube::Api;
use kube::api::PostParams;
use kubeward::manager::{Config, Manager};
use kubeward::testing::{ControlPlane, free_addr, install_definition, wait_for};
use kubeward::webhook;
use kubeward_examples::configmap_generator::ConfigMapGenerator;
use kubeward_examples::configmap_generator_v1alpha1 as v1alpha1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_serves_v1alpha1_generators_as_v1_and_back() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("conversion-example").await?;
    let port = free_addr()?.port();
    let config = webhook::Config::default()
        .port(port)
        .self_signed(true)
        .hosts(["127.0.0.1"])
        .url(format!("https://127.0.0.1:{port}"));
    let manager = Manager::new(cp.client(), Config::default().webhook(config))?;
    manager.add_conversion(ConfigMapGenerator::converter())?;
    let stop = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    let old_api: Api<v1alpha1::ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let old = v1alpha1::ConfigMapGenerator::new(
        "old",
        v1alpha1::ConfigMapGeneratorSpec {
            data: "written as v1alpha1".into(),
        },
    );
    // Stored as v1: the API server converts it through the webhook once the manager has
    // pointed the CRD at itself.
    let created = wait_for(
        Duration::from_secs(30),
        "the API server to convert a v1alpha1 generator through the example's webhook",
        || {
            let (api, old) = (old_api.clone(), old.clone());
            async move { api.create(&PostParams::default(), &old).await.ok() }
        },
    )
    .await?;
    assert_eq!(created.spec.data, "written as v1alpha1");

    let new_api: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let new = new_api.get("old").await?;
    assert_eq!(new.spec.content, "written as v1alpha1");
    assert_eq!(new.metadata.uid, created.metadata.uid);
    let again = old_api.get("old").await?;
    assert_eq!(again.spec.data, created.spec.data);
    assert_eq!(again.metadata, created.metadata);

    stop.cancel();
    run.await??;
    Ok(())
}
