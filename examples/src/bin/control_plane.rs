//! Starts a local control plane (etcd + kube-apiserver) and keeps it running until Ctrl-C or
//! SIGTERM, for tests on an existing cluster (`KUBEWARD_USE_EXISTING_CLUSTER=true`) or for
//! trying things by hand.
//!
//! Run with `bash scripts/control-plane`. It prints the kubeconfig's path on its first line of
//! standard output, then waits; point `KUBECONFIG` at that file.

use std::io::Write as _;

use kubeward::testing::ControlPlane;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cp = ControlPlane::start().await?;
    let mut out = std::io::stdout();
    writeln!(out, "{}", cp.kubeconfig().display())?;
    out.flush()?;
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    // Dropping `cp` stops kube-apiserver, then etcd, and removes the folder.
    drop(cp);
    Ok(())
}
