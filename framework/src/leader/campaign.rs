//! Runs a manager's leader election: the elector on a task of its own, the handle the manager
//! watches, the release of the Lease, and how long a lost term's work may finish.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::election::{LeaderElection, OnLeadershipLoss};
use super::{Error, LeaderElector, Leadership, Status};
use crate::informer::connectivity::Connectivity;
use crate::metrics::Metrics;

/// A running election: the handle to watch, the token that releases the Lease, the task.
///
/// The task is aborted if `run()` is dropped before it returns, as a killed process would stop:
/// a detached elector would go on renewing the Lease with no controller running.
pub(crate) struct Election {
    pub(crate) lease: String,
    lease_duration: Duration,
    pub(crate) on_loss: OnLeadershipLoss,
    pub(crate) leadership: Leadership,
    pub(crate) release: CancellationToken,
    pub(crate) task: AbortOnDropHandle<()>,
}

impl Election {
    /// Starts the elector of `settings` on the Lease in `namespace`; it competes until
    /// [`Self::release`], reporting its leadership in `metrics`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for timings that do not fit together.
    pub(crate) fn start(
        client: &kube::Client,
        namespace: &str,
        settings: &LeaderElection,
        metrics: &Metrics,
        connectivity: Arc<Connectivity>,
    ) -> Result<Self, Error> {
        let (started, stopped) = (metrics.clone(), metrics.clone());
        let (lease_started, lease_stopped) = (settings.lease.clone(), settings.lease.clone());
        let elector = LeaderElector::new(
            client.clone(),
            namespace,
            &settings.lease,
            settings.config.clone(),
        )?
        .connectivity(connectivity)
        .on_started_leading(move |_| started.set_leader(&lease_started, true))
        .on_stopped_leading(move |_| stopped.set_leader(&lease_stopped, false));
        metrics.set_leader(&settings.lease, false);
        let leadership = elector.leadership();
        tracing::info!(identity = elector.identity(), lease = %settings.lease, %namespace, "leader election on");
        let release = CancellationToken::new();
        let task =
            AbortOnDropHandle::new(tokio::spawn(elector.run(release.clone().cancelled_owned())));
        Ok(Self {
            lease: settings.lease.clone(),
            lease_duration: settings.config.lease_duration_value(),
            on_loss: settings.on_loss,
            leadership,
            release,
            task,
        })
    }

    /// Until when the work of the term just lost may finish; see [`work_may_finish_by`].
    pub(crate) fn in_flight_until(&self, graceful: Duration) -> Instant {
        work_may_finish_by(
            &self.leadership.status(),
            self.lease_duration,
            graceful,
            Instant::now(),
        )
    }
}

/// Until when the work of a lost term may finish: while no other replica can have taken the
/// Lease (the last renewal began, plus the lease duration, as the others count it), never past
/// the graceful shutdown timeout; `now` if another replica holds the Lease already.
pub(crate) fn work_may_finish_by(
    status: &Status,
    lease_duration: Duration,
    graceful: Duration,
    now: Instant,
) -> Instant {
    if status
        .holder
        .as_deref()
        .is_some_and(|holder| holder != &*status.identity)
    {
        return now;
    }
    let Some(last) = status.term.or(status.last_term) else {
        return now;
    };
    (last.renewed_at + lease_duration).clamp(now, now + graceful)
}

/// Waits until `leadership` leads; never, without leader election.
pub(crate) async fn wait_leading(leadership: Option<&mut Leadership>) -> Result<(), Error> {
    match leadership {
        Some(l) => l.leading().await,
        None => std::future::pending().await,
    }
}

/// Waits until `leadership` no longer leads; never, without leader election.
pub(crate) async fn wait_lost(leadership: Option<&mut Leadership>) {
    match leadership {
        Some(l) => l.lost().await,
        None => std::future::pending().await,
    }
}
