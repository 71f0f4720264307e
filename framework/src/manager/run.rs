//! Runs a Manager: starts the servers, then the runnables (the leader-only ones for each term of
//! leadership), waits for shutdown, drains, stops the servers.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::namespaces;
use super::{Error, Manager, OnLeadershipLoss, Result, Runnable, cancel_on_signal};
use crate::error::chain;
use crate::leader::campaign::{Election, wait_leading, wait_lost};
use crate::process::pod_namespace::pod_namespace;

/// The leader-only runnables started for one term of leadership: the token that stops them,
/// when they started, and the names of those that cannot run in a later term.
struct LeaderOnlyGroup {
    token: CancellationToken,
    since: Instant,
    /// Leader-only runnables that cannot run in a later term.
    run_once: Vec<String>,
}

impl Manager {
    /// Runs every runnable until SIGTERM/SIGINT (or the [shutdown token](Self::shutdown_token)),
    /// then marks `/readyz` unready, asks the runnables to stop, and waits up to the graceful
    /// shutdown timeout for their in-flight work.
    ///
    /// # Cancel safety
    /// Dropping the future instead stops without a graceful shutdown, as a killed process
    /// would: runnables, endpoints and the leader elector are aborted and the Lease is not
    /// released (it expires after its lease duration). Informers started by the shared factory
    /// keep running until [`Factory::shutdown`](crate::informer::Factory::shutdown).
    ///
    /// With leader election, leader-only runnables (controllers) run only while this replica
    /// leads; on losing the Lease the run ends or stands by, as [`OnLeadershipLoss`] says.
    ///
    /// # Errors
    /// An endpoint that cannot bind its address, a runnable that fails or panics (the others are
    /// then shut down first), work still running when the shutdown timeout ran out, or
    /// [`Error::LeadershipLost`] when the Lease was lost and the run does not stand by.
    pub fn run(self) -> impl Future<Output = Result<()>> + Send + 'static {
        // Boxed here, in a function that is not async, so that the run's code is compiled once,
        // into kubeward, rather than into each operator (a future that only an operator awaits is
        // compiled there).
        let run: futures::future::BoxFuture<'static, Result<()>> = Box::pin(self.run_to_end());
        run
    }

    /// [`Self::run`]'s work.
    async fn run_to_end(self) -> Result<()> {
        self.check_cache()?;
        let election = self.start_election()?;
        let stop_servers = CancellationToken::new();
        let (mut serving, others) = self.start_servers(&stop_servers);
        let signals = AbortOnDropHandle::new(tokio::spawn(cancel_on_signal(self.shutdown.clone())));
        // Informers run on every replica, leader or not, so caches are warm before work starts.
        if let Err(e) = self.factory.start() {
            tracing::debug!(error = %chain(&e), "informers were already started");
        }

        let (mut leader_only, free): (Vec<_>, Vec<_>) = others
            .into_iter()
            .partition(|r| election.is_some() && r.needs_leader_election());
        let mut tasks = JoinSet::new();
        let mut gated = JoinSet::new();
        for runnable in free {
            Self::spawn(&mut tasks, runnable, self.shutdown.child_token());
        }
        let mut to_lead = election.as_ref().map(|e| e.leadership.clone());
        let mut to_lose = to_lead.clone();
        let standby = election
            .as_ref()
            .is_some_and(|e| e.on_loss == OnLeadershipLoss::Standby);
        let mut leading: Option<LeaderOnlyGroup> = None;
        let mut standing_by: Option<Instant> = None;

        let mut outcome = Ok(());
        loop {
            tokio::select! {
                () = self.shutdown.cancelled() => break,
                became = wait_leading(to_lead.as_mut()), if leading.is_none() => {
                    if became.is_err() {
                        // The elector is gone (it only ends on release): this replica can never lead.
                        let lease = election.as_ref().map(|e| e.lease.clone()).unwrap_or_default();
                        outcome = Err(Error::LeadershipLost { lease });
                        self.shutdown.cancel();
                        break;
                    }
                    self.factory().warn_of_caches_behind();
                    match standing_by.take() {
                        None => tracing::info!("leading: starting controllers"),
                        Some(since) => tracing::info!(
                            standby_for = ?since.elapsed(),
                            "leading again: starting controllers afresh"
                        ),
                    }
                    leading = Some(self.start_term(&mut gated, &mut leader_only, standby));
                }
                () = wait_lost(to_lose.as_mut()), if leading.is_some() => {
                    // A term runs only with leader election on.
                    let (Some(ended), Some(election)) = (leading.take(), &election) else {
                        continue;
                    };
                    let lease = election.lease.clone();
                    let led_for = ended.since.elapsed();
                    if !standby || !ended.run_once.is_empty() {
                        // Stop at once: a replica never reconciles without the Lease.
                        gated.abort_all();
                        if standby {
                            tracing::error!(%lease, ?led_for, run_once = ?ended.run_once,
                                "lost leadership; cannot stand by, since these leader-only \
                                 runnables cannot run again (Runnable::next_term); shutting down");
                        } else {
                            tracing::error!(%lease, ?led_for, "lost leadership; shutting down");
                        }
                        outcome = Err(Error::LeadershipLost { lease });
                        self.shutdown.cancel();
                        break;
                    }
                    tracing::warn!(%lease, ?led_for, "lost leadership; stopping controllers and standing by");
                    let until = election.in_flight_until(self.config.graceful_shutdown_timeout);
                    self.stop_term(&mut gated, &ended.token, until, &mut outcome).await;
                    standing_by = Some(Instant::now());
                }
                Some(joined) = tasks.join_next() => self.note_ended(joined, &mut outcome),
                Some(joined) = gated.join_next() => self.note_ended(joined, &mut outcome),
                Some(joined) = serving.join_next() => self.note_ended(joined, &mut outcome),
            }
            if outcome.is_err() {
                break;
            }
        }

        self.probes.begin_shutdown();
        let drained = self.drain(&mut tasks, &mut gated).await;
        if outcome.is_ok() {
            outcome = drained;
        }
        self.factory.shutdown().await;
        if let Some(election) = election {
            // Release the Lease only after the controllers stopped, so a successor never overlaps.
            election.release.cancel();
            let _ = election.task.await;
        }
        stop_servers.cancel();
        stop_serving(&mut serving).await;
        drop(signals);
        tracing::info!("manager stopped");
        outcome
    }

    /// Starts the runnables that serve (probes, metrics, webhooks), which run on every replica,
    /// start first and stop when `stop` is cancelled, last, so that they answer before this
    /// replica leads and while its work drains; returns them and the other runnables.
    fn start_servers(&self, stop: &CancellationToken) -> (JoinSet<Ended>, Vec<Box<dyn Runnable>>) {
        let (to_serve, others): (Vec<_>, Vec<_>) =
            self.runnables.lock().drain(..).partition(|r| r.serves());
        let mut serving = JoinSet::new();
        for runnable in to_serve {
            Self::spawn(&mut serving, runnable, stop.clone());
        }
        (serving, others)
    }

    /// Starts a term: runs every leader-only runnable, keeping (in standby mode) the fresh one
    /// each gives for the next term.
    fn start_term(
        &self,
        gated: &mut JoinSet<Ended>,
        leader_only: &mut Vec<Box<dyn Runnable>>,
        standby: bool,
    ) -> LeaderOnlyGroup {
        let token = self.shutdown.child_token();
        let mut next = Vec::new();
        let mut run_once = Vec::new();
        for runnable in leader_only.drain(..) {
            if standby {
                match runnable.next_term() {
                    Some(fresh) => next.push(fresh),
                    None => run_once.push(runnable.name()),
                }
            }
            Self::spawn(gated, runnable, token.clone());
        }
        *leader_only = next;
        if !run_once.is_empty() {
            tracing::warn!(
                ?run_once,
                "these leader-only runnables cannot run again (Runnable::next_term): losing the Lease will end the run instead of standing by"
            );
        }
        LeaderOnlyGroup {
            token,
            since: Instant::now(),
            run_once,
        }
    }

    /// Ends a term after the Lease was lost: asks its runnables to stop, gives their in-flight
    /// work until `until`, then aborts what is left.
    async fn stop_term(
        &self,
        gated: &mut JoinSet<Ended>,
        token: &CancellationToken,
        until: Instant,
        outcome: &mut Result<()>,
    ) {
        token.cancel();
        let drained = tokio::time::timeout_at(until, async {
            while let Some(joined) = gated.join_next().await {
                self.note_ended(joined, outcome);
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                running = gated.len(),
                "leader-only work still running when the Lease could pass to another replica; aborting it"
            );
            gated.abort_all();
            while let Some(joined) = gated.join_next().await {
                self.note_ended(joined, outcome);
            }
        }
    }

    fn spawn(tasks: &mut JoinSet<Ended>, runnable: Box<dyn Runnable>, token: CancellationToken) {
        let name = runnable.name();
        tracing::debug!(%name, "starting");
        tasks.spawn(async move {
            let outcome = AssertUnwindSafe(runnable.run(token)).catch_unwind().await;
            (name, outcome)
        });
    }

    /// Records a runnable that ended; an error or panic starts shutdown.
    fn note_ended(&self, joined: Result<Ended, tokio::task::JoinError>, outcome: &mut Result<()>) {
        if let Err(e) = ended(joined) {
            // The whole chain: "NAME failed" alone does not say why.
            tracing::error!(error = %chain(&e), "stopping the manager");
            if outcome.is_ok() {
                *outcome = Err(e);
            }
            self.shutdown.cancel();
        }
    }

    /// Waits up to the graceful timeout for every runnable to finish; aborts what is left.
    async fn drain(&self, tasks: &mut JoinSet<Ended>, gated: &mut JoinSet<Ended>) -> Result<()> {
        let timeout = self.config.graceful_shutdown_timeout;
        let drained = tokio::time::timeout(timeout, async {
            let mut first_error = None;
            while let Some(joined) = match tasks.join_next().await {
                Some(joined) => Some(joined),
                None => gated.join_next().await,
            } {
                if let Err(e) = ended(joined) {
                    tracing::error!(error = %chain(&e), "failed while shutting down");
                    first_error.get_or_insert(e);
                }
            }
            first_error
        })
        .await;
        match drained {
            Ok(None) => Ok(()),
            Ok(Some(e)) => Err(e),
            Err(_) => {
                let mut unfinished = Vec::new();
                for set in [tasks, gated] {
                    set.abort_all();
                    while let Some(joined) = set.join_next_with_id().await {
                        if let Err(e) = joined {
                            unfinished.push(format!("task {}", e.id()));
                        }
                    }
                }
                Err(Error::ShutdownTimeout {
                    seconds: timeout.as_secs(),
                    unfinished,
                })
            }
        }
    }

    /// Starts the elector when leader election is on, with its `/healthz` check.
    fn start_election(&self) -> Result<Option<Election>> {
        let Some(settings) = &self.config.leader_election else {
            return Ok(None);
        };
        let namespace = (settings.namespace.clone()).unwrap_or_else(|| pod_namespace(&self.client));
        let connectivity = Arc::clone(self.factory.connectivity());
        let election = Election::start(
            &self.client,
            &namespace,
            settings,
            &self.metrics,
            connectivity,
        )
        .map_err(Error::LeaderElection)?;
        let health = election.leadership.clone();
        self.probes.add_health(
            "leader-election".into(),
            Arc::new(move || health.healthy().map_err(|e| e.to_string())),
        );
        Ok(Some(election))
    }

    /// Checks the cache scope's selectors and namespace names, and warns (on a task of its own,
    /// until shutdown) of watched namespaces that do not exist.
    fn check_cache(&self) -> Result<()> {
        self.config.cache.check().map_err(Error::Cache)?;
        let namespaces: Vec<String> = self
            .config
            .cache
            .watched_namespaces()
            .map(str::to_owned)
            .collect();
        let warning = namespaces::warn_of_missing(self.client.clone(), namespaces);
        tokio::spawn(self.shutdown.clone().run_until_cancelled_owned(warning));
        Ok(())
    }
}

/// Waits for the servers, whose stop token was cancelled, to finish.
async fn stop_serving(serving: &mut JoinSet<Ended>) {
    while let Some(joined) = serving.join_next().await {
        if let Err(e) = ended(joined) {
            tracing::error!(error = %chain(&e), "a server failed while shutting down");
        }
    }
}

/// How a runnable's task ended: its own result, or the panic caught inside the task.
type Ended = (String, std::thread::Result<Result<(), super::BoxError>>);

/// Turns a finished runnable task into `Ok` or the error it ends the manager with.
fn ended(joined: Result<Ended, tokio::task::JoinError>) -> Result<()> {
    match joined {
        Ok((name, Ok(Ok(())))) => {
            tracing::debug!(%name, "finished");
            Ok(())
        }
        Ok((name, Ok(Err(source)))) => Err(Error::Runnable { name, source }),
        Ok((name, Err(_panic))) => Err(Error::RunnablePanicked { name }),
        // Only aborted at the shutdown timeout, which is reported on its own.
        Err(_) => Ok(()),
    }
}

// They serve endpoints with the testing kit's HTTP helpers.
#[cfg(test)]
#[path = "tests/run.rs"]
mod tests;
