//! A `Memo` sample on a local control plane: the operator reports it Ready.

use std::time::Duration;

use kube::Api;
use kube::api::PostParams;
use kubeward::testing::{ControlPlane, wait_for};

use memo_operator::api::memo::Memo;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memo_sample_becomes_ready() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    crate::install_crds(cp).await?;
    let ns = cp.create_namespace("memo").await?;
    let _operator = crate::Operator::start(cp, &ns)?;

    let sample: Memo = crate::sample("example.com_v1alpha1_memo.yaml")?;
    let objects: Api<Memo> = Api::namespaced(cp.client(), &ns);
    objects.create(&PostParams::default(), &sample).await?;

    let name = sample.metadata.name.unwrap_or_default();
    let ready = || async {
        let status = objects.get(&name).await.ok()?.status?;
        status.conditions.is_true("Ready").then_some(())
    };
    let what =
        format!("the Memo {name} (config/samples/example.com_v1alpha1_memo.yaml) to be Ready");
    wait_for(Duration::from_secs(60), &what, ready).await?;
    Ok(())
}
