//! Runs the election against a `coordination.k8s.io/v1` Lease: reads, decides, writes, repeats.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::sync::watch;
use tokio::time::Instant;

use super::Term;
use super::leadership::{Leadership, Status};
use super::state::{Observed, Record, State, Step, Write};
use super::{Config, Result};
use crate::error::chain;
use crate::informer::connectivity::{self, Connectivity};

/// A hook called on the elector's task when a term starts or stops; keep it quick.
type Hook = Arc<dyn Fn(&Term) + Send + Sync>;

/// Competes for a Lease with other replicas; at most one of them leads at a time.
///
/// ```no_run
/// # #[allow(dead_code)]
/// # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use kubeward::leader::{Config, LeaderElector};
///
/// let elector = LeaderElector::new(client, "default", "my-operator", Config::default())?
///     .on_started_leading(|_| tracing::info!("leading"))
///     .on_stopped_leading(|_| tracing::info!("not leading"));
/// let mut leadership = elector.leadership();
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let election = tokio::spawn(elector.run(async { stopped.await.ok(); }));
/// leadership.leading().await?;
/// // ... work while leading; `leadership.lost()` says when to stop ...
/// stop.send(()).ok();
/// election.await?; // returns after releasing the Lease on shutdown
/// # Ok(()) }
/// ```
#[doc(alias = "leaderelection")]
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    config: Config,
    state: State,
    status: watch::Sender<Status>,
    leadership: Leadership,
    published: Option<Term>,
    on_started: Option<Hook>,
    on_stopped: Option<Hook>,
    /// Labels the Lease carries (a shard Lease's ring), set on every write.
    labels: BTreeMap<String, String>,
    /// Where a server that cannot be reached is reported (the informers' tracker in a manager).
    connectivity: Arc<Connectivity>,
    /// The last failure logged other than an unreachable server, not logged again while it repeats.
    last_failure: Option<String>,
}

impl fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("name", &self.name)
            .field("identity", &self.state.identity())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// An elector for the Lease `namespace/name`; it does nothing until [`Self::run`].
    ///
    /// # Errors
    /// [`Error::InvalidConfig`](super::Error::InvalidConfig) when the timing is inconsistent.
    pub fn new(client: Client, namespace: &str, name: &str, config: Config) -> Result<Self> {
        config.validate()?;
        let identity: Arc<str> = config
            .identity_value()
            .map_or_else(default_identity, str::to_owned)
            .into();
        let state = State::new(
            identity.as_ref(),
            config.lease_duration_value(),
            config.renew_deadline_value(),
        );
        let (status, rx) = watch::channel(Status::new(identity));
        let leadership = Leadership::new(
            rx,
            format!("{namespace}/{name}").into(),
            config.renew_deadline_value(),
            config.health_grace_value(),
        );
        Ok(Self {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
            config,
            state,
            status,
            leadership,
            published: None,
            on_started: None,
            on_stopped: None,
            labels: BTreeMap::new(),
            connectivity: Arc::default(),
            last_failure: None,
        })
    }

    /// Takes `holder` for one that writes the Lease once and never renews it (the sharder's
    /// takeover of a shard Lease): its record expires as it states (see
    /// [`State::unrenewed_holder`]).
    #[cfg(feature = "sharding")]
    #[must_use]
    pub(crate) fn unrenewed_holder(mut self, holder: &str) -> Self {
        self.state = self.state.unrenewed_holder(holder);
        self
    }

    /// Reports a server that cannot be reached through `connectivity`, shared with the
    /// informers: one line for an outage, not one per retry.
    #[must_use]
    pub(crate) fn connectivity(mut self, connectivity: Arc<Connectivity>) -> Self {
        self.connectivity = connectivity;
        self
    }

    /// Labels the Lease carries, set when it is created and on every write (other labels kept).
    #[cfg(feature = "sharding")]
    #[must_use]
    pub(crate) fn labels(mut self, labels: BTreeMap<String, String>) -> Self {
        self.labels = labels;
        self
    }

    /// Calls `hook` with the new term whenever this candidate starts leading.
    #[doc(alias = "OnStartedLeading")]
    #[must_use]
    pub fn on_started_leading(mut self, hook: impl Fn(&Term) + Send + Sync + 'static) -> Self {
        self.on_started = Some(Arc::new(hook));
        self
    }

    /// Calls `hook` with the ended term whenever this candidate stops leading.
    ///
    /// Not called when the task running [`Self::run`] is aborted; the term then ends by itself
    /// at its `valid_until`.
    #[doc(alias = "OnStoppedLeading")]
    #[must_use]
    pub fn on_stopped_leading(mut self, hook: impl Fn(&Term) + Send + Sync + 'static) -> Self {
        self.on_stopped = Some(Arc::new(hook));
        self
    }

    /// This candidate's identity.
    #[must_use]
    pub fn identity(&self) -> &str {
        self.state.identity()
    }

    /// A handle to observe leadership from other tasks.
    #[must_use]
    pub fn leadership(&self) -> Leadership {
        self.leadership.clone()
    }

    /// Competes for the Lease until `shutdown` completes, then releases it if held.
    ///
    /// API errors never end the election: they are logged and the next attempt follows one
    /// retry period later. A leader that cannot renew within the renew deadline stops leading
    /// (and competes again). After `shutdown` it stops leading at once, then tries to release
    /// for at most one renew deadline before returning.
    ///
    /// Aborting the task instead releases nothing: the term then ends at its renew deadline and
    /// the others take over once the lease duration has passed.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) {
        let mut shutdown = pin!(shutdown);
        loop {
            let next = tokio::select! {
                biased;
                () = &mut shutdown => break,
                next = self.attempt() => next,
            };
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                () = self.sleep_until(next) => {}
            }
        }
        self.release().await;
    }

    /// One read-decide-write round, bounded by the current term's deadline when leading.
    /// Returns when to try next.
    async fn attempt(&mut self) -> Instant {
        let start = Instant::now();
        self.state.tick(start);
        self.publish();
        let leading = self.state.term().map(|term| term.valid_until);
        let bound = leading.unwrap_or(start + self.config.renew_deadline_value());
        let retry = self.config.retry_period_value();
        let outcome = tokio::time::timeout_at(bound, self.try_acquire_or_renew()).await;
        let now = Instant::now();
        self.state.tick(now);
        self.publish();
        let wait_for = match outcome {
            Err(_) => {
                let waited = now.duration_since(start);
                let error = format!("no answer to a Lease request within {waited:?}");
                self.connectivity
                    .failed(self.leadership.lease_name(), &error, retry);
                None
            }
            Ok(wait_for) => wait_for,
        };
        if self.state.is_leading(now) {
            return start + retry;
        }
        let next = now + retry.mul_f64(1.0 + 0.2 * jitter());
        wait_for.map_or(next, |expires_at| next.min(expires_at))
    }

    /// Reads the Lease and writes what the state decides; returns when it expires if someone
    /// else holds it.
    async fn try_acquire_or_renew(&mut self) -> Option<Instant> {
        let lease = match self.api.get_opt(&self.name).await {
            Ok(lease) => {
                self.reached();
                lease
            }
            Err(error) => {
                self.failed("reading the lease", &error);
                return None;
            }
        };
        let observed = lease.as_ref().map(observed);
        let step = self
            .state
            .observe(observed.as_ref(), Instant::now(), wall_micros());
        self.publish();
        match step {
            Step::Wait { expires_at, .. } => Some(expires_at),
            Step::Write(write) => {
                self.write(lease, &write).await;
                None
            }
        }
    }

    /// Writes `write` over `lease` (or creates it) and records the outcome.
    async fn write(&mut self, lease: Option<Lease>, write: &Write) {
        let started_at = Instant::now();
        let result = if let Some(lease) = lease {
            let lease = self.labelled(with_record(lease, &write.record));
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
        } else {
            let metadata = ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            };
            let lease = self.labelled(with_record(
                Lease {
                    metadata,
                    spec: None,
                },
                &write.record,
            ));
            self.api.create(&PostParams::default(), &lease).await
        };
        match result {
            Ok(_) => {
                self.state.written(write, started_at, Instant::now());
                self.publish();
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tracing::debug!(lease = %self.leadership.lease_name(), kind = ?write.kind, "lease changed under us");
            }
            Err(error) => self.failed("writing the lease", &error),
        }
    }

    /// Records a Lease request that reached the server.
    fn reached(&mut self) {
        self.connectivity.reachable();
        self.last_failure = None;
    }

    /// Logs a failed Lease request: a server that cannot be reached through the shared tracker
    /// (one line per outage), any other failure on one line with its code and reason, once
    /// while it repeats.
    fn failed(&mut self, request: &str, error: &kube::Error) {
        let lease = self.leadership.lease_name().to_owned();
        if connectivity::is_unreachable(error) {
            let retry = self.config.retry_period_value();
            self.connectivity.failed(&lease, &chain(error), retry);
            return;
        }
        let error = chain(error);
        if self.last_failure.as_ref() == Some(&error) {
            tracing::debug!(%lease, %error, "{request} failed again");
            return;
        }
        tracing::warn!(%lease, %error, "{request} failed");
        self.last_failure = Some(error);
    }

    /// Sleeps until `next`, waking at the term's deadline to publish its end.
    async fn sleep_until(&mut self, next: Instant) {
        if let Some(term) = self.state.term()
            && term.valid_until < next
        {
            tokio::time::sleep_until(term.valid_until).await;
            self.state.tick(Instant::now());
            self.publish();
        }
        tokio::time::sleep_until(next).await;
    }

    /// Stops leading, then clears `holderIdentity` if the Lease still names us, retrying on
    /// conflicts and errors for at most one renew deadline.
    async fn release(&mut self) {
        self.state.stop(Instant::now());
        self.publish();
        let deadline = Instant::now() + self.config.renew_deadline_value();
        let released = tokio::time::timeout_at(deadline, async {
            loop {
                match self.try_release().await {
                    Ok(released) => return released,
                    Err(error) => {
                        self.failed("releasing the lease", &error);
                        tokio::time::sleep(self.config.retry_period_value()).await;
                    }
                }
            }
        })
        .await;
        match released {
            Ok(true) => tracing::info!(lease = %self.leadership.lease_name(), "released the lease"),
            Ok(false) => {}
            Err(_) => {
                tracing::warn!(lease = %self.leadership.lease_name(), "gave up releasing the lease");
            }
        }
    }

    /// One release attempt: `Ok(false)` when the Lease does not name us (nothing to release).
    async fn try_release(&mut self) -> Result<bool, kube::Error> {
        let lease = self.api.get_opt(&self.name).await?;
        let observed = lease.as_ref().map(observed);
        let Some(write) = self
            .state
            .release(observed.as_ref(), Instant::now(), wall_micros())
        else {
            return Ok(false);
        };
        let Some(lease) = lease else {
            return Ok(false);
        };
        let started_at = Instant::now();
        self.api
            .replace(
                &self.name,
                &PostParams::default(),
                &with_record(lease, &write.record),
            )
            .await?;
        self.state.written(&write, started_at, Instant::now());
        self.publish();
        Ok(true)
    }

    /// `lease` with this elector's labels added.
    fn labelled(&self, mut lease: Lease) -> Lease {
        if !self.labels.is_empty() {
            let labels = lease.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(self.labels.clone());
        }
        lease
    }

    /// Publishes the state to the watch channel and calls the hooks on a change of term.
    fn publish(&mut self) {
        let term = self.state.term();
        let previous = self.published;
        if previous.map(|t| t.started_at) != term.map(|t| t.started_at) {
            if let (Some(ended), Some(hook)) = (self.state.last_term(), &self.on_stopped)
                && previous.is_some()
            {
                hook(&ended);
            }
            if let (Some(started), Some(hook)) = (term, &self.on_started) {
                hook(&started);
            }
            match (previous, term) {
                (_, Some(_)) => {
                    tracing::info!(lease = %self.leadership.lease_name(), identity = %self.state.identity(), "started leading");
                }
                (Some(_), None) => {
                    tracing::info!(lease = %self.leadership.lease_name(), identity = %self.state.identity(), "stopped leading");
                }
                (None, None) => {}
            }
        }
        self.published = term;
        let holder = self.state.observed_holder().map(str::to_owned);
        let last_term = self.state.last_term();
        self.status.send_if_modified(|status| {
            let changed =
                status.term != term || status.last_term != last_term || status.holder != holder;
            status.term = term;
            status.last_term = last_term;
            status.holder.clone_from(&holder);
            changed
        });
    }
}

/// The Lease's leader-election fields and resourceVersion.
fn observed(lease: &Lease) -> Observed {
    let spec = lease.spec.clone().unwrap_or_default();
    Observed {
        record: Record {
            holder: spec.holder_identity.filter(|holder| !holder.is_empty()),
            lease_duration: spec
                .lease_duration_seconds
                .and_then(|seconds| u64::try_from(seconds).ok())
                .filter(|seconds| *seconds > 0)
                .map(Duration::from_secs),
            acquire_time: spec.acquire_time.map(|time| time.0.as_microsecond()),
            renew_time: spec.renew_time.map(|time| time.0.as_microsecond()),
            transitions: spec.lease_transitions.unwrap_or(0),
        },
        resource_version: lease.metadata.resource_version.clone().unwrap_or_default(),
    }
}

/// `lease` with `record` written into its spec; other spec fields and the metadata (with the
/// resourceVersion precondition) are kept.
fn with_record(mut lease: Lease, record: &Record) -> Lease {
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity.clone_from(&record.holder);
    spec.lease_duration_seconds = record
        .lease_duration
        .and_then(|duration| i32::try_from(duration.as_secs()).ok());
    spec.acquire_time = record.acquire_time.and_then(micro_time);
    spec.renew_time = record.renew_time.and_then(micro_time);
    spec.lease_transitions = Some(record.transitions);
    lease
}

fn micro_time(microseconds: i64) -> Option<MicroTime> {
    Timestamp::from_microsecond(microseconds)
        .ok()
        .map(MicroTime)
}

fn wall_micros() -> i64 {
    Timestamp::now().as_microsecond()
}

/// A random number in `[0, 1)`, from the framework's generator (which a simulation seeds).
fn jitter() -> f64 {
    (random() >> 11) as f64 / (1_u64 << 53) as f64
}

fn random() -> u64 {
    crate::random::next_u64()
}

/// The host name (the pod name in Kubernetes) and a random suffix, as client-go recommends.
fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|host| host.trim().to_owned())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "kubeward".to_owned());
    format!("{host}_{:016x}", random())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_identities_are_the_host_name_with_distinct_random_suffixes() {
        let (first, second) = (default_identity(), default_identity());
        assert_ne!(first, second);
        let (host, suffix) = first.rsplit_once('_').expect("host_suffix");
        assert!(!host.is_empty());
        assert_eq!(suffix.len(), 16);
    }

    #[test]
    fn a_record_survives_the_round_trip_through_a_lease() {
        let record = Record {
            holder: Some("me".into()),
            lease_duration: Some(Duration::from_secs(15)),
            acquire_time: Some(1_700_000_000_123_456),
            renew_time: Some(1_700_000_001_654_321),
            transitions: 3,
        };
        let lease = with_record(Lease::default(), &record);
        assert_eq!(observed(&lease).record, record);
    }

    #[test]
    fn an_empty_holder_reads_as_nobody() {
        let lease = Lease {
            spec: Some(LeaseSpec {
                holder_identity: Some(String::new()),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        };
        assert_eq!(observed(&lease).record.holder, None);
    }

    #[test]
    fn the_jitter_is_a_fraction() {
        for _ in 0..100 {
            assert!((0.0..1.0).contains(&jitter()));
        }
    }

    #[tokio::test]
    async fn an_elector_with_inconsistent_timing_is_refused_with_the_rule_it_breaks() {
        let config = kube::Config::new("https://127.0.0.1:1".parse().expect("a valid URL"));
        let client = Client::try_from(config).expect("a client needs no connection to be built");
        let timing = Config::default().renew_deadline(Duration::from_secs(20));
        let error = LeaderElector::new(client, "default", "lease", timing).expect_err("invalid");
        assert_eq!(
            error.to_string(),
            "invalid leader election config: lease duration (15s) must be greater than renew deadline (20s)"
        );
    }

    fn assert_send<T: Send + 'static>(_: T) {}

    #[allow(dead_code, reason = "compile-time check only")]
    fn run_is_a_send_static_future(elector: LeaderElector) {
        assert_send(elector.run(async {}));
    }
}
