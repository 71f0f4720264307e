//! Starts a local control plane (etcd and kube-apiserver on loopback, from kubeward's testing
//! kit), installs the operator's CRDs, prints the kubeconfig's path and waits for Ctrl-C:
//! `KUBECONFIG=<that path> cargo run` runs the operator against it.

use std::io::Write as _;

use kubeward::testing::{ControlPlane, install_crd_object};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cp = ControlPlane::start().await?;
    for crd in memo_operator::crds() {
        install_crd_object(cp.client(), crd).await?;
    }
    let mut out = std::io::stdout();
    writeln!(out, "{}", cp.kubeconfig().display())?;
    out.flush()?;
    tokio::signal::ctrl_c().await?;
    // Dropping `cp` stops kube-apiserver, then etcd, and removes their folder.
    drop(cp);
    Ok(())
}
