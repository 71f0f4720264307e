//! The third example operator: `Database`s run as a StatefulSet behind a headless Service (see
//! `kubeward_examples::database`); `database crd` prints its CRD.

use kubeward::prelude::*;
use kubeward_examples::database::{Database, Databases};

// ANCHOR: main
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let manager = Operator::from_args("Runs a database per Database").await?;
    manager.add(Database::controller(Databases))?;
    Ok(manager.run().await?)
}
// ANCHOR_END: main
