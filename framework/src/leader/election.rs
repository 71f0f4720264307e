//! Configures a manager's leader election: the Lease, its timings, and what losing it does.

use super::Config;

/// Leader election of a manager: the Lease's name and namespace, its timings, and what a
/// replica does when it loses the Lease.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    pub(crate) lease: String,
    pub(crate) namespace: Option<String>,
    pub(crate) config: Config,
    pub(crate) on_loss: OnLeadershipLoss,
}

/// What a manager does when it loses the Lease (`--leader-election-on-loss`).
///
/// Either way its controllers stop at once, so it never reconciles without the Lease. (The
/// variants' docs are the flag's `--help`, so they are plain text: see
/// [`Manager::run`](crate::manager::Manager::run), [`Error::LeadershipLost`](crate::manager::Error::LeadershipLost)
/// and [`Runnable::next_term`](crate::manager::Runnable::next_term).)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[non_exhaustive]
pub enum OnLeadershipLoss {
    /// `Manager::run` returns `Error::LeadershipLost` and the process exits, as in
    /// controller-runtime; the restarted process lists every cache again.
    #[default]
    Exit,
    /// The manager stops its leader-only runnables, drops their work queues, keeps its informers
    /// and caches, and campaigns again; when it leads again its controllers start afresh, with
    /// every cached object queued once. Every leader-only runnable must be able to run again
    /// (`Runnable::next_term`); otherwise losing the Lease exits.
    Standby,
}

impl LeaderElection {
    /// Elect on the Lease `lease`, in `namespace` (or, when `None`, the pod's namespace from
    /// `POD_NAMESPACE` or the service-account mount, else the client's default namespace).
    #[must_use]
    pub fn new(lease: impl Into<String>, namespace: Option<String>, config: Config) -> Self {
        Self {
            lease: lease.into(),
            namespace,
            config,
            on_loss: OnLeadershipLoss::default(),
        }
    }

    /// What to do when the Lease is lost (default [`OnLeadershipLoss::Exit`]).
    #[must_use]
    pub fn on_loss(mut self, on_loss: OnLeadershipLoss) -> Self {
        self.on_loss = on_loss;
        self
    }
}
