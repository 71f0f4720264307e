//! The example operator: reconciles `ConfigMapGenerator`s into ConfigMaps.
//!
//! `configmap_generator [FLAGS]` runs it with controller-runtime's flags (`--help` lists them);
//! `configmap_generator crd` prints its CustomResourceDefinition as YAML.

use std::io::Write as _;

use clap::{Parser, Subcommand};
use kube::CustomResourceExt as _;
use kubeward::manager::{Flags, Manager};
use kubeward_examples::configmap_generator::{ConfigMapGenerator, controller};

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
}

// ANCHOR: main
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(Command::Crd) = args.command {
        let yaml = serde_yaml::to_string(&ConfigMapGenerator::crd())?;
        std::io::stdout().write_all(yaml.as_bytes())?;
        return Ok(());
    }
    args.flags.exit_if_invalid();
    let manager = Manager::from_flags(&args.flags).await?;
    manager.add(controller());
    manager.run().await?;
    Ok(())
}
// ANCHOR_END: main
