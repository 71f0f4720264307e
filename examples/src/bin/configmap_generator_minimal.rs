//! The example operator as the smallest kubeward build makes it: no default features (no `cli`,
//! no `tls`), so its manager is configured in code and it installs its own logging. It serves
//! plain-HTTP metrics on :8080 and probes on :8081 and elects a leader, as the flag defaults of
//! `configmap_generator --leader-elect` do. `scripts/bench build` measures its build cost.

use std::io::IsTerminal as _;
use std::net::SocketAddr;

use kubeward::leader;
use kubeward::manager::{Config, LeaderElection, Manager};
use kubeward::serving::{BindAddress, Endpoints};
use kubeward_examples::configmap_generator::{ConfigMapGenerator, Generator};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // As `manager::init_logging` (behind `cli`) does: colours only on a terminal, unless NO_COLOR.
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .init();
    let everywhere = |port| BindAddress::On(SocketAddr::from(([0, 0, 0, 0], port)));
    let election = LeaderElection::new(
        "configmap-generator-leader",
        None,
        leader::Config::default(),
    );
    let config = Config::default().leader_election(Some(election));
    let manager = Manager::new(kube::Config::infer().await?, config)?;
    manager.add(
        Endpoints::new()
            .metrics(everywhere(8080))
            .health_probes(everywhere(8081)),
    )?;
    manager.add(ConfigMapGenerator::controller(Generator))?;
    Ok(manager.run().await?)
}
