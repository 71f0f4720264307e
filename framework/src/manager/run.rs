//! Runs a Manager: binds the endpoints, starts the runnables, waits for shutdown, drains.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::http::{Endpoints, serve};
use super::{BindAddress, Error, Manager, Result, cancel_on_signal};

impl Manager {
    /// Runs every runnable until SIGTERM/SIGINT (or the [shutdown token](Self::shutdown_token)),
    /// then marks `/readyz` unready, asks the runnables to stop, and waits up to the graceful
    /// shutdown timeout for their in-flight work.
    ///
    /// # Errors
    /// An endpoint that cannot bind its address, a runnable that fails or panics (the others are
    /// then shut down first), or work still running when the shutdown timeout ran out.
    pub async fn run(self) -> Result<()> {
        let stop_servers = CancellationToken::new();
        let mut servers = self.bind_endpoints(&stop_servers).await?;
        let signals = tokio::spawn(cancel_on_signal(self.shutdown.clone()));

        let mut tasks = JoinSet::new();
        for runnable in self.runnables.lock().drain(..) {
            let name = runnable.name();
            let token = self.shutdown.child_token();
            tracing::debug!(%name, "starting");
            tasks.spawn(async move {
                let outcome = AssertUnwindSafe(runnable.run(token)).catch_unwind().await;
                (name, outcome)
            });
        }

        let mut outcome = Ok(());
        loop {
            tokio::select! {
                () = self.shutdown.cancelled() => break,
                Some(joined) = tasks.join_next() => {
                    if let Err(e) = ended(joined) {
                        tracing::error!(error = %e, "stopping the manager");
                        outcome = Err(e);
                        self.shutdown.cancel();
                        break;
                    }
                }
            }
        }

        self.probes.begin_shutdown();
        let timeout = self.config.graceful_shutdown_timeout;
        let drained = tokio::time::timeout(timeout, async {
            let mut first_error = None;
            while let Some(joined) = tasks.join_next().await {
                if let Err(e) = ended(joined) {
                    tracing::error!(error = %e, "failed while shutting down");
                    first_error.get_or_insert(e);
                }
            }
            first_error
        })
        .await;
        match drained {
            Ok(Some(e)) if outcome.is_ok() => outcome = Err(e),
            Ok(_) => {}
            Err(_) => {
                tasks.abort_all();
                let mut unfinished = Vec::new();
                while let Some(joined) = tasks.join_next_with_id().await {
                    if let Err(e) = joined {
                        unfinished.push(format!("task {}", e.id()));
                    }
                }
                if outcome.is_ok() {
                    outcome = Err(Error::ShutdownTimeout {
                        seconds: timeout.as_secs(),
                        unfinished,
                    });
                }
            }
        }

        stop_servers.cancel();
        while servers.join_next().await.is_some() {}
        signals.abort();
        tracing::info!("manager stopped");
        outcome
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
