//! Tests of running a manager: readiness while draining, failing and panicking runnables,
//! graceful-shutdown bounds, terms of leadership, bind errors and secure metrics that cannot start.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::*;
use crate::leader::Status;
use crate::leader::campaign::work_may_finish_by;
use crate::manager::{BoxError, Config, RunsOn, runnable_fn};
use crate::serving::{BindAddress, Endpoints};
use crate::testing::{self, free_addr};

/// A client that is never used to make requests: these tests need no API server.
fn offline_client() -> kube::Client {
    let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
    kube::Client::try_from(config).expect("a plain HTTP config builds a client")
}

async fn get(addr: SocketAddr, path: &str) -> String {
    let response = testing::get(addr, path)
        .await
        .expect("the endpoint answers");
    format!("{} {}", response.status(), response.body())
}

async fn eventually_get(addr: SocketAddr, path: &str, expected: &str) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Ok(mut stream)) =
            tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr)).await
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
    let addr = free_addr().expect("a free port");
    let manager = Manager::new(offline_client(), Config::default())
        .expect("a manager builds for a client given");
    let on = BindAddress::On(addr);
    manager
        .add(Endpoints::new().metrics(on).health_probes(on))
        .expect("a free address binds");
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    manager
        .add(runnable_fn(
            "slow-drain",
            RunsOn::EveryReplica,
            move |shutdown| async move {
                shutdown.cancelled().await;
                release_rx.await.map_err(|e| Box::new(e) as BoxError)
            },
        ))
        .expect("the manager takes it");
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
    let manager = Manager::new(offline_client(), Config::default())
        .expect("a manager builds for a client given");
    let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel();
    manager
        .add(runnable_fn(
            "bystander",
            RunsOn::EveryReplica,
            move |shutdown| async move {
                shutdown.cancelled().await;
                stopped_tx
                    .send(())
                    .map_err(|()| "the test went away".into())
            },
        ))
        .expect("the manager takes it");
    manager
        .add(runnable_fn("broken", RunsOn::EveryReplica, |_| async {
            Err::<(), BoxError>("disk on fire".into())
        }))
        .expect("the manager takes it");
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
    let manager = Manager::new(offline_client(), Config::default())
        .expect("a manager builds for a client given");
    manager
        .add(runnable_fn("panicky", RunsOn::EveryReplica, |_| async {
            panic!("reconcile bug")
        }))
        .expect("the manager takes it");
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
    let manager =
        Manager::new(offline_client(), config).expect("a manager builds for a client given");
    manager
        .add(runnable_fn("stuck", RunsOn::EveryReplica, |_| {
            futures::future::pending()
        }))
        .expect("the manager takes it");
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
    let manager = Manager::new(offline_client(), Config::default())
        .expect("a manager builds for a client given");
    let mut gated = JoinSet::new();
    let token = manager.shutdown.child_token();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    Manager::spawn(
        &mut gated,
        Box::new(runnable_fn(
            "polite",
            RunsOn::Leader,
            move |stop| async move {
                stop.cancelled().await;
                tokio::time::sleep(Duration::from_secs(1)).await; // a reconcile in flight
                done_tx.send(()).map_err(|()| "the test went away".into())
            },
        )),
        token.clone(),
    );
    Manager::spawn(
        &mut gated,
        Box::new(runnable_fn("deaf", RunsOn::Leader, |_| {
            futures::future::pending()
        })),
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
async fn an_address_in_use_is_a_bind_error_of_add_naming_the_endpoint() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = taken.local_addr().expect("a bound address");
    let manager = Manager::new(offline_client(), Config::default())
        .expect("a manager builds for a client given");
    let outcome = manager.add(Endpoints::new().metrics(BindAddress::On(addr)));
    assert!(
        matches!(outcome, Err(Error::Bind { what: "metrics", addr: a, .. }) if a == addr),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn secure_metrics_on_the_probe_address_or_without_their_certificate_are_refused_by_add() {
    let addr = free_addr().expect("a free port");
    let manager = Manager::new(offline_client(), Config::default())
        .expect("a manager builds for a client given");
    let on = BindAddress::On(addr);
    let shared = Endpoints::new().metrics(on).health_probes(on);
    let refused = manager.add(shared.secure_metrics(None));
    assert!(
        matches!(&refused, Err(Error::InvalidFlags(m)) if m.contains("apart from the plain-HTTP health probes")),
        "{refused:?}"
    );

    let missing = Endpoints::new()
        .metrics(on)
        .secure_metrics(Some("/nonexistent/kubeward/metrics-certs".into()));
    let refused = manager.add(missing);
    assert!(
        matches!(&refused, Err(Error::MetricsCertificate(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_shard_of_a_ring_no_controller_is_in_ends_at_start_naming_the_ring() {
    use std::error::Error as _;

    use k8s_openapi::api::core::v1::ConfigMap;

    use crate::controller::Controller;
    use crate::shard::Shard;
    use crate::testing::NoopReconciler;

    let manager = Manager::new(offline_client(), Config::default())
        .expect("a manager builds for a client given");
    manager
        .add(Shard::new("widgets", "shard-0"))
        .expect("the manager takes the shard");
    manager
        .add(Controller::<ConfigMap>::new(NoopReconciler).ring("gadgets"))
        .expect("the manager takes it");
    let run = tokio::time::timeout(Duration::from_secs(10), manager.run()).await;
    let error = run
        .expect("run ends at once")
        .expect_err("no controller is in ring widgets");
    let Error::Runnable { name, source } = &error else {
        panic!("expected the shard Lease to fail, got {error:?}");
    };
    assert_eq!(name, "shard-lease widgets/shard-0");
    let message = source.to_string();
    assert!(
        message.contains("--shard-ring widgets") && message.contains("its name"),
        "{message}"
    );
    assert!(error.source().is_some());
}

#[tokio::test]
async fn a_shard_added_after_controllers_of_its_ring_is_refused() {
    use k8s_openapi::api::core::v1::ConfigMap;

    use crate::controller::Controller;
    use crate::shard::Shard;
    use crate::testing::NoopReconciler;

    let manager = Manager::new(offline_client(), Config::default())
        .expect("a manager builds for a client given");
    manager
        .add(Controller::<ConfigMap>::new(NoopReconciler).ring("widgets"))
        .expect("the manager takes it");
    let refused = manager.add(Shard::new("widgets", "shard-0"));
    assert!(
        matches!(&refused, Err(Error::InvalidFlags(m)) if m.contains("before the ring's controllers")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn an_invalid_cache_selector_stops_run_before_anything_starts_naming_the_selector_and_why() {
    use std::error::Error as _;

    use k8s_openapi::api::core::v1::Secret;

    use crate::informer::CacheScope;

    let scope = CacheScope::default()
        .namespaces(["shop"])
        .labels::<Secret>("app in (web");
    let refused = Manager::new(offline_client(), Config::default().cache(scope))
        .expect("a manager builds for a client given")
        .run()
        .await;
    let Err(error @ Error::Cache(_)) = &refused else {
        panic!("not refused for its cache scope: {refused:?}");
    };
    let cause = error.source().expect("the invalid selector");
    assert_eq!(
        cause.to_string(),
        "invalid label selector \"app in (web\" for Secret"
    );
    let parse = cause.source().expect("the parse error");
    assert_eq!(parse.to_string(), "a '(' without its ')'");
}
