//! Tends a ring's shard Leases: labels their state, takes over the Leases of shards that
//! stopped renewing long ago, and deletes dead ones after a while.
//!
//! This is the Go sharder's shard Lease controller, kept by kubeward's sharder on the leader.
//! A crashed shard's Lease would otherwise stay held by it forever, so `kubectl` could not tell
//! it from a live one, and Leases of shards that are gone for good (a scaled-down StatefulSet,
//! renamed pods) would pile up. Once a Lease has been expired for a whole lease duration
//! ([`ShardState::Uncertain`]), the sharder acquires it under [`SHARDER_IDENTITY`] for twice the
//! duration, so the shard is dead and cannot come back unnoticed: a restarted shard waits
//! until that term expires, as for any Lease held by another. A dead Lease (taken over, or
//! released by its shard on shutdown) is deleted once it has been expired for the dead-Lease
//! TTL ([`ShardState::Orphaned`]). Every write is guarded by the resourceVersion it was
//! decided on.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Client};
use tokio_util::sync::CancellationToken;

use super::SharderMetrics;
use super::ring_watch::on_lease_change;
use super::{SHARDER_IDENTITY, STATE_LABEL, ShardState, lease_state};
use crate::error::chain;
use crate::informer::SharedInformer;

/// How soon a Lease whose write failed is looked at again.
const RETRY: Duration = Duration::from_secs(1);

/// Tends the Leases of `leases` (a ring's, synced) until `shutdown` is cancelled: on every
/// Lease change, and when the next Lease changes state by time alone. Each pass sets the
/// `kubeward_sharder_shard_leases` gauges to the states it found.
pub(crate) async fn tend_shard_leases(
    leases: SharedInformer<Lease>,
    client: Client,
    dead_ttl: Duration,
    metrics: SharderMetrics,
    shutdown: CancellationToken,
) {
    let (changed, _registration) = on_lease_change(&leases);
    let store = leases.store();
    loop {
        let now = Timestamp::now();
        let mut next: Option<Duration> = None;
        let mut states = Vec::new();
        for lease in store.list() {
            let (state, lasts) = lease_state(&lease, now.as_microsecond(), dead_ttl);
            states.push(state);
            let wait = match tend(&client, &lease, state, now, dead_ttl).await {
                Ok(()) => lasts,
                Err(error) => {
                    tracing::warn!(lease = %lease.metadata.name.as_deref().unwrap_or_default(),
                        %state, error = %chain(&error), "tending a shard Lease failed; retrying");
                    Some(RETRY)
                }
            };
            next = match (next, wait) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        metrics.set_lease_states(&states);
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = changed.notified() => {}
            // A few milliseconds late, so the Lease is past the change when looked at.
            () = tokio::time::sleep(next.unwrap_or(Duration::from_secs(3600)) + Duration::from_millis(5)) => {}
        }
    }
}

/// Does what `state` asks of `lease` at `now`. A conflict is no error: the informer brings the
/// newer Lease, which is looked at again.
async fn tend(
    client: &Client,
    lease: &Lease,
    state: ShardState,
    now: Timestamp,
    dead_ttl: Duration,
) -> Result<(), kube::Error> {
    let (Some(name), Some(namespace)) = (
        lease.metadata.name.as_deref(),
        lease.metadata.namespace.as_deref(),
    ) else {
        return Ok(());
    };
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let written = match state {
        ShardState::Uncertain => {
            let taken = taken_over(lease, now);
            let wrote = api.replace(name, &PostParams::default(), &taken).await;
            if wrote.is_ok() {
                tracing::info!(
                    shard = name,
                    "took over the Lease of a shard that stopped renewing it: the shard is dead"
                );
            }
            wrote.map(drop)
        }
        ShardState::Orphaned => {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    resource_version: lease.metadata.resource_version.clone(),
                    uid: lease.metadata.uid.clone(),
                }),
                ..DeleteParams::default()
            };
            let deleted = api.delete(name, &params).await;
            if deleted.is_ok() {
                tracing::info!(shard = name, ttl = ?dead_ttl, "deleted the Lease of a shard dead for longer than the TTL");
            }
            deleted.map(drop)
        }
        ShardState::Ready | ShardState::Expired | ShardState::Dead => {
            let labelled = lease.metadata.labels.as_ref();
            if labelled
                .and_then(|l| l.get(STATE_LABEL))
                .map(String::as_str)
                == Some(state.as_str())
            {
                return Ok(());
            }
            if state != ShardState::Ready {
                tracing::info!(shard = name, %state, "a shard is no longer available");
            }
            let patch = serde_json::json!({ "metadata": {
                "resourceVersion": lease.metadata.resource_version,
                "labels": { STATE_LABEL: state.as_str() },
            }});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(drop)
        }
    };
    match written {
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => Ok(()),
        other => other,
    }
}

/// `lease` acquired by the sharder at `now` for twice its duration and labelled dead, as the
/// Go sharder takes over an uncertain shard's Lease.
fn taken_over(lease: &Lease, now: Timestamp) -> Lease {
    let mut taken = lease.clone();
    let spec = taken.spec.get_or_insert_default();
    let seconds = spec.lease_duration_seconds.filter(|s| *s > 0).unwrap_or(15);
    spec.holder_identity = Some(SHARDER_IDENTITY.to_owned());
    spec.lease_duration_seconds = Some(seconds.saturating_mul(2));
    spec.acquire_time = Some(MicroTime(now));
    spec.renew_time = Some(MicroTime(now));
    spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
    taken
        .metadata
        .labels
        .get_or_insert_default()
        .insert(STATE_LABEL.to_owned(), ShardState::Dead.as_str().to_owned());
    taken
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use kube::api::ObjectMeta;

    use super::*;

    #[test]
    fn a_taken_over_lease_is_the_sharders_for_twice_its_duration_and_dead() {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some("shard-a".into()),
                resource_version: Some("7".into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some("shard-a".into()),
                lease_duration_seconds: Some(4),
                lease_transitions: Some(2),
                ..LeaseSpec::default()
            }),
        };
        let now = Timestamp::from_second(1_800_000_000).expect("a valid time");
        let taken = taken_over(&lease, now);
        let spec = taken.spec.as_ref().expect("a spec");
        assert_eq!(spec.holder_identity.as_deref(), Some(SHARDER_IDENTITY));
        assert_eq!(spec.lease_duration_seconds, Some(8));
        assert_eq!(spec.lease_transitions, Some(3));
        assert_eq!(spec.renew_time, Some(MicroTime(now)));
        assert_eq!(taken.metadata.resource_version.as_deref(), Some("7"));
        let (state, _) = lease_state(&taken, now.as_microsecond(), Duration::from_secs(60));
        assert_eq!(state, ShardState::Dead);
        assert_eq!(
            taken
                .metadata
                .labels
                .and_then(|mut l| l.remove(STATE_LABEL)),
            Some("dead".to_owned())
        );
    }
}
