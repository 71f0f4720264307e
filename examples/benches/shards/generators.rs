//! Creates generators in bulk, 64 requests at a time.

use futures::{StreamExt as _, TryStreamExt as _};
use kube::Api;
use kube::api::PostParams;
use kubeward_examples::configmap_generator::{ConfigMapGenerator, ConfigMapGeneratorSpec};

/// Creates generators `g-{from}` .. `g-{to - 1}`.
pub async fn create(api: &Api<ConfigMapGenerator>, from: usize, to: usize) -> anyhow::Result<()> {
    futures::stream::iter(from..to)
        .map(|i| async move {
            let spec = ConfigMapGeneratorSpec {
                content: format!("content of generator {i}"),
            };
            api.create(
                &PostParams::default(),
                &ConfigMapGenerator::new(&format!("g-{i}"), spec),
            )
            .await
            .map(drop)
        })
        .buffer_unordered(64)
        .try_collect::<()>()
        .await?;
    Ok(())
}
