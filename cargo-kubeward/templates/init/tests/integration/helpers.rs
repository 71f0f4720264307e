use std::process::{Child, Command, Stdio};

use kubeward::testing::{ControlPlane, install_crd_object};

/// Installs the CRD of every custom resource of the operator, and waits until they are served.
async fn install_crds(cp: &ControlPlane) -> anyhow::Result<()> {
    for crd in @@crate@@::crds() {
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
        let child = Command::new(env!("CARGO_BIN_EXE_@@name@@"))
            .args(["--namespace", ns, "--health-probe-bind-address", "0"])
            .args(["--metrics-bind-address", "0"])
@@webhook_args@@            .env("KUBECONFIG", cp.kubeconfig())
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
