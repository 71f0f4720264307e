//! Tells which shards of a ring are available from their Leases, and until when.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;

/// The shards of a ring as their Leases show them at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shards {
    /// The shards whose Lease is held by the shard itself (holder = Lease name) and fresh.
    pub available: BTreeSet<String>,
    /// How long until the first available shard's Lease expires, unless renewed: when the set
    /// must be looked at again even if no Lease changes.
    pub next_expiry: Option<Duration>,
}

impl Shards {
    /// The shards of `leases` (a ring's Leases) at `now_micros` (Unix time in microseconds).
    ///
    /// A shard is available while its Lease's holder is the shard itself and its last renewal
    /// (or acquisition) plus its duration lies in the future: a shard that released its Lease,
    /// whose Lease another holder took, or that stopped renewing is not.
    #[must_use]
    pub fn of<'a>(leases: impl IntoIterator<Item = &'a Lease>, now_micros: i64) -> Self {
        let mut shards = Self::default();
        for lease in leases {
            let Some(left) = time_left(lease, now_micros) else {
                continue;
            };
            let Some(name) = lease.metadata.name.clone() else {
                continue;
            };
            shards.available.insert(name);
            shards.next_expiry = Some(shards.next_expiry.map_or(left, |next| next.min(left)));
        }
        shards
    }
}

/// How long `lease` stays fresh after `now_micros`, if it is held by its own name and fresh.
fn time_left(lease: &Lease, now_micros: i64) -> Option<Duration> {
    let spec = lease.spec.as_ref()?;
    let name = lease.metadata.name.as_deref()?;
    if spec.holder_identity.as_deref() != Some(name) {
        return None;
    }
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?;
    let duration = i64::from(spec.lease_duration_seconds.filter(|s| *s > 0)?);
    let expires = renewed.0.as_microsecond() + duration * 1_000_000;
    let left = u64::try_from(expires - now_micros)
        .ok()
        .filter(|l| *l > 0)?;
    Some(Duration::from_micros(left))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use k8s_openapi::jiff::Timestamp;
    use kube::api::ObjectMeta;

    use super::*;

    const NOW: i64 = 1_800_000_000_000_000;

    fn lease(name: &str, holder: Option<&str>, renewed_secs_ago: i64, duration: i32) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                lease_duration_seconds: Some(duration),
                renew_time: Timestamp::from_microsecond(NOW - renewed_secs_ago * 1_000_000)
                    .ok()
                    .map(MicroTime),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn only_fresh_leases_held_by_their_own_shard_are_available() {
        let leases = [
            lease("fresh", Some("fresh"), 3, 15),
            lease("expired", Some("expired"), 16, 15),
            lease("released", None, 1, 15),
            lease("taken", Some("shardlease-controller"), 1, 15),
            lease("older", Some("older"), 10, 15),
        ];
        let shards = Shards::of(&leases, NOW);
        assert_eq!(
            shards.available.into_iter().collect::<Vec<_>>(),
            ["fresh", "older"]
        );
        assert_eq!(shards.next_expiry, Some(Duration::from_secs(5)));
    }

    #[test]
    fn no_leases_no_shards() {
        assert_eq!(Shards::of([], NOW), Shards::default());
    }
}
