//! The example operator: reconciles `ConfigMapGenerator`s into ConfigMaps.
//!
//! `configmap_generator [FLAGS]` runs it with controller-runtime's flags (`--help` lists them);
//! `configmap_generator crd` prints its CustomResourceDefinition as YAML;
//! `configmap_generator manifests [CHART]` writes the CRD and the RBAC rules into the chart
//! (`charts/configmap-generator` by default). Both subcommands come with `Operator`.

use kubeward::cli::Operator;
use kubeward_examples::configmap_generator::{ConfigMapGenerator, Generator};

// ANCHOR: main
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let manager = Operator::from_args("The example operator of kubeward: ConfigMaps").await?;
    manager.add(ConfigMapGenerator::controller(Generator))?;
    Ok(manager.run().await?) // or, for `crd` and `manifests`, print or write them and return
}
// ANCHOR_END: main
