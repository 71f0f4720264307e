//! Competes for a Lease and logs when leadership moves: run it in three terminals.
//!
//! Start a cluster (or `bash scripts/demo`, which prints a kubeconfig), then in three terminals:
//!
//! ```text
//! cargo run -p kubeward-examples --bin leader_election -- --kubeconfig /path/to/kubeconfig
//! ```
//!
//! One instance logs `leading`, the others `standby`. Press Ctrl-C in the leader's terminal: it
//! releases the Lease and a standby leads within about one retry period. Kill it instead
//! (`kill -9`): a standby leads once the lease duration has passed. With `--lead-for 10` each
//! leader steps down after ten seconds, so leadership rotates on its own.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config as KubeConfig};
use kubeward::cli::{LogFormat, init_logging};
use kubeward::leader::{Config, LeaderElector};

/// Command-line flags of the leader-election example.
#[derive(Debug, Parser)]
struct Args {
    /// The kubeconfig to use; by default kube's inference (`KUBECONFIG`, `~/.kube/config`, in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The namespace of the Lease.
    #[arg(long, default_value = "default")]
    namespace: String,
    /// The name of the Lease.
    #[arg(long, default_value = "leader-election-example")]
    lease: String,
    /// Seconds others wait before taking over a Lease that is not renewed.
    #[arg(long, default_value_t = 15.0)]
    lease_duration: f64,
    /// Seconds the leader keeps leading without a successful renewal.
    #[arg(long, default_value_t = 10.0)]
    renew_deadline: f64,
    /// Seconds between attempts to acquire or renew.
    #[arg(long, default_value_t = 2.0)]
    retry_period: f64,
    /// Step down (releasing the Lease) after leading this many seconds, and exit.
    #[arg(long)]
    lead_for: Option<f64>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    init_logging(LogFormat::Text, "info")?;
    let client = client(args.kubeconfig.as_ref()).await?;

    // ANCHOR: elector
    let config = Config::default()
        .lease_duration(Duration::from_secs_f64(args.lease_duration))
        .renew_deadline(Duration::from_secs_f64(args.renew_deadline))
        .retry_period(Duration::from_secs_f64(args.retry_period));
    let elector = LeaderElector::new(client, &args.namespace, &args.lease, config)?
        .on_started_leading(|_| tracing::info!("leading"))
        .on_stopped_leading(|_| tracing::info!("stopped leading"));
    let identity = elector.identity().to_owned();
    let mut leadership = elector.leadership();
    let (step_down, stepped_down) = tokio::sync::oneshot::channel::<()>();
    let election = tokio::spawn(elector.run(async {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = stepped_down => {}
        }
    }));
    // ANCHOR_END: elector

    tracing::info!(%identity, lease = %leadership.lease_name(), "standby; press Ctrl-C to stop");
    let mut holder = None;
    let mut step_down = Some(step_down);
    let mut lead_for = args.lead_for;
    // Every published change wakes this loop, renewals included.
    while leadership.changed().await.is_ok() {
        let status = leadership.status();
        if status.holder != holder
            && status.term.is_none()
            && status.holder.as_deref() != Some(identity.as_str())
        {
            holder.clone_from(&status.holder);
            tracing::info!(holder = holder.as_deref().unwrap_or("nobody"), "standby");
        }
        if leadership.is_leader()
            && let Some(seconds) = lead_for.take()
        {
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            tracing::info!("stepping down after {seconds} s");
            if let Some(step_down) = step_down.take() {
                step_down.send(()).ok();
            }
        }
    }
    election.await.context("the election task")?;
    Ok(())
}

/// A client from `kubeconfig`, or from kube's usual inference without one.
async fn client(kubeconfig: Option<&PathBuf>) -> anyhow::Result<Client> {
    let Some(path) = kubeconfig else {
        return Client::try_default()
            .await
            .context("inferring the kube config");
    };
    let kubeconfig =
        Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
    let config =
        KubeConfig::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}
