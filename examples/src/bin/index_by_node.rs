//! Indexes Pods by `spec.nodeName` and logs how many run on each node.
//!
//! Run against the cluster of your kubeconfig: `cargo run -p kubeward-examples --bin index_by_node`.

use clap::Parser;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use kubeward::cli::{LogFormat, init_logging};
use kubeward::informer::Factory;

/// Command-line flags of the example.
#[derive(Debug, Parser)]
struct Args {
    /// Only list the Pods of this node.
    #[arg(long)]
    node: Option<String>,
}

/// The index function: a Pod's node, if it is scheduled.
fn by_node(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.node_name.clone())
        .into_iter()
        .collect()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_logging(LogFormat::Text, "info")?;
    let args = Args::parse();
    let client = Client::try_default().await?;

    // ANCHOR: index
    let factory = Factory::new(client.clone());
    let pods = factory.informer(Api::<Pod>::all(client));
    pods.add_index("node", by_node)?;
    factory.start()?;
    factory.wait_for_sync().await?;

    let store = pods.store();
    let mut nodes = store.index_values("node")?;
    nodes.sort();
    for node in nodes
        .iter()
        .filter(|n| args.node.as_ref().is_none_or(|only| only == *n))
    {
        let on_node = store.by_index("node", node)?;
        tracing::info!(node, pods = on_node.len(), "pods by node");
    }
    // ANCHOR_END: index
    factory.shutdown().await;
    Ok(())
}
