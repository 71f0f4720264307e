//! Elects one leader among replicas with a `coordination.k8s.io/v1` Lease.
//!
//! Semantics follow client-go's `leaderelection`: a candidate creates the Lease if it is
//! missing, takes it when it is empty or expired, and renews it every retry period; a leader
//! stops leading when it could not renew within the renew deadline. Expiry is judged by local
//! monotonic time since the Lease last changed as we observed it, every write is a replace
//! guarded by the resourceVersion it was decided on, and `leaseTransitions` counts changes of
//! holder. On shutdown the leader clears `holderIdentity`, so a standby takes over at once.
//!
//! [`LeaderElector`] does the I/O around a private state machine of pure decisions;
//! [`Leadership`] is the handle other tasks watch, and a [`Term`] is one period of leading.
//!
//! ```no_run
//! # #[allow(dead_code)]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use kubeward::leader::{Config, LeaderElector};
//!
//! let client = kube::Client::try_default().await?;
//! let config = Config::default().lease_duration(Duration::from_secs(15));
//! let elector = LeaderElector::new(client, "default", "my-operator", config)?;
//! let mut leadership = elector.leadership();
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let election = tokio::spawn(elector.run(async { stopped.await.ok(); }));
//! leadership.leading().await?;
//! assert!(leadership.is_leader());
//! stop.send(()).ok();
//! election.await?;
//! # Ok(()) }
//! ```

pub(crate) mod campaign;
mod config;
pub(crate) mod election;
mod elector;
mod leadership;
mod state;
mod term;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use config::Config;
pub use elector::LeaderElector;
pub use leadership::{Leadership, Status};
pub use term::Term;

/// Errors of leader election.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration breaks a rule; `reason` says which, with the values.
    #[error("invalid leader election config: {reason}")]
    InvalidConfig {
        /// The broken rule and the offending values.
        reason: String,
    },
    /// The elector believes it leads but has not renewed for longer than it may.
    #[error(
        "leading without a renewal for {since:?}, more than the renew deadline ({renew_deadline:?}) plus grace ({grace:?})"
    )]
    NotRenewed {
        /// Since when the last successful renewal began.
        since: Duration,
        /// The configured renew deadline.
        renew_deadline: Duration,
        /// The configured grace period.
        grace: Duration,
    },
    /// The elector is gone; leadership will not change any more.
    #[error("the leader elector has stopped")]
    Stopped,
}

/// The result of leader-election operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
