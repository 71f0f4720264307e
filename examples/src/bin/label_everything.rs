//! Labels every object of a kind named on the command line, found by discovery:
//! `label_everything --kind Widget.v1.example.com [FLAGS]` (`--help` lists the manager's flags).
//! An unknown kind stops it with an error naming the kind and a non-zero exit status.

use clap::Parser;
use kubeward::cli::{Flags, Operator};
use kubeward_examples::label_everything::{controller, discover};

/// The example's command line: the kind, and every kubeward operator's flags.
#[derive(Debug, Parser)]
#[command(about = "Labels every object of a kind found by discovery", long_about = None)]
struct Args {
    /// The kind to label: `Kind.version.group` (`Widget.v1.example.com`), `Kind.version` for
    /// the core group (`ConfigMap.v1`), or a bare `Kind` served by one group.
    #[arg(long, env = "LABEL_EVERYTHING_KIND")]
    kind: String,

    #[command(flatten)]
    flags: Flags,
}

// ANCHOR: main
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let manager = Operator::from_flags(&args.flags).await?;
    let (resource, capabilities) = discover(&manager.client(), &args.kind).await?;
    manager.add(controller(&resource, &capabilities))?;
    Ok(manager.run().await?)
}
// ANCHOR_END: main
