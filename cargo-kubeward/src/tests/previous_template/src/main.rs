//! Runs the memo-operator operator: `memo-operator [FLAGS]` (`--help` lists them); `memo-operator crd` prints
//! its CRDs and `memo-operator manifests` writes its CRDs and RBAC rules into `charts/memo-operator`.

use kubeward::cli::Operator;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // --metrics-bind-address, --leader-elect, ..., and the `crd` and `manifests` subcommands
    let manager = Operator::from_args("The memo-operator operator").await?;
    // Every controller and webhook `cargo kubeward create` made (src/lib.rs).
    memo_operator::register(&manager)?;
    manager.run().await?; // until SIGTERM, or until leadership is lost
    Ok(())
}
