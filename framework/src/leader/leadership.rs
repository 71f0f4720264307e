//! Lets other tasks observe leadership: a watch channel with `is_leader`, `changed` and health.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::Term;
use super::{Error, Result};

/// What the elector last published.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Status {
    /// This candidate's identity.
    pub identity: Arc<str>,
    /// The Lease's holder as last observed, if any.
    pub holder: Option<String>,
    /// The term this candidate believes it is in; it also ends by itself at `valid_until`.
    pub term: Option<Term>,
    /// The most recent term that ended.
    pub last_term: Option<Term>,
}

impl Status {
    pub(crate) fn new(identity: Arc<str>) -> Self {
        Self {
            identity,
            holder: None,
            term: None,
            last_term: None,
        }
    }

    /// Whether this candidate leads at `now`: it is in a term whose renew deadline has not passed.
    #[must_use]
    pub(crate) fn is_leader_at(&self, now: Instant) -> bool {
        self.term.is_some_and(|term| term.is_current(now))
    }
}

/// A cheap, cloneable view of one elector's leadership.
///
/// [`Leadership::is_leader`] is bounded by time on its own: it turns false at the renew deadline
/// even if the elector's task is stalled or was aborted.
#[derive(Clone, Debug)]
pub struct Leadership {
    rx: watch::Receiver<Status>,
    lease: Arc<str>,
    renew_deadline: Duration,
    health_grace: Duration,
}

impl Leadership {
    pub(crate) fn new(
        rx: watch::Receiver<Status>,
        lease: Arc<str>,
        renew_deadline: Duration,
        health_grace: Duration,
    ) -> Self {
        Self {
            rx,
            lease,
            renew_deadline,
            health_grace,
        }
    }

    /// This candidate's identity, as written to `holderIdentity`.
    #[must_use]
    pub fn identity(&self) -> Arc<str> {
        self.rx.borrow().identity.clone()
    }

    /// The Lease's name, the `name` label of `leader_election_master_status`.
    #[must_use]
    pub fn lease_name(&self) -> &str {
        &self.lease
    }

    /// A copy of the last published status.
    #[must_use]
    pub fn status(&self) -> Status {
        self.rx.borrow().clone()
    }

    /// Whether this candidate leads now.
    #[doc(alias = "IsLeader")]
    #[must_use]
    pub fn is_leader(&self) -> bool {
        self.rx.borrow().is_leader_at(Instant::now())
    }

    /// Waits until the elector publishes a new status: a term starts or ends, the observed
    /// holder changes, or the leader renews.
    ///
    /// # Errors
    /// [`Error::Stopped`] once the elector is gone and nothing will change any more.
    ///
    /// # Cancel safety
    /// Cancel safe, like [`watch::Receiver::changed`].
    pub async fn changed(&mut self) -> Result<()> {
        self.rx.changed().await.map_err(|_| Error::Stopped)
    }

    /// Waits until this candidate leads.
    ///
    /// # Errors
    /// [`Error::Stopped`] when the elector is gone before it led.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn leading(&mut self) -> Result<()> {
        loop {
            if self.rx.borrow_and_update().is_leader_at(Instant::now()) {
                return Ok(());
            }
            self.changed().await?;
        }
    }

    /// Waits until this candidate does not lead: at once if it does not lead now, else when its
    /// term ends, whether the elector says so or the renew deadline passes without a renewal.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&mut self) {
        loop {
            let term = {
                let status = self.rx.borrow_and_update();
                match status.term {
                    Some(term) if term.is_current(Instant::now()) => term,
                    _ => return,
                }
            };
            tokio::select! {
                changed = self.rx.changed() => if changed.is_err() {
                    // Nobody will renew any more: the term ends at its deadline.
                    tokio::time::sleep_until(term.valid_until).await;
                    return;
                },
                () = tokio::time::sleep_until(term.valid_until) => return,
            }
        }
    }

    /// Fails when the elector believes it leads but has not renewed within the renew deadline
    /// plus the grace period, which means its task is stuck; serve it on `/healthz`.
    ///
    /// # Errors
    /// [`Error::NotRenewed`] with how long ago the last renewal began.
    #[doc(alias = "HealthzAdaptor")]
    pub fn healthy(&self) -> Result<()> {
        let Some(term) = self.rx.borrow().term else {
            return Ok(());
        };
        let since = Instant::now().saturating_duration_since(term.renewed_at);
        if since > self.renew_deadline + self.health_grace {
            return Err(Error::NotRenewed {
                since,
                renew_deadline: self.renew_deadline,
                grace: self.health_grace,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEADLINE: Duration = Duration::from_secs(10);
    const GRACE: Duration = Duration::from_secs(20);

    fn leading_since(now: Instant) -> (watch::Sender<Status>, Leadership) {
        let mut status = Status::new("me".into());
        status.term = Some(Term {
            started_at: now,
            renewed_at: now,
            valid_until: now + DEADLINE,
            ended_at: None,
        });
        let (tx, rx) = watch::channel(status);
        (tx, Leadership::new(rx, "lease".into(), DEADLINE, GRACE))
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_that_is_not_renewed_stops_leading_at_its_deadline_on_its_own() {
        let (_tx, mut leadership) = leading_since(Instant::now());
        assert!(leadership.is_leader());
        let start = Instant::now();
        leadership.lost().await;
        assert_eq!(start.elapsed(), DEADLINE);
        assert!(!leadership.is_leader());
    }

    #[tokio::test(start_paused = true)]
    async fn lost_returns_when_the_elector_ends_the_term() {
        let (tx, mut leadership) = leading_since(Instant::now());
        let waiter = tokio::spawn(async move { leadership.lost().await });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiter.is_finished());
        tx.send_modify(|status| status.last_term = status.term.take());
        tokio::time::timeout(Duration::from_millis(1), waiter)
            .await
            .expect("lost() returns when the term ends")
            .expect("the waiter does not panic");
    }

    #[tokio::test(start_paused = true)]
    async fn health_fails_only_after_the_renew_deadline_plus_the_grace_period() {
        let (_tx, leadership) = leading_since(Instant::now());
        tokio::time::sleep(DEADLINE + GRACE).await;
        assert!(leadership.healthy().is_ok());
        tokio::time::sleep(Duration::from_millis(1)).await;
        let error = leadership
            .healthy()
            .expect_err("a stuck leader is unhealthy");
        assert!(matches!(error, Error::NotRenewed { .. }), "{error}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_candidate_that_does_not_lead_is_healthy_and_leading_waits_for_a_term() {
        let (tx, rx) = watch::channel(Status::new("me".into()));
        let mut leadership = Leadership::new(rx, "lease".into(), DEADLINE, GRACE);
        assert!(leadership.healthy().is_ok());
        assert!(!leadership.is_leader());
        let waiter = tokio::spawn({
            let mut leadership = leadership.clone();
            async move { leadership.leading().await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiter.is_finished());
        let now = Instant::now();
        tx.send_modify(|status| {
            status.term = Some(Term {
                started_at: now,
                renewed_at: now,
                valid_until: now + DEADLINE,
                ended_at: None,
            });
        });
        waiter
            .await
            .expect("no panic")
            .expect("the elector is alive");
        leadership
            .changed()
            .await
            .expect("the new term is a change");
        drop(tx);
        assert!(matches!(leadership.changed().await, Err(Error::Stopped)));
    }
}
