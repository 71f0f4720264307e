//! An operator's command line with no controller, for the `why` integration test: `why_cli why
//! KIND/NAMESPACE/NAME --from URL` prints what a running replica's flight recorder holds.

use kubeward::cli::Operator;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    Operator::from_args("Asks a running replica why it reconciled an object")
        .await?
        .run()
        .await?;
    Ok(())
}
