// ANCHOR: file
//! The tutorial's operator: `countdown [FLAGS]` runs it (`--help` lists the flags);
//! `countdown crd` prints its CRD as YAML and `countdown manifests CHART` writes its CRD and RBAC
//! rules into a Helm chart.

use countdown::{Countdown, Timer};
use kubeward::cli::Operator;

// ANCHOR: main
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // --metrics-bind-address, --leader-elect, ..., and the `crd` and `manifests` subcommands
    let manager = Operator::from_args("Counts down Countdown custom resources").await?;
    manager.add(Countdown::controller(Timer))?;
    manager.run().await?; // until SIGTERM, or until leadership is lost
    Ok(())
}
// ANCHOR_END: main
// ANCHOR_END: file
