//! Defines the long-running tasks a Manager starts and stops: controllers, informers, elections.

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// The error a [`Runnable`] may end with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A task the [`Manager`](super::Manager) runs until its shutdown token is cancelled.
///
/// Controllers are runnables; so is anything of yours that should start and stop with the
/// operator. A runnable that returns an error makes the manager shut everything down and
/// return that error.
pub trait Runnable: Send + 'static {
    /// A name for logs and errors.
    fn name(&self) -> String;

    /// Whether it may run only while this replica holds the leader-election Lease (true for
    /// controllers; false for informers and servers, which every replica runs).
    fn needs_leader_election(&self) -> bool {
        true
    }

    /// Whether it serves requests (probes, metrics, webhooks): a server starts before the
    /// others and stops only after they all finished, so that it answers while in-flight work
    /// drains. False by default.
    fn serves(&self) -> bool {
        false
    }

    /// A fresh runnable for the next leadership term, made before this one runs; `None` (the
    /// default) when it can run only once.
    ///
    /// A manager on [standby after losing the Lease](super::OnLeadershipLoss::Standby) runs a
    /// leader-only runnable once per term: it stops the old one and later runs the one this
    /// returned. Controllers can; a leader-only runnable that cannot makes a lost Lease end the
    /// run, as [`OnLeadershipLoss::Exit`](super::OnLeadershipLoss::Exit) does.
    fn next_term(&self) -> Option<Box<dyn Runnable>> {
        None
    }

    /// Runs until `shutdown` is cancelled, then returns once its in-flight work is finished.
    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>>;
}

/// What [`Manager::add`](super::Manager::add) accepts: a [`Runnable`] as it is, or a
/// [`Controller`](crate::controller::Controller), which the manager
/// [binds](crate::controller::Controller::bind) to its informers and runs once per term of
/// leadership.
pub trait IntoRunnable {
    /// Prepares to run under `manager`.
    ///
    /// # Errors
    /// What [`Manager::add`](super::Manager::add) returns: a mistake in what is added.
    fn into_runnable(self, manager: &super::Manager) -> super::Result<Box<dyn Runnable>>;
}

impl<R: Runnable> IntoRunnable for R {
    fn into_runnable(self, _manager: &super::Manager) -> super::Result<Box<dyn Runnable>> {
        Ok(Box::new(self))
    }
}

/// Which replicas run a [`runnable_fn`]: what [`Runnable::needs_leader_election`] answers.
#[doc(alias = "LeaderElectionRunnable")]
#[doc(alias = "NeedLeaderElection")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunsOn {
    /// Only the replica holding the leader-election Lease, while it holds it, as controllers
    /// run (`needs_leader_election` is true).
    Leader,
    /// Every replica, from start to shutdown, as informers and servers run
    /// (`needs_leader_election` is false).
    EveryReplica,
}

/// A [`Runnable`] made from a name, the replicas it runs on, and an async closure, for small
/// tasks: `runnable_fn("heartbeat", RunsOn::EveryReplica, |shutdown| async move { ... })`.
pub fn runnable_fn<F, Fut>(name: impl Into<String>, runs_on: RunsOn, run: F) -> impl Runnable
where
    F: FnOnce(CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    FnRunnable {
        name: name.into(),
        runs_on,
        run,
    }
}

struct FnRunnable<F> {
    name: String,
    runs_on: RunsOn,
    run: F,
}

impl<F, Fut> Runnable for FnRunnable<F>
where
    F: FnOnce(CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    fn name(&self) -> String {
        self.name.clone()
    }

    fn needs_leader_election(&self) -> bool {
        self.runs_on == RunsOn::Leader
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin((self.run)(shutdown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runnable_fn_needs_leader_election_only_when_it_runs_on_the_leader() {
        let leader = runnable_fn("report", RunsOn::Leader, |_| async { Ok(()) });
        let every = runnable_fn("heartbeat", RunsOn::EveryReplica, |_| async { Ok(()) });
        assert!(leader.needs_leader_election());
        assert!(!every.needs_leader_election());
        assert_eq!(
            (leader.name(), every.name()),
            ("report".to_owned(), "heartbeat".to_owned())
        );
    }
}
