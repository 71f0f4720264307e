//! The example operator: reconciles `ConfigMapGenerator`s into ConfigMaps.
//!
//! `configmap_generator [FLAGS]` runs it with controller-runtime's flags (`--help` lists them);
//! `configmap_generator crd` prints its CustomResourceDefinition as YAML;
//! `configmap_generator manifests [CHART]` writes the CRD and the RBAC rules into the chart
//! (`charts/configmap-generator` by default). Both subcommands come with `Manager`.
//!
//! With `ENABLE_WEBHOOKS=true` it also serves its admission webhooks (a content-size validator
//! and a team-label defaulter) and its CRD's `v1alpha1` ↔ `v1` conversion on `--webhook-port`, with the certificate in `--webhook-cert-dir`
//! or a self-signed one (`--webhook-self-signed`), and `manifests` writes their configurations.

use kubeward::manager::Manager;
use kubeward_examples::configmap_generator::{ConfigMapGenerator, Generator};
use kubeward_examples::webhooks::{ContentLimit, TeamLabel};

// ANCHOR: main
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let about = "The example operator of kubeward: turns ConfigMapGenerators into ConfigMaps";
    let manager = Manager::from_args_with_about(about).await?;
    manager.add(ConfigMapGenerator::controller(Generator));
    // ANCHOR: webhooks
    if std::env::var("ENABLE_WEBHOOKS").is_ok_and(|on| on == "true") {
        manager.add_validator::<ConfigMapGenerator>(ContentLimit);
        manager.add_defaulter::<ConfigMapGenerator>(TeamLabel);
        manager.add_conversion(ConfigMapGenerator::converter()); // v1alpha1 <-> v1
    }
    // ANCHOR_END: webhooks
    Ok(manager.run().await?) // or, for `crd` and `manifests`, print or write them and return
}
// ANCHOR_END: main
