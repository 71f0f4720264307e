//! Runs a Manager: binds the endpoints, starts the runnables, waits for shutdown, drains.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::http::{Endpoints, serve};
use super::{BindAddress, Error, Manager, Result, cancel_on_signal};
use crate::leader::{LeaderElector, Leadership};

/// A running election: the handle to watch, the token that releases the Lease, the task.
///
/// The task is aborted if `run()` is dropped before it returns, as a killed process would stop:
/// a detached elector would go on renewing the Lease with no controller running.
struct Election {
    lease: String,
    leadership: Leadership,
    release: CancellationToken,
    task: AbortOnDropHandle<()>,
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
    /// # Errors
    /// An endpoint that cannot bind its address, a runnable that fails or panics (the others are
    /// then shut down first), or work still running when the shutdown timeout ran out; for a
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

        let (mut waiting, free): (Vec<_>, Vec<_>) = self
            .runnables
            .lock()
            .drain(..)
            .partition(|r| election.is_some() && r.needs_leader_election());
        let mut tasks = JoinSet::new();
        let mut gated = JoinSet::new();
        for runnable in free {
            self.spawn(&mut tasks, runnable);
        }
        let mut to_lead = election.as_ref().map(|e| e.leadership.clone());
        let mut to_lose = to_lead.clone();
        let mut leading = false;

        let mut outcome = Ok(());
        loop {
            tokio::select! {
                () = self.shutdown.cancelled() => break,
                became = wait_leading(to_lead.as_mut()), if !leading => {
                    if became.is_err() {
                        // The elector is gone (it only ends on release): this replica can never lead.
                        let lease = election.as_ref().map(|e| e.lease.clone()).unwrap_or_default();
                        outcome = Err(Error::LeadershipLost { lease });
                        self.shutdown.cancel();
                        break;
                    }
                    leading = true;
                    tracing::info!("leading: starting controllers");
                    for runnable in waiting.drain(..) {
                        self.spawn(&mut gated, runnable);
                    }
                }
                () = wait_lost(to_lose.as_mut()), if leading => {
                    // Stop at once: a replica never reconciles without the Lease.
                    gated.abort_all();
                    let lease = election.as_ref().map(|e| e.lease.clone()).unwrap_or_default();
                    tracing::error!(%lease, "lost leadership; shutting down");
                    outcome = Err(Error::LeadershipLost { lease });
                    self.shutdown.cancel();
                    break;
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

    fn spawn(&self, tasks: &mut JoinSet<Ended>, runnable: Box<dyn super::Runnable>) {
        let name = runnable.name();
        let token = self.shutdown.child_token();
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
