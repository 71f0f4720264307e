//! Runs are replayed from their seed, and the faults they draw happen.

use std::collections::BTreeMap;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use tokio::time::Duration;

use super::*;

/// A writer that creates and patches five ConfigMaps at seeded moments, retrying what fails,
/// while kube-runtime's watcher follows them; then faults stop and the body waits until the
/// watcher saw every last write.
async fn workload(world: World) {
    world.fake().register::<ConfigMap>();
    let writer: Api<ConfigMap> = Api::namespaced(world.client("writer"), "ns");
    let follower: Api<ConfigMap> = Api::namespaced(world.client("follower"), "ns");
    let seen = std::sync::Arc::new(parking_lot::Mutex::new(BTreeMap::<String, String>::new()));
    let watch = {
        let seen = std::sync::Arc::clone(&seen);
        tokio::spawn(async move {
            let mut events = watcher(follower, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                if let Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)) = event {
                    let value = cm
                        .data
                        .and_then(|data| data.get("v").cloned())
                        .unwrap_or_default();
                    seen.lock()
                        .insert(cm.metadata.name.unwrap_or_default(), value);
                }
            }
        })
    };
    let mut last = BTreeMap::new();
    for step in 0..20 {
        tokio::time::sleep(Duration::from_millis(world.random(0..2000))).await;
        let name = format!("cm-{}", world.random(0..5));
        let value = step.to_string();
        loop {
            let written = if last.contains_key(&name) {
                let data = json!({ "data": { "v": value } });
                writer
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&data))
                    .await
                    .map(drop)
            } else {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..ObjectMeta::default()
                    },
                    data: Some([("v".to_owned(), value.clone())].into()),
                    ..ConfigMap::default()
                };
                match writer.create(&PostParams::default(), &cm).await {
                    // A create whose answer was lost, retried.
                    Err(kube::Error::Api(status)) if status.reason == "AlreadyExists" => {
                        last.insert(name.clone(), String::new());
                        continue;
                    }
                    other => other.map(drop),
                }
            };
            if written.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        last.insert(name, value);
    }
    world.stop_faults();
    let settled = world
        .settle(Duration::from_secs(120), || {
            let seen = seen.lock();
            if *seen == last {
                Ok(())
            } else {
                Err(format!(
                    "the watcher saw {seen:?}, the writer wrote {last:?}"
                ))
            }
        })
        .await;
    assert!(
        settled,
        "kube-runtime's watcher catches up with every write"
    );
    watch.abort();
}

#[test]
fn the_same_seed_gives_a_byte_identical_log_and_different_seeds_differ() {
    let simulation = Simulation::new().seeds(0..50);
    let first = simulation.check(workload);
    let second = simulation.check(workload);
    for (a, b) in first.iter().zip(&second) {
        assert!(
            a.log() == b.log(),
            "seed {} gave two logs; the first difference is at line {}",
            a.seed(),
            a.log()
                .lines()
                .zip(b.log().lines())
                .position(|(x, y)| x != y)
                .unwrap_or_default()
        );
    }
    let distinct: std::collections::BTreeSet<&str> = first.iter().map(Run::log).collect();
    assert_eq!(distinct.len(), first.len(), "every seed gives its own run");
}

#[test]
fn the_faults_a_seed_draws_happen_and_no_watch_reorders_its_events() {
    let runs = Simulation::new().seeds(0..20).check(workload);
    let log: String = runs.iter().map(Run::log).collect();
    for fault in [
        "409 Conflict injected",
        "429 Too Many Requests injected",
        "500 Internal Server Error injected",
        "lost, 504 instead",
        "connection reset",
        "broken: Dropped",
        "broken: Expired",
    ] {
        assert!(log.contains(fault), "no run logged {fault:?}");
    }
    for run in &runs {
        // Per watch, the resourceVersion of each event it delivers grows.
        let mut last: BTreeMap<&str, u64> = BTreeMap::new();
        for line in run.log().lines() {
            let Some((watch, event)) = line.split_once(" watch#") else {
                continue;
            };
            let id = event.split(' ').next().unwrap_or_default();
            let Some(version) = event
                .rsplit('@')
                .next()
                .and_then(|v| v.trim().parse::<u64>().ok())
            else {
                continue;
            };
            let key = &line[..watch.len() + 7 + id.len()];
            let before = last.insert(key, version).unwrap_or_default();
            assert!(
                version >= before,
                "seed {}: {key} delivered resourceVersion {version} after {before}",
                run.seed()
            );
        }
    }
}

#[test]
fn a_body_that_never_returns_fails_at_the_time_limit_naming_its_seed() {
    let failed = Simulation::new()
        .time_limit(Duration::from_secs(60))
        .run(7, |_| std::future::pending::<()>())
        .expect_err("the run cannot finish");
    assert_eq!(failed.seed(), 7);
    assert_eq!(
        failed.reasons(),
        ["the run did not finish within 60s of virtual time"]
    );
    assert!(failed.rerun().starts_with("KUBEWARD_SIM_SEED=7 cargo test"));
}

#[test]
fn two_reconciles_of_one_key_at_once_are_a_violation() {
    let run = |overlap: bool| {
        Simulation::new().run(1, |world| async move {
            let reconciles = world.reconciles();
            let first = reconciles.enter("ns/a");
            let other = if overlap { "ns/a" } else { "ns/b" };
            let second = reconciles.enter(other);
            drop((first, second));
            let _again = reconciles.enter("ns/a");
        })
    };
    assert!(run(false).is_ok());
    let failed = run(true).expect_err("the overlap is found");
    assert_eq!(
        failed.reasons(),
        ["two reconciles of ns/a at once (1 already running)"]
    );
}

#[test]
fn settle_names_what_never_converged() {
    let failed = Simulation::new()
        .run(3, |world| async move {
            let converged = world
                .settle(Duration::from_secs(5), || Err("a is 1, not 2".to_owned()))
                .await;
            assert!(!converged);
        })
        .expect_err("nothing converges");
    assert_eq!(
        failed.reasons(),
        ["no fixed point 5s after faults stopped: a is 1, not 2"]
    );
}
