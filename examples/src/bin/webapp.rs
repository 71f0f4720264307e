//! The second example operator: `WebApp`s run as a Deployment behind a Service (see
//! `kubeward_examples::webapp`); `webapp crd` prints its CRD.

use kubeward::prelude::*;
use kubeward_examples::webapp::{WebApp, WebApps};

// ANCHOR: main
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let manager = Operator::from_args("Serves a web application per WebApp").await?;
    manager.add(WebApp::controller(WebApps))?;
    Ok(manager.run().await?)
}
// ANCHOR_END: main
