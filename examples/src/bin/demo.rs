//! Starts a local control plane and shows it answering: the README's demo.
//!
//! Run with `bash scripts/demo`. It starts etcd and kube-apiserver on loopback, writes a
//! kubeconfig you can point kubectl at, stores and reads back a ConfigMap, and waits for Ctrl-C
//! (or exits at once with `--once`).

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::testing::ControlPlane;

/// Command-line flags of the demo.
#[derive(Debug, Parser)]
struct Args {
    /// Exit after showing the control plane answering, instead of waiting for Ctrl-C.
    #[arg(long)]
    once: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();

    // ANCHOR: control_plane
    let cp = ControlPlane::start()
        .await
        .context("starting the local control plane")?;
    let namespace = cp.create_namespace("demo").await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &namespace);
    let greeting = ConfigMap {
        metadata: ObjectMeta {
            name: Some("greeting".into()),
            ..ObjectMeta::default()
        },
        data: Some([("hello".to_owned(), "world".to_owned())].into()),
        ..ConfigMap::default()
    };
    configmaps.create(&PostParams::default(), &greeting).await?;
    let stored = configmaps.get("greeting").await?;
    // ANCHOR_END: control_plane

    // Logging starts after start-up: kube's client logs each 500 from `/readyz` while it warms up.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();

    tracing::info!(
        server = %cp.server_url(),
        kubeconfig = %cp.kubeconfig().display(),
        "control plane ready"
    );
    tracing::info!(
        namespace,
        uid = stored.metadata.uid.as_deref().unwrap_or_default(),
        resource_version = stored
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or_default(),
        "stored ConfigMap greeting; try: kubectl --kubeconfig {} get configmaps -A",
        cp.kubeconfig().display()
    );
    if !args.once {
        tracing::info!("press Ctrl-C to stop");
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}
