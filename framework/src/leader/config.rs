//! Holds the timing and identity of a leader elector, validated before use.

use std::time::Duration;

use super::{Error, Result};

/// How long a candidate waits, from the moment it last saw the Lease change, before taking it.
const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long a leader keeps leading without a successful renewal.
const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How often a candidate tries to acquire and a leader renews.
const RETRY_PERIOD: Duration = Duration::from_secs(2);
/// How long past the renew deadline a leader that has not renewed still counts as healthy.
const HEALTH_GRACE: Duration = Duration::from_secs(20);

/// Timing and identity of a [`LeaderElector`](super::LeaderElector).
///
/// The defaults are client-go's: lease duration 15 s, renew deadline 10 s, retry period 2 s.
/// They must satisfy `lease duration > renew deadline > 1.2 × retry period`, which
/// [`LeaderElector::new`](super::LeaderElector::new) checks (as do the manager's flags), returning
/// [`Error::InvalidConfig`] naming the broken rule.
///
/// ```
/// use std::time::Duration;
/// use kubeward::leader::Config;
///
/// let config = Config::default()
///     .lease_duration(Duration::from_secs(4))
///     .renew_deadline(Duration::from_secs(3))
///     .retry_period(Duration::from_millis(500));
/// # let _ = config;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(alias = "LeaderElectionConfig")]
pub struct Config {
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    health_grace: Duration,
    identity: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            lease_duration: LEASE_DURATION,
            renew_deadline: RENEW_DEADLINE,
            retry_period: RETRY_PERIOD,
            health_grace: HEALTH_GRACE,
            identity: None,
        }
    }
}

impl Config {
    /// How long others wait after they last saw the Lease change before they take it.
    ///
    /// Written to the Lease as `leaseDurationSeconds`, rounded up to whole seconds.
    #[doc(alias = "LeaseDuration")]
    #[must_use]
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How long the leader keeps leading after its last successful renewal began.
    #[doc(alias = "RenewDeadline")]
    #[must_use]
    pub fn renew_deadline(mut self, duration: Duration) -> Self {
        self.renew_deadline = duration;
        self
    }

    /// How often to try to acquire the Lease, and how often the leader renews it.
    #[doc(alias = "RetryPeriod")]
    #[must_use]
    pub fn retry_period(mut self, duration: Duration) -> Self {
        self.retry_period = duration;
        self
    }

    /// How long past the renew deadline a leader that has not renewed is still reported healthy
    /// by [`Leadership::healthy`](super::Leadership::healthy); 20 s by default.
    #[must_use]
    pub fn health_grace(mut self, grace: Duration) -> Self {
        self.health_grace = grace;
        self
    }

    /// The name this candidate writes as `holderIdentity`; unique per process.
    ///
    /// By default the host name (the pod name in Kubernetes) and a random suffix.
    #[must_use]
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    /// Checks `lease duration > renew deadline > 1.2 × retry period`, a non-zero retry period and
    /// a non-empty identity.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] says which rule is broken and by which values.
    pub(crate) fn validate(&self) -> Result<()> {
        let invalid = |reason: String| Err(Error::InvalidConfig { reason });
        if self.retry_period.is_zero() {
            return invalid("retry period must be greater than zero".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return invalid(format!(
                "lease duration ({:?}) must be greater than renew deadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.renew_deadline <= self.retry_period.mul_f64(1.2) {
            return invalid(format!(
                "renew deadline ({:?}) must be greater than 1.2 × retry period ({:?})",
                self.renew_deadline, self.retry_period
            ));
        }
        if self.identity.as_deref() == Some("") {
            return invalid("identity must not be empty".into());
        }
        Ok(())
    }

    pub(crate) fn lease_duration_value(&self) -> Duration {
        self.lease_duration
    }

    pub(crate) fn renew_deadline_value(&self) -> Duration {
        self.renew_deadline
    }

    pub(crate) fn retry_period_value(&self) -> Duration {
        self.retry_period
    }

    pub(crate) fn health_grace_value(&self) -> Duration {
        self.health_grace
    }

    pub(crate) fn identity_value(&self) -> Option<&str> {
        self.identity.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(config: &Config) -> String {
        match config.validate() {
            Err(Error::InvalidConfig { reason }) => reason,
            other => panic!("expected an invalid config, got {other:?}"),
        }
    }

    #[test]
    fn the_defaults_are_client_go_s_and_valid() {
        let config = Config::default();
        assert_eq!(config.lease_duration_value(), Duration::from_secs(15));
        assert_eq!(config.renew_deadline_value(), Duration::from_secs(10));
        assert_eq!(config.retry_period_value(), Duration::from_secs(2));
        assert!(config.validate().is_ok());
    }

    #[test]
    fn a_lease_duration_not_above_the_renew_deadline_is_rejected_with_both_values() {
        let config = Config::default().lease_duration(Duration::from_secs(10));
        let reason = reason(&config);
        assert!(reason.contains("lease duration (10s)"), "{reason}");
        assert!(reason.contains("renew deadline (10s)"), "{reason}");
    }

    #[test]
    fn a_renew_deadline_not_above_1_2_retry_periods_is_rejected() {
        let config = Config::default()
            .renew_deadline(Duration::from_millis(2400))
            .retry_period(Duration::from_secs(2));
        assert!(reason(&config).contains("1.2 × retry period (2s)"));
        let just_above = config.renew_deadline(Duration::from_millis(2401));
        assert!(just_above.validate().is_ok());
    }

    #[test]
    fn a_zero_retry_period_and_an_empty_identity_are_rejected() {
        assert!(reason(&Config::default().retry_period(Duration::ZERO)).contains("retry period"));
        assert!(reason(&Config::default().identity("")).contains("identity"));
    }

    #[test]
    fn the_short_test_timings_are_valid() {
        let config = Config::default()
            .lease_duration(Duration::from_secs(2))
            .renew_deadline(Duration::from_millis(1500))
            .retry_period(Duration::from_millis(300));
        assert!(config.validate().is_ok());
    }
}
