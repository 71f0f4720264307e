//! A `@@kind@@` sample on a local control plane: the operator reports it Ready.

use std::time::Duration;

use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kubeward::testing::{ControlPlane, wait_for};

use @@crate@@::api::@@module@@::@@kind@@;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_@@module@@_sample_becomes_ready() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    crate::install_crds(cp).await?;
    let ns = cp.create_namespace("@@kebab@@").await?;
    let _operator = crate::Operator::start(cp, &ns)?;

    let sample: @@kind@@ = crate::sample("@@sample@@")?;
    let objects: Api<@@kind@@> = Api::namespaced(cp.client(), &ns);
    objects.create(&PostParams::default(), &sample).await?;

    let name = sample.metadata.name.unwrap_or_default();
    let ready = || async {
        let status = objects.get(&name).await.ok()?.status?;
        status.conditions.is_true("Ready").then_some(())
    };
    let what = format!("the @@kind@@ {name} (config/samples/@@sample@@) to be Ready");
    let became_ready = wait_for(Duration::from_secs(60), &what, ready).await;

    // Deleted while the operator runs, however the wait ended: the operator's finalizer is done
    // before the operator is stopped, so the namespace can go (none is left Terminating).
    objects.delete(&name, &DeleteParams::default()).await?;
    let gone = || async { objects.get_opt(&name).await.ok()?.is_none().then_some(()) };
    let what = format!("the @@kind@@ {name} to be deleted (the operator's finalizer done)");
    wait_for(Duration::from_secs(60), &what, gone).await?;
    became_ready?;
    Ok(())
}
