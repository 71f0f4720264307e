//! The example operator: reconciles `ConfigMapGenerator`s into ConfigMaps.
//!
//! `configmap_generator [FLAGS]` runs it with controller-runtime's flags (`--help` lists them);
//! `configmap_generator crd` prints its CustomResourceDefinition as YAML;
//! `configmap_generator manifests [CHART]` writes the CRD and the RBAC rules into the chart.

use std::io::Write as _;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use kube::CustomResourceExt as _;
use kubeward::manager::{Flags, Manager};
use kubeward_examples::configmap_generator::{ConfigMapGenerator, Generator, manifests};

/// The example operator of kubeward.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    #[command(flatten)]
    flags: Flags,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the CustomResourceDefinition as YAML and exit.
    Crd,
    /// Write the CRD and the controller's RBAC rules into the chart's `files/` and exit.
    Manifests {
        /// The chart's folder.
        #[arg(default_value = "charts/configmap-generator")]
        chart: PathBuf,
    },
}

// ANCHOR: main
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    match args.command {
        Some(Command::Crd) => {
            let yaml = serde_norway::to_string(&ConfigMapGenerator::crd())?;
            std::io::stdout().write_all(yaml.as_bytes())?;
            return Ok(());
        }
        Some(Command::Manifests { chart }) => return manifests::write(&chart),
        None => {}
    }
    args.flags.exit_if_invalid();
    let manager = Manager::from_flags(&args.flags).await?;
    manager.add(ConfigMapGenerator::controller(Generator));
    manager.run().await?;
    Ok(())
}
// ANCHOR_END: main
