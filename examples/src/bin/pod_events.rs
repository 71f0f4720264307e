//! The client-go informer sample: a shared Pod informer whose handler logs every add, update and
//! delete, until Ctrl-C.
//!
//! Run against the cluster of your kubeconfig: `cargo run -p kubeward-examples --bin pod_events`
//! (add `-- --namespace NAME` to watch one namespace).

use std::sync::Arc;

use clap::Parser;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use kubeward::cache::Deleted;
use kubeward::cli::{LogFormat, init_logging};
use kubeward::informer::{Factory, handler_fns};

/// Command-line flags of the example.
#[derive(Debug, Parser)]
struct Args {
    /// Watch only this namespace (default: all namespaces).
    #[arg(long)]
    namespace: Option<String>,
}

fn name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_logging(LogFormat::Text, "info")?;
    let args = Args::parse();
    let client = Client::try_default().await?;

    // ANCHOR: informer
    let factory = Factory::new(client.clone());
    let pods = factory.informer(match &args.namespace {
        Some(namespace) => Api::<Pod>::namespaced(client, namespace),
        None => Api::<Pod>::all(client),
    });
    let _registration = pods.add_handler(
        handler_fns()
            .on_add(|pod: Arc<Pod>| tracing::info!(pod = name(&pod), "added"))
            .on_update(|_old, new: Arc<Pod>| tracing::info!(pod = name(&new), "updated"))
            .on_delete(|deleted: Deleted<Pod>| {
                tracing::info!(
                    pod = name(deleted.object()),
                    final_state_unknown = deleted.is_final_state_unknown(),
                    "deleted"
                );
            }),
    );
    factory.start()?;
    factory.wait_for_sync().await?;
    tracing::info!(cached = pods.store().len(), "synced; Ctrl-C stops");
    // ANCHOR_END: informer

    tokio::signal::ctrl_c().await?;
    factory.shutdown().await;
    Ok(())
}
