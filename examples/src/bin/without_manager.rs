//! A controller without a Manager: it labels every ConfigMap it sees, until Ctrl-C. No HTTP
//! endpoints, no leader election, no flags: the controller on its own, as kube-runtime's
//! `Controller::run` is.
//!
//! Run against the cluster of your kubeconfig: `cargo run -p kubeward-examples --bin
//! without_manager` (add `-- --namespace NAME` to watch one namespace).

use std::sync::Arc;

use clap::Parser;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt as _};
use kubeward::cli::{LogFormat, init_logging};
use kubeward::controller::{Action, Cluster, Context, Controller, Reconciler};
use kubeward::informer::Factory;

/// Command-line flags of the example.
#[derive(Debug, Parser)]
struct Args {
    /// Watch only this namespace (default: all namespaces).
    #[arg(long)]
    namespace: Option<String>,
}

/// Labels every ConfigMap it sees.
struct Labeller;

impl Reconciler<ConfigMap> for Labeller {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> Result<Action, kube::Error> {
        let api: Api<ConfigMap> =
            Api::namespaced(ctx.client(), &cm.namespace().unwrap_or_default());
        let patch = serde_json::json!({ "metadata": { "labels": { "seen-by": "kubeward" } } });
        api.patch(
            &cm.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
        Ok(Action::await_change())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_logging(LogFormat::Text, "info")?;
    let args = Args::parse();
    // ANCHOR: run
    let client = Client::try_default().await?;
    let cluster = Cluster::new(Arc::new(Factory::new(client))).namespace(args.namespace);
    let controller = Controller::new(Labeller).concurrency(2).bind(&cluster)?;
    let ctrl_c = async { tokio::signal::ctrl_c().await.unwrap_or_default() };
    controller.run(ctrl_c).await?; // the reconciles in flight finish after Ctrl-C
    // ANCHOR_END: run
    Ok(())
}
