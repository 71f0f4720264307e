//! Prints the operator's controller rings instead of running it: the `shards` subcommand.

use std::io::Write as _;

use crate::manager::ring::RecordedRing;
use crate::manager::{Error, Manager, Result};
use crate::process::pod_namespace::pod_namespace;
use crate::sharding::ring_view;

/// Prints the view of `ring`, or of every ring in `rings`: each shard's Lease state, holder and
/// renewal, and its objects of each kind. The shard Leases are in `lease_namespace`, else the
/// pod's namespace.
pub(super) async fn print_rings(
    manager: &Manager,
    rings: &[RecordedRing],
    ring: Option<&str>,
    lease_namespace: Option<&str>,
) -> Result<()> {
    let chosen: Vec<&RecordedRing> = rings
        .iter()
        .filter(|r| ring.is_none_or(|name| r.ring == name))
        .collect();
    if chosen.is_empty() {
        let known: Vec<&str> = rings.iter().map(|r| r.ring.as_str()).collect();
        return Err(Error::InvalidFlags(format!(
            "shards {}: no controller of this operator is in that ring (its rings: {known:?})",
            ring.unwrap_or_default()
        )));
    }
    let client = manager.client();
    let namespace = lease_namespace.map_or_else(|| pod_namespace(&client), str::to_owned);
    let namespaces: Vec<String> = (manager.config().cache_scope().watched_namespaces())
        .map(str::to_owned)
        .collect();
    let mut out = String::new();
    for recorded in chosen {
        let view = ring_view(
            &client,
            &namespace,
            &recorded.ring,
            &recorded.kinds,
            &namespaces,
        )
        .await
        .map_err(|source| Error::RingView {
            ring: recorded.ring.clone(),
            source: Box::new(source),
        })?;
        out.push_str(&view.to_string());
    }
    std::io::stdout()
        .write_all(out.as_bytes())
        .map_err(|e| Error::Manifests {
            action: "printing the rings".into(),
            source: Some(e.into()),
        })
}
