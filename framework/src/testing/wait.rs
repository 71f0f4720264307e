//! Installs the CRD a `#[derive(Controller)]` kind ships.

use kube::Client;

use crate::crd::Definition;

/// Installs the [polished](crate::crd::polish) CRD of `K`, as the operator's `crd` subcommand
/// prints it (unless a CRD of that name is there already), and waits until it is served.
///
/// # Errors
/// As [`install_crd`](super::install_crd).
pub async fn install_definition<K: Definition>(client: Client) -> super::Result<()> {
    super::install_crd_object(client, K::definition()).await
}
