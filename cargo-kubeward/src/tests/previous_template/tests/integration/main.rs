//! Tests of the memo-operator operator against a local control plane (kubeward's testing kit):
//! one module per kind. `cargo kubeward create` rewrites this file; write tests in the
//! modules it lists.

mod memo;

use std::process::{Child, Command, Stdio};

use kubeward::testing::{ControlPlane, install_crd_object};

/// Installs the CRD of every custom resource of the operator, and waits until they are served.
async fn install_crds(cp: &ControlPlane) -> anyhow::Result<()> {
    for crd in memo_operator::crds() {
        install_crd_object(cp.client(), crd).await?;
    }
    Ok(())
}

/// The sample object `config/samples/FILE`.
fn sample<K: serde::de::DeserializeOwned>(file: &str) -> anyhow::Result<K> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("config/samples")
        .join(file);
    Ok(serde_norway::from_str(&std::fs::read_to_string(path)?)?)
}

/// The operator, exactly as `cargo run` builds it, running against `cp` in the namespace `ns`;
/// stopped when dropped, however the test ends.
struct Operator(Child);

impl Operator {
    fn start(cp: &ControlPlane, ns: &str) -> anyhow::Result<Self> {
        let child = Command::new(env!("CARGO_BIN_EXE_memo-operator"))
            .args(["--namespace", ns, "--health-probe-bind-address", "0"])
            .args(["--metrics-bind-address", "0"])
            // No webhook server: the tests' API server does not call the operator.
            .args(["--webhook-port", "0"])
            .env("KUBECONFIG", cp.kubeconfig())
            .stdout(Stdio::null())
            .spawn()?;
        Ok(Self(child))
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
