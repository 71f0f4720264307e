//! Reads who holds a leader-election Lease, as a witness of which replica leads.

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use super::{Error, Result};

/// The holder of the Lease `name`, as leader election wrote it: `None` when the Lease does not
/// exist or nobody holds it (an empty `holderIdentity`, as a release leaves it).
///
/// # Errors
/// [`Error::Api`] when the Lease cannot be read.
pub async fn lease_holder(leases: &Api<Lease>, name: &str) -> Result<Option<String>> {
    let lease = leases.get_opt(name).await.map_err(|e| Error::Api {
        action: format!("reading the Lease {name}"),
        source: Box::new(e),
    })?;
    Ok(lease
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.holder_identity)
        .filter(|holder| !holder.is_empty()))
}
