//! Triggers under simulation: every trigger of a key reaches exactly one reconcile, however
//! many changes the queue merges into it, and the last change of each source is among them.
//!
//! The workload updates four sources at seeded moments while the seed's faults run; the
//! reconciler takes a seeded while (so changes pile up behind a running reconcile and merge in
//! the queue) and now and then asks to run again after a delay. Once faults stop and the
//! triggers settle, the oracles: for every key, the triggers its reconciles were handed (with
//! those counted beyond the bound) are exactly as many as its intake noted, and the stored
//! state of each source reached a reconcile as a watch event with its resourceVersion. Across
//! the seeds, some reconcile must have been handed several triggers at once, or the test would
//! not show what it claims.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::simulation::until_written;
use crate::cache::ObjectKey;
use crate::controller::{Action, Cluster, Context, Controller, Reason, Reconciler};
use crate::informer::Factory;
use crate::testing::sim::{Simulation, World};

const SOURCES: u64 = 4;

/// What the reconciles of one key were handed.
#[derive(Default)]
struct Handed {
    /// Triggers in all, with those counted beyond the bound.
    triggers: u64,
    /// The resourceVersions of the watch events among them.
    versions: Vec<String>,
    /// The most triggers one reconcile was handed.
    most: usize,
}

/// Notes the triggers it is handed, then takes a seeded while.
struct Noting {
    world: World,
    handed: Arc<Mutex<HashMap<String, Handed>>>,
}

impl Reconciler<ConfigMap> for Noting {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> kube::Result<Action> {
        let triggers = ctx.triggers();
        {
            let mut handed = self.handed.lock();
            let of_key = handed.entry(cm.name_any()).or_default();
            of_key.triggers += triggers.len() as u64 + u64::from(crate::controller::why::dropped());
            of_key.most = of_key.most.max(triggers.len());
            of_key.versions.extend(
                (triggers.iter())
                    .filter(|t| t.reason() == Reason::Event)
                    .filter_map(crate::controller::Trigger::resource_version),
            );
        }
        tokio::time::sleep(Duration::from_millis(self.world.random(0..800))).await;
        if self.world.chance(0.2) {
            let delay = Duration::from_millis(self.world.random(0..2000));
            return Ok(Action::requeue(delay));
        }
        Ok(Action::await_change())
    }
}

/// One run; returns the most triggers one reconcile was handed.
async fn triggering(world: World) -> usize {
    crate::testing::seed_randomness(world.seed());
    world.fake().register::<ConfigMap>();
    let handed = Arc::new(Mutex::new(HashMap::<String, Handed>::new()));
    let controller = Controller::new(Noting {
        world: world.clone(),
        handed: Arc::clone(&handed),
    });
    let factory = Arc::new(Factory::new(world.client("operator")));
    let bound = (controller.bind(&Cluster::new(Arc::clone(&factory)))).expect("a valid controller");
    let pending = Arc::clone(bound.wiring.intake.pending());
    let shutdown = CancellationToken::new();
    let token = shutdown.clone();
    let running = tokio::spawn(async move { bound.run(token.cancelled_owned()).await });

    let api: Api<ConfigMap> = Api::namespaced(world.client("workload"), "ns");
    for n in 0..SOURCES {
        let source = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("source-{n}")),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let post = PostParams::default();
        until_written(|| api.create(&post, &source)).await;
    }
    for step in 0..24 {
        tokio::time::sleep(Duration::from_millis(world.random(0..600))).await;
        let name = format!("source-{}", world.random(0..SOURCES));
        let patch = json!({ "data": { "step": step.to_string() } });
        let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
        until_written(|| api.patch(&name, &params, &patch)).await;
    }
    world.stop_faults();

    let stored = |name: &str| {
        (world.fake().get::<ConfigMap>("ns", name).ok().flatten())
            .and_then(|cm| cm.resource_version())
            .unwrap_or_default()
    };
    let settled = world
        .settle(Duration::from_secs(300), || {
            for n in 0..SOURCES {
                let name = format!("source-{n}");
                let version = stored(&name);
                let handed = handed.lock();
                if !handed
                    .get(&name)
                    .is_some_and(|h| h.versions.contains(&version))
                {
                    return Err(format!("{name} at {version} reached no reconcile yet"));
                }
            }
            match pending.len() {
                0 => Ok(()),
                n => Err(format!("{n} keys still have triggers waiting")),
            }
        })
        .await;
    let mut most = 0;
    if settled {
        // A reconcile in flight has taken its triggers before it noted them: let it finish.
        tokio::time::sleep(Duration::from_secs(5)).await;
        for (name, of_key) in handed.lock().iter() {
            most = most.max(of_key.most);
            let given = pending.pushed(&ObjectKey::new(Some("ns"), name));
            if given != of_key.triggers {
                world.violation(format!(
                    "{name} was given {given} triggers, its reconciles were handed {}",
                    of_key.triggers
                ));
            }
        }
    }
    shutdown.cancel();
    let stopped = tokio::time::timeout(Duration::from_secs(60), running).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the controller stops cleanly within 60 s: {stopped:?}"
    );
    factory.shutdown().await;
    most
}

#[test]
fn every_trigger_of_a_key_reaches_exactly_one_reconcile_on_every_seed() {
    let most = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&most);
    let runs = Simulation::new().seeds(0..20).check(move |world| {
        let seen = Arc::clone(&seen);
        async move {
            let handed = triggering(world).await;
            let mut most = seen.lock();
            *most = (*most).max(handed);
        }
    });
    assert_eq!(runs.len(), 20);
    assert!(
        *most.lock() >= 3,
        "some reconcile was handed several coalesced triggers (at most {})",
        most.lock()
    );
}
