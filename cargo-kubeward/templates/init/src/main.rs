//! Runs the @@name@@ operator: `@@name@@ [FLAGS]` (`--help` lists them); `@@name@@ crd` prints
//! its CRDs and `@@name@@ manifests` writes its CRDs and RBAC rules into `charts/@@name@@`.

use kubeward::cli::Operator;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // --metrics-bind-address, --leader-elect, ..., and the `crd` and `manifests` subcommands
    let manager = Operator::from_args("The @@name@@ operator").await?;
    // Every controller and webhook `cargo kubeward create` made (src/lib.rs).
    @@crate@@::register(&manager)?;
    manager.run().await?; // until SIGTERM, or until leadership is lost
    Ok(())
}
