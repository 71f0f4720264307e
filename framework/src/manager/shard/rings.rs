//! Prints the operator's controller rings instead of running it: the `shards` subcommand.

use std::io::Write as _;

use kube::api::ApiResource;

use crate::manager::pod_namespace::pod_namespace;
use crate::manager::{Command, Error, Manager, Result};
use crate::sharding::{KindSharder, ring_view};

/// A controller ring of the operator, kept while the `shards` command waits for its run.
#[derive(Debug)]
pub(in crate::manager) struct RecordedRing {
    ring: String,
    kinds: Vec<(ApiResource, bool)>,
}

impl Manager {
    /// Keeps the ring of a controller whose kinds are `kinds` (none for a controller that
    /// cannot be sharded), for the `shards` command, when it was given.
    pub(in crate::manager) fn record_ring(&self, ring: &str, kinds: &[KindSharder]) {
        if !matches!(self.command, Some(Command::Shards { .. })) || kinds.is_empty() {
            return;
        }
        let mut rings = self.rings.lock();
        let kinds = kinds.iter().map(|k| k.resource.clone());
        match rings.iter_mut().find(|r| r.ring == ring) {
            Some(known) => known.kinds.extend(kinds),
            None => rings.push(RecordedRing {
                ring: ring.to_owned(),
                kinds: kinds.collect(),
            }),
        }
    }

    /// Prints the view of `ring`, or of every ring of the operator's controllers: each shard's
    /// Lease state, holder and renewal, and its objects of each kind.
    pub(in crate::manager) async fn print_rings(&self, ring: Option<&str>) -> Result<()> {
        let rings = std::mem::take(&mut *self.rings.lock());
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
        let namespace = self
            .lease_namespace
            .clone()
            .unwrap_or_else(|| pod_namespace(&self.client()));
        let namespaces: Vec<String> = self
            .config()
            .cache_scope()
            .watched_namespaces()
            .map(str::to_owned)
            .collect();
        let mut out = String::new();
        for recorded in chosen {
            let view = ring_view(
                &self.client(),
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
}
