//! After an outage, an informer waiting out a long backoff retries as soon as another reaches the
//! server again, not when its own backoff ends.

use std::time::Duration;

use http::StatusCode;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;

use super::config_map;
use crate::informer::{Config, Factory, SharedInformer, WatchList};
use crate::testing::fake::Verb;
use crate::testing::{FakeApiServer, wait_for};

/// Far longer than the test waits: an informer still in it never syncs in time.
const LONG_BACKOFF: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(10);

/// A fake API server serving ConfigMaps and Secrets.
fn configmaps_and_secrets() -> FakeApiServer {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    fake.register::<Secret>();
    fake
}

/// A Secrets informer of `factory`, started with its first list answered 503 by `fake`: once
/// that list fails, it waits out [`LONG_BACKOFF`] unless an outage's end wakes it.
fn secrets_failing_their_first_list(
    fake: &FakeApiServer,
    factory: &Factory,
) -> anyhow::Result<SharedInformer<Secret>> {
    fake.fail_next(Verb::List, "secrets", StatusCode::SERVICE_UNAVAILABLE);
    let slow = Config::default()
        .watch_list(WatchList::Off)
        .backoff(LONG_BACKOFF, LONG_BACKOFF);
    let secrets = factory.informer_with(Api::<Secret>::all(fake.client()), slow)?;
    secrets.start()?;
    Ok(secrets)
}

/// A factory over `fake` (serving ConfigMaps and Secrets) with ConfigMaps synced and a Secrets informer whose first list found the
/// server unreachable (503) within an outage the ConfigMaps' watch saw first, now waiting out
/// [`LONG_BACKOFF`].
async fn secrets_backing_off_in_an_outage(
    fake: &FakeApiServer,
) -> anyhow::Result<(Factory, SharedInformer<Secret>)> {
    let factory = Factory::new(fake.client());
    let quick = Config::default().backoff(Duration::from_millis(50), Duration::from_millis(50));
    let config_maps = factory.informer_with(Api::<ConfigMap>::all(fake.client()), quick)?;
    config_maps.start()?;
    tokio::time::timeout(WAIT, config_maps.wait_for_sync()).await??;

    // The outage: the ConfigMaps' next watch fails first, then the Secrets' list.
    fake.fail_next(Verb::Watch, "configmaps", StatusCode::SERVICE_UNAVAILABLE);
    fake.drop_watches();
    wait_for(WAIT, "the ConfigMaps' watch failed", || {
        let unreachable = factory.connectivity().is_unreachable();
        async move { unreachable.then_some(()) }
    })
    .await?;
    let secrets = secrets_failing_their_first_list(fake, &factory)?;
    let stats = secrets.stats();
    wait_for(WAIT, "the Secrets' first list failed", || {
        let listed = stats.list_requests();
        async move { (listed >= 1).then_some(()) }
    })
    .await?;
    Ok((factory, secrets))
}

#[tokio::test]
async fn an_informer_in_backoff_retries_once_another_reaches_the_server() -> anyhow::Result<()> {
    let fake = configmaps_and_secrets();
    fake.seed(&config_map("demo", "settings"))?;
    let (factory, secrets) = secrets_backing_off_in_an_outage(&fake).await?;

    // The ConfigMaps' watch opens again after its 50 ms backoff: the server is back.
    tokio::time::timeout(WAIT, secrets.wait_for_sync())
        .await
        .map_err(|_| anyhow::anyhow!("the Secrets waited out their own backoff"))??;
    assert_eq!(
        secrets.stats().list_requests(),
        2,
        "the failed list, then the one that synced"
    );
    assert!(!factory.connectivity().is_unreachable());
    Ok(())
}

#[tokio::test]
async fn the_informer_whose_failure_began_an_outage_retries_once_the_server_is_back()
-> anyhow::Result<()> {
    let fake = configmaps_and_secrets();
    fake.seed(&config_map("demo", "settings"))?;
    let factory = Factory::new(fake.client());
    // The outage begins with the Secrets' first list, which then waits out a long backoff.
    let secrets = secrets_failing_their_first_list(&fake, &factory)?;
    let stats = secrets.stats();
    wait_for(WAIT, "the Secrets' first list failed", || {
        let failed = stats.list_requests() >= 1 && factory.connectivity().is_unreachable();
        async move { failed.then_some(()) }
    })
    .await?;
    // The ConfigMaps' first list fails in the same outage, then gets through 50 ms later.
    fake.fail_next(Verb::List, "configmaps", StatusCode::SERVICE_UNAVAILABLE);
    let quick = Config::default()
        .watch_list(WatchList::Off)
        .backoff(Duration::from_millis(50), Duration::from_millis(50));
    let config_maps = factory.informer_with(Api::<ConfigMap>::all(fake.client()), quick)?;
    config_maps.start()?;

    tokio::time::timeout(WAIT, secrets.wait_for_sync())
        .await
        .map_err(|_| anyhow::anyhow!("the Secrets waited out their own backoff"))??;
    assert_eq!(
        secrets.stats().list_requests(),
        2,
        "the failed list, then one"
    );
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn an_informer_that_alone_fails_keeps_its_backoff() -> anyhow::Result<()> {
    let fake = configmaps_and_secrets();
    let factory = Factory::new(fake.client());
    let quick = Config::default().watch_list(WatchList::Off);
    let config_maps = factory.informer_with(Api::<ConfigMap>::all(fake.client()), quick)?;
    config_maps.start()?;
    tokio::time::timeout(WAIT, config_maps.wait_for_sync()).await??;
    // Only the Secrets fail (one resource answering 503): no outage others saw.
    let secrets = secrets_failing_their_first_list(&fake, &factory)?;
    // The ConfigMaps reach the server again and again meanwhile: each relists.
    for _ in 0..3 {
        fake.expire_watches();
        let listed = config_maps.stats().list_requests();
        wait_for(WAIT, "the ConfigMaps listed again", || {
            let again = config_maps.stats().list_requests() > listed;
            async move { again.then_some(()) }
        })
        .await?;
    }
    // Virtual time: the clock moves only when every task waits, so nothing woken is skipped.
    tokio::time::sleep(LONG_BACKOFF / 2).await;
    assert_eq!(secrets.stats().list_requests(), 1, "no early retry");
    tokio::time::timeout(LONG_BACKOFF * 2, secrets.wait_for_sync())
        .await
        .map_err(|_| anyhow::anyhow!("the Secrets never retried"))??;
    Ok(())
}

/// Seeded outages: after the last, every informer of a factory is current within moments of the
/// server's return, not when its own backoff ends.
mod simulated {
    use std::sync::Arc;
    use std::time::Duration;

    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use kube::Api;
    use kube::api::ObjectMeta;

    use crate::cache::ObjectKey;
    use crate::informer::Factory;
    use crate::testing::sim::{Faults, Simulation, World};

    /// How long after the faults stop the first cache must hold what changed since: an
    /// informer's longest backoff, jitter included (30 s, plus up to as much again).
    const CAUGHT_UP_WITHIN: Duration = Duration::from_secs(61);
    /// How long after the first the other cache must: moments (issue 58's 2 s after the server
    /// is back; an informer's first backoff step, 0.8 s jittered, fits), not its own backoff.
    const TOGETHER_WITHIN: Duration = Duration::from_secs(2);

    fn secret(name: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("demo".into()),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        }
    }

    /// When `cached` first said yes, checked every 10 ms, or `None` after [`CAUGHT_UP_WITHIN`].
    async fn cached_at(cached: impl Fn() -> bool) -> Option<tokio::time::Instant> {
        let deadline = tokio::time::Instant::now() + CAUGHT_UP_WITHIN;
        while !cached() {
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Some(tokio::time::Instant::now())
    }

    async fn outages_then_a_change(world: World) {
        let fake = world.fake();
        fake.register::<ConfigMap>();
        fake.register::<Secret>();
        let factory = Arc::new(Factory::new(world.client("operator")));
        let maps = factory.informer(Api::<ConfigMap>::all(world.client("operator")));
        let secrets = factory.informer(Api::<Secret>::all(world.client("operator")));
        factory.start().expect("the factory starts once");
        let admin = world.client("admin");
        // Writes through the outages (some refused), for the informers to catch up with.
        for n in 0..40 {
            tokio::time::sleep(Duration::from_secs(world.random(1..5))).await;
            let name = format!("during-{n}");
            let maps: Api<ConfigMap> = Api::namespaced(admin.clone(), "demo");
            let _ = maps
                .create(
                    &kube::api::PostParams::default(),
                    &super::config_map("demo", &name),
                )
                .await;
        }
        world.stop_faults();
        fake.seed(&super::config_map("demo", "after"))
            .expect("a ConfigMap seeds");
        fake.seed(&secret("after")).expect("a Secret seeds");
        let key = ObjectKey::new(Some("demo"), "after");
        let (maps, secrets) = (maps.store(), secrets.store());
        let (map_at, secret_at) = tokio::join!(
            cached_at(|| maps.get(&key).is_some()),
            cached_at(|| secrets.get(&key).is_some()),
        );
        match (map_at, secret_at) {
            (Some(a), Some(b)) if a.max(b) - a.min(b) > TOGETHER_WITHIN => {
                world.violation(format!(
                    "one cache caught up {:?} after the other",
                    a.max(b) - a.min(b)
                ));
            }
            (Some(_), Some(_)) => world.note("both caches caught up together"),
            _ => world.violation(format!(
                "a cache not current {CAUGHT_UP_WITHIN:?} after the outages"
            )),
        }
        factory.shutdown().await;
    }

    #[test]
    fn after_seeded_outages_every_informer_is_current_within_moments() {
        let faults = Faults::none().outages(0.05, Duration::from_secs(40));
        let runs = Simulation::new()
            .faults(faults)
            .seeds(0..20)
            .check(outages_then_a_change);
        let outages = runs
            .iter()
            .map(|run| run.log().matches("outage begins").count())
            .sum::<usize>();
        assert!(outages >= 20, "the seeds made outages: {outages}");
    }

    /// The reflector's backoff jitter follows the seed without the body asking, so a seed's
    /// run, outages and retries included, is the same run every time.
    #[test]
    fn a_seed_with_outages_replays_byte_for_byte() {
        let faults = Faults::none().outages(0.05, Duration::from_secs(40));
        let simulation = Simulation::new().faults(faults).seeds(0..5);
        let logs = || -> Vec<String> {
            let runs = simulation.check(outages_then_a_change);
            runs.iter().map(|run| run.log().to_owned()).collect()
        };
        let (first, again) = (logs(), logs());
        for (seed, (a, b)) in first.iter().zip(&again).enumerate() {
            assert!(a == b, "seed {seed} ran differently the second time");
        }
    }
}
