//! The example operator with its admission webhooks: `configmap_generator`, plus a validator that
//! refuses a `content` too large for a ConfigMap, a defaulter that labels generators with their
//! team, and the CRD's `v1alpha1` ↔ `v1` conversion, served on `--webhook-port` with the certificate in `--webhook-cert-dir`, or a
//! self-signed one (`--webhook-self-signed`, which also installs the webhook configurations).
//! `manifests` also writes the webhook configurations into the chart.
//!
//! (A program of its own so that `configmap_generator` stays the operator the book compares
//! line for line with kube-runtime's and controller-runtime's.)

use kubeward::cli::Operator;
use kubeward_examples::configmap_generator::{ConfigMapGenerator, Generator};
use kubeward_examples::webhooks::{ContentLimit, TeamLabel};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let about = "The example operator of kubeward, with a validating and a defaulting webhook";
    let manager = Operator::from_args(about).await?;
    manager.add(ConfigMapGenerator::controller(Generator))?;
    // ANCHOR: webhooks
    manager.add_validator::<ConfigMapGenerator>(ContentLimit)?;
    manager.add_defaulter::<ConfigMapGenerator>(TeamLabel)?;
    manager.add_conversion(ConfigMapGenerator::converter())?; // v1alpha1 <-> v1
    // ANCHOR_END: webhooks
    Ok(manager.run().await?)
}
