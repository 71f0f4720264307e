//! Tells each shard's state from its Lease, and which shards are available until when.

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
    /// A shard is available while its Lease is [`ShardState::Ready`]: a shard that released its
    /// Lease, whose Lease another holder took, or that stopped renewing is not.
    #[must_use]
    pub fn of<'a>(leases: impl IntoIterator<Item = &'a Lease>, now_micros: i64) -> Self {
        let mut shards = Self::default();
        for lease in leases {
            let (ShardState::Ready, Some(left)) = lease_state(lease, now_micros, DEAD_LEASE_TTL)
            else {
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

/// How long a dead shard's Lease stays before the sharder deletes it, by default: a minute,
/// as kubernetes-controller-sharding's sharder keeps it.
pub const DEAD_LEASE_TTL: Duration = Duration::from_secs(60);

/// The lease duration assumed for a Lease that does not state one, as the Go sharder assumes.
const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);

/// A shard's state, read from its Lease; the names are kubernetes-controller-sharding's, whose
/// sharder writes them to the Lease's [`STATE_LABEL`](super::STATE_LABEL) as kubeward's does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ShardState {
    /// Held by the shard itself and renewed within its lease duration: the shard gets objects.
    Ready,
    /// Held by the shard, but not renewed within its lease duration. A kubeward shard stops
    /// reconciling before its Lease expires (its renew deadline is shorter), so its objects
    /// move at once, where the Go sharder waits until the shard is dead.
    Expired,
    /// Expired for more than a lease duration: the sharder takes the Lease over, which makes
    /// the shard dead.
    Uncertain,
    /// Released by the shard on shutdown, or taken over by the sharder.
    Dead,
    /// Dead and past its expiry by [`DEAD_LEASE_TTL`] (or the configured TTL): the sharder
    /// deletes the Lease.
    Orphaned,
}

impl ShardState {
    /// Every state, in the order a Lease passes through them.
    pub const ALL: [ShardState; 5] = [
        Self::Ready,
        Self::Expired,
        Self::Uncertain,
        Self::Dead,
        Self::Orphaned,
    ];

    /// The state's name, as the state label and `kubectl` show it (`ready`, `expired`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Expired => "expired",
            Self::Uncertain => "uncertain",
            Self::Dead => "dead",
            Self::Orphaned => "orphaned",
        }
    }
}

impl std::fmt::Display for ShardState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The state of the shard whose Lease is `lease` at `now_micros` (Unix time in microseconds),
/// with a dead Lease kept for `dead_ttl` after its expiry, and how long the state lasts unless
/// the Lease changes (`None`: until it changes).
///
/// The Lease expires its lease duration after its last renewal (or acquisition); one without
/// either, or without a duration, counts as expiring now with a 15 s duration, as the Go
/// sharder counts it.
#[must_use]
pub fn lease_state(
    lease: &Lease,
    now_micros: i64,
    dead_ttl: Duration,
) -> (ShardState, Option<Duration>) {
    let spec = lease.spec.as_ref();
    let renewed = spec.and_then(|s| s.renew_time.as_ref().or(s.acquire_time.as_ref()));
    let seconds = spec
        .and_then(|s| s.lease_duration_seconds)
        .filter(|s| *s > 0);
    let (expires, duration) = match (renewed, seconds) {
        (Some(renewed), Some(seconds)) => {
            let duration = Duration::from_secs(u64::from(seconds.unsigned_abs()));
            (renewed.0.as_microsecond() + micros(duration), duration)
        }
        _ => (now_micros, DEFAULT_LEASE_DURATION),
    };
    let to_expired = expires - now_micros;
    let left = |micros: i64| {
        u64::try_from(micros)
            .ok()
            .filter(|m| *m > 0)
            .map(Duration::from_micros)
    };
    let holder = spec.and_then(|s| s.holder_identity.as_deref());
    if holder.is_none_or(|h| h.is_empty() || Some(h) != lease.metadata.name.as_deref()) {
        return match left(to_expired + micros(dead_ttl)) {
            Some(until) => (ShardState::Dead, Some(until)),
            None => (ShardState::Orphaned, None),
        };
    }
    if let Some(until) = left(to_expired) {
        return (ShardState::Ready, Some(until));
    }
    match left(to_expired + micros(duration)) {
        Some(until) => (ShardState::Expired, Some(until)),
        None => (ShardState::Uncertain, None),
    }
}

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
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
    fn a_lease_goes_ready_expired_uncertain_and_once_taken_over_dead_then_orphaned() {
        let ttl = Duration::from_secs(60);
        let state = |lease: &Lease| lease_state(lease, NOW, ttl);
        let secs = Duration::from_secs;
        assert_eq!(
            state(&lease("a", Some("a"), 3, 15)),
            (ShardState::Ready, Some(secs(12)))
        );
        assert_eq!(
            state(&lease("a", Some("a"), 20, 15)),
            (ShardState::Expired, Some(secs(10)))
        );
        assert_eq!(
            state(&lease("a", Some("a"), 30, 15)),
            (ShardState::Uncertain, None)
        );
        // Taken over by the sharder, or released: dead until a TTL past its expiry.
        assert_eq!(
            state(&lease("a", Some("shardlease-controller"), 0, 30)),
            (ShardState::Dead, Some(secs(90)))
        );
        assert_eq!(
            state(&lease("a", Some(""), 1, 1)),
            (ShardState::Dead, Some(secs(60)))
        );
        assert_eq!(
            state(&lease("a", None, 100, 30)),
            (ShardState::Orphaned, None)
        );
    }

    #[test]
    fn a_lease_without_times_counts_as_expiring_now() {
        let mut bare = lease("a", Some("a"), 0, 15);
        if let Some(spec) = bare.spec.as_mut() {
            spec.renew_time = None;
        }
        assert_eq!(
            lease_state(&bare, NOW, DEAD_LEASE_TTL),
            (ShardState::Expired, Some(Duration::from_secs(15)))
        );
        assert_eq!(ShardState::Uncertain.to_string(), "uncertain");
    }

    #[test]
    fn no_leases_no_shards() {
        assert_eq!(Shards::of([], NOW), Shards::default());
    }
}
