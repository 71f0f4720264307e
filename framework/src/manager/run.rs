//! Runs a Manager: binds the endpoints, starts the runnables (the leader-only ones for each term
//! of leadership), waits for shutdown, drains.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::http::{Endpoints, serve};
use super::{BindAddress, Error, Manager, OnLeadershipLoss, Result, Runnable, cancel_on_signal};
use crate::leader::{LeaderElector, Leadership, Status};

/// A running election: the handle to watch, the token that releases the Lease, the task.
///
/// The task is aborted if `run()` is dropped before it returns, as a killed process would stop:
/// a detached elector would go on renewing the Lease with no controller running.
struct Election {
    lease: String,
    lease_duration: Duration,
    on_loss: OnLeadershipLoss,
    leadership: Leadership,
    release: CancellationToken,
    task: AbortOnDropHandle<()>,
}

/// A term of leadership as the manager runs it: the token that stops its runnables.
struct Lead {
    token: CancellationToken,
    since: Instant,
    /// Leader-only runnables that cannot run in a later term.
    run_once: Vec<String>,
}

impl Election {
    /// Until when the work of the term just lost may finish; see [`work_may_finish_by`].
    fn in_flight_until(&self, graceful: Duration) -> Instant {
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
fn work_may_finish_by(
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
async fn wait_leading(leadership: Option<&mut Leadership>) -> Result<(), crate::leader::Error> {
    match leadership {
        Some(l) => l.leading().await,
        None => std::future::pending().await,
    }
}

/// Waits until `leadership` no longer leads; never, without leader election.
async fn wait_lost(leadership: Option<&mut Leadership>) {
    match leadership {
        Some(l) => l.lost().await,
        None => std::future::pending().await,
    }
}

/// The namespace of the pod this runs in, else the client's default namespace.
fn pod_namespace(client: &kube::Client) -> String {
    std::env::var("POD_NAMESPACE")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace").ok()
        })
        .map(|ns| ns.trim().to_owned())
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| client.default_namespace().to_owned())
}

impl Manager {
    /// Runs every runnable until SIGTERM/SIGINT (or the [shutdown token](Self::shutdown_token)),
    /// then marks `/readyz` unready, asks the runnables to stop, and waits up to the graceful
    /// shutdown timeout for their in-flight work.
    ///
    /// When the command line named a [`Command`](super::Command), `run` carries it out for the
    /// controllers added so far and returns without starting anything.
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
    /// [`Error::LeadershipLost`] when the Lease was lost and the run does not stand by; for a
    /// command, [`Error::Manifests`].
    pub async fn run(self) -> Result<()> {
        if let Some(command) = &self.command {
            return self.run_command(command);
        }
        let election = self.start_election()?;
        let stop_servers = CancellationToken::new();
        let mut servers = self.bind_endpoints(&stop_servers).await?;
        let signals = AbortOnDropHandle::new(tokio::spawn(cancel_on_signal(self.shutdown.clone())));
        // Informers run on every replica, leader or not, so caches are warm before work starts.
        if let Err(e) = self.factory.start() {
            tracing::debug!(error = %e, "informers were already started");
        }

        let (mut leader_only, free): (Vec<_>, Vec<_>) = self
            .runnables
            .lock()
            .drain(..)
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
        let mut term: Option<Lead> = None;
        let mut standing_by: Option<Instant> = None;

        let mut outcome = Ok(());
        loop {
            tokio::select! {
                () = self.shutdown.cancelled() => break,
                became = wait_leading(to_lead.as_mut()), if term.is_none() => {
                    if became.is_err() {
                        // The elector is gone (it only ends on release): this replica can never lead.
                        let lease = election.as_ref().map(|e| e.lease.clone()).unwrap_or_default();
                        outcome = Err(Error::LeadershipLost { lease });
                        self.shutdown.cancel();
                        break;
                    }
                    match standing_by.take() {
                        None => tracing::info!("leading: starting controllers"),
                        Some(since) => tracing::info!(
                            standby_for = ?since.elapsed(),
                            "leading again: starting controllers afresh"
                        ),
                    }
                    term = Some(self.start_term(&mut gated, &mut leader_only, standby));
                }
                () = wait_lost(to_lose.as_mut()), if term.is_some() => {
                    // A term runs only with leader election on.
                    let (Some(ended), Some(election)) = (term.take(), &election) else {
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
        while servers.join_next().await.is_some() {}
        drop(signals);
        tracing::info!("manager stopped");
        outcome
    }

    /// Starts a term: runs every leader-only runnable, keeping (in standby mode) the fresh one
    /// each gives for the next term.
    fn start_term(
        &self,
        gated: &mut JoinSet<Ended>,
        leader_only: &mut Vec<Box<dyn Runnable>>,
        standby: bool,
    ) -> Lead {
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
        Lead {
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
            tracing::error!(error = %e, "stopping the manager");
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
                    tracing::error!(error = %e, "failed while shutting down");
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

    /// Starts the elector when leader election is on; it competes until the release token.
    fn start_election(&self) -> Result<Option<Election>> {
        let Some(settings) = &self.config.leader_election else {
            return Ok(None);
        };
        let namespace = settings
            .namespace
            .clone()
            .unwrap_or_else(|| pod_namespace(&self.client));
        let metrics = self.metrics.clone();
        let (started, stopped) = (metrics.clone(), metrics);
        let (lease_started, lease_stopped) = (settings.lease.clone(), settings.lease.clone());
        let elector = LeaderElector::new(
            self.client.clone(),
            &namespace,
            &settings.lease,
            settings.config.clone(),
        )
        .map_err(Error::LeaderElection)?
        .on_started_leading(move |_| started.set_leader(&lease_started, true))
        .on_stopped_leading(move |_| stopped.set_leader(&lease_stopped, false));
        self.metrics.set_leader(&settings.lease, false);
        let leadership = elector.leadership();
        let health = leadership.clone();
        self.probes.add_health(
            "leader-election".into(),
            Arc::new(move || health.healthy().map_err(|e| e.to_string())),
        );
        tracing::info!(identity = elector.identity(), lease = %settings.lease, %namespace, "leader election on");
        let release = CancellationToken::new();
        let task =
            AbortOnDropHandle::new(tokio::spawn(elector.run(release.clone().cancelled_owned())));
        Ok(Some(Election {
            lease: settings.lease.clone(),
            lease_duration: settings.config.lease_duration_value(),
            on_loss: settings.on_loss,
            leadership,
            release,
            task,
        }))
    }

    async fn bind_endpoints(&self, stop: &CancellationToken) -> Result<JoinSet<()>> {
        let registry = self.registry.clone();
        let probes = Arc::clone(&self.probes);
        let mut servers = JoinSet::new();
        let listeners = match (
            self.config.metrics_bind_address,
            self.config.health_probe_bind_address,
        ) {
            (BindAddress::On(m), BindAddress::On(p)) if m == p => {
                vec![(
                    bind("metrics and health probe", m).await?,
                    Endpoints {
                        probes: Some(probes),
                        metrics: Some(registry),
                    },
                )]
            }
            (metrics, health) => {
                let mut listeners = Vec::new();
                if let BindAddress::On(addr) = metrics {
                    listeners.push((
                        bind("metrics", addr).await?,
                        Endpoints {
                            probes: None,
                            metrics: Some(registry),
                        },
                    ));
                }
                if let BindAddress::On(addr) = health {
                    listeners.push((
                        bind("health probe", addr).await?,
                        Endpoints {
                            probes: Some(probes),
                            metrics: None,
                        },
                    ));
                }
                listeners
            }
        };
        for (listener, endpoints) in listeners {
            if let Ok(addr) = listener.local_addr() {
                tracing::info!(%addr, metrics = endpoints.metrics.is_some(), probes = endpoints.probes.is_some(), "serving");
            }
            servers.spawn(serve(listener, endpoints, stop.clone()));
        }
        Ok(servers)
    }
}

async fn bind(what: &'static str, addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { what, addr, source })
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::manager::{BoxError, Config, runnable_fn};

    /// A client that is never used to make requests: these tests need no API server.
    fn offline_client() -> kube::Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
        kube::Client::try_from(config).expect("a plain HTTP config builds a client")
    }

    fn free_addr() -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("a bound address")
    }

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("the endpoint listens");
        let request = format!("GET {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n");
        stream
            .write_all(request.as_bytes())
            .await
            .expect("the request is sent");
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .await
            .expect("a response arrives");
        response
    }

    async fn eventually_get(addr: SocketAddr, path: &str, expected: &str) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Ok(mut stream)) =
                tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr))
                    .await
            {
                drop(stream.shutdown().await);
                let response = get(addr, path).await;
                if response.contains(expected) {
                    return response;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "GET {path} on {addr} never answered {expected:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn readyz_turns_unready_at_shutdown_while_work_drains_then_run_returns_ok() {
        let addr = free_addr();
        let config = Config::default()
            .metrics_bind_address(BindAddress::On(addr))
            .health_probe_bind_address(BindAddress::On(addr));
        let manager = Manager::new(offline_client(), config);
        let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
        manager.add(runnable_fn(
            "slow-drain",
            false,
            move |shutdown| async move {
                shutdown.cancelled().await;
                release_rx.await.map_err(|e| Box::new(e) as BoxError)
            },
        ));
        let token = manager.shutdown_token();
        let run = tokio::spawn(manager.run());

        eventually_get(addr, "/readyz", "200 OK").await;
        assert!(get(addr, "/healthz").await.contains("200 OK"));
        assert!(get(addr, "/metrics").await.contains("200 OK"));

        token.cancel();
        let draining = eventually_get(addr, "/readyz", "503").await;
        assert!(draining.contains("shutting down"), "{draining}");
        assert!(
            !run.is_finished(),
            "run must wait for the draining runnable"
        );

        release_tx.send(()).expect("the runnable waits for release");
        let outcome = tokio::time::timeout(Duration::from_secs(10), run)
            .await
            .expect("run returns after the drain");
        outcome
            .expect("run does not panic")
            .expect("a clean shutdown is Ok");
    }

    #[tokio::test]
    async fn a_failing_runnable_stops_the_others_and_is_named_in_the_error() {
        let manager = Manager::new(offline_client(), Config::default());
        let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel();
        manager.add(runnable_fn(
            "bystander",
            false,
            move |shutdown| async move {
                shutdown.cancelled().await;
                stopped_tx
                    .send(())
                    .map_err(|()| "the test went away".into())
            },
        ));
        manager.add(runnable_fn("broken", false, |_| async {
            Err::<(), BoxError>("disk on fire".into())
        }));
        let outcome = tokio::time::timeout(Duration::from_secs(10), manager.run())
            .await
            .expect("run returns");
        match outcome {
            Err(Error::Runnable { name, source }) => {
                assert_eq!(name, "broken");
                assert_eq!(source.to_string(), "disk on fire");
            }
            other => panic!("expected the broken runnable's error, got {other:?}"),
        }
        stopped_rx
            .await
            .expect("the bystander was asked to stop and did");
    }

    #[tokio::test]
    async fn a_panicking_runnable_is_reported_by_name() {
        let manager = Manager::new(offline_client(), Config::default());
        manager.add(runnable_fn("panicky", false, |_| async {
            panic!("reconcile bug")
        }));
        let outcome = tokio::time::timeout(Duration::from_secs(10), manager.run())
            .await
            .expect("run returns");
        assert!(
            matches!(outcome, Err(Error::RunnablePanicked { ref name }) if name == "panicky"),
            "{outcome:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn work_that_outlives_the_graceful_timeout_is_cut_off_with_an_error() {
        let config = Config::default().graceful_shutdown_timeout(Duration::from_secs(30));
        let manager = Manager::new(offline_client(), config);
        manager.add(runnable_fn("stuck", false, |_| futures::future::pending()));
        manager.shutdown_token().cancel();
        let started = tokio::time::Instant::now();
        let outcome = manager.run().await;
        assert!(
            matches!(outcome, Err(Error::ShutdownTimeout { seconds: 30, .. })),
            "{outcome:?}"
        );
        assert!(
            started.elapsed() >= Duration::from_secs(30),
            "the timeout was not waited out"
        );
    }

    fn lost_term(renewed_at: tokio::time::Instant, holder: &str) -> Status {
        let mut status = Status::new("me".into());
        status.holder = Some(holder.to_owned());
        status.last_term = Some(crate::leader::Term {
            started_at: renewed_at,
            renewed_at,
            valid_until: renewed_at + Duration::from_secs(10),
            ended_at: Some(renewed_at + Duration::from_secs(10)),
        });
        status
    }

    #[tokio::test(start_paused = true)]
    async fn work_of_a_lost_term_may_finish_until_the_lease_could_pass_on_and_no_later() {
        let lease = Duration::from_secs(15);
        let graceful = Duration::from_secs(30);
        let renewed = Instant::now();
        let now = renewed + Duration::from_secs(10); // lost at the renew deadline
        let status = lost_term(renewed, "me");
        assert_eq!(
            work_may_finish_by(&status, lease, graceful, now),
            renewed + lease
        );
        assert_eq!(
            work_may_finish_by(&status, lease, Duration::from_secs(2), now),
            now + Duration::from_secs(2),
            "never past the graceful timeout"
        );
        assert_eq!(
            work_may_finish_by(&lost_term(renewed, "other"), lease, graceful, now),
            now,
            "another replica took the Lease: stop at once"
        );
        assert_eq!(
            work_may_finish_by(&status, lease, graceful, renewed + lease * 2),
            renewed + lease * 2,
            "too late already: stop at once"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn stopping_a_term_lets_work_finish_until_the_bound_then_aborts_the_rest() {
        let manager = Manager::new(offline_client(), Config::default());
        let mut gated = JoinSet::new();
        let token = manager.shutdown.child_token();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        Manager::spawn(
            &mut gated,
            Box::new(runnable_fn("polite", true, move |stop| async move {
                stop.cancelled().await;
                tokio::time::sleep(Duration::from_secs(1)).await; // a reconcile in flight
                done_tx.send(()).map_err(|()| "the test went away".into())
            })),
            token.clone(),
        );
        Manager::spawn(
            &mut gated,
            Box::new(runnable_fn("deaf", true, |_| futures::future::pending())),
            token.clone(),
        );
        tokio::task::yield_now().await;
        let started = Instant::now();
        let mut outcome = Ok(());
        manager
            .stop_term(
                &mut gated,
                &token,
                started + Duration::from_secs(5),
                &mut outcome,
            )
            .await;
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(5),
            "waited for the bound"
        );
        assert!(gated.is_empty(), "the deaf runnable was aborted");
        assert!(outcome.is_ok(), "{outcome:?}");
        done_rx
            .await
            .expect("the polite runnable finished its work");
        assert!(
            !manager.shutdown.is_cancelled(),
            "losing a term does not shut the manager down"
        );
    }

    #[tokio::test]
    async fn an_address_in_use_is_a_bind_error_naming_the_endpoint() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let addr = taken.local_addr().expect("a bound address");
        let config = Config::default().metrics_bind_address(BindAddress::On(addr));
        let outcome = Manager::new(offline_client(), config).run().await;
        assert!(
            matches!(outcome, Err(Error::Bind { what: "metrics", addr: a, .. }) if a == addr),
            "{outcome:?}"
        );
    }
}
