//! The controller's condition starts `Unknown` on a custom resource that lacks it, once, and
//! the write does not reconcile the object again; an opt-out leaves the status alone.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::{fake_for, start};
use crate::controller::{Action, Context, Controller, Reconciler};
use crate::testing::{FakeApiServer, wait_for};
use kube::api::{Patch, PatchParams};
use kube::{Api, CustomResource, ResourceExt};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A gauge whose reconcile writes nothing.
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "test.kubeward.dev",
    version = "v1",
    kind = "Gauge",
    namespaced,
    status = "GaugeStatus"
)]
struct GaugeSpec {
    size: u32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
struct GaugeStatus {
    #[serde(default)]
    conditions: Vec<serde_json::Value>,
}

/// Counts reconciles per gauge and writes nothing.
#[derive(Clone, Default)]
struct Quiet {
    attempts: Arc<Mutex<HashMap<String, usize>>>,
}

impl Quiet {
    fn attempts(&self, name: &str) -> usize {
        self.attempts.lock().get(name).copied().unwrap_or(0)
    }

    async fn reconciled(&self, name: &str, times: usize) {
        let what = format!("{name} reconciled {times} times");
        wait_for(Duration::from_secs(10), &what, || async {
            (self.attempts(name) >= times).then_some(())
        })
        .await
        .expect("the gauge is reconciled");
    }
}

impl Reconciler<Gauge> for Quiet {
    type Error = kube::Error;

    async fn reconcile(&self, g: Arc<Gauge>, _: &Context<Gauge>) -> Result<Action, kube::Error> {
        *self.attempts.lock().entry(g.name_any()).or_default() += 1;
        Ok(Action::await_change())
    }
}

fn gauge(name: &str) -> Gauge {
    let mut g = Gauge::new(name, GaugeSpec { size: 1 });
    g.metadata.namespace = Some("default".into());
    g
}

fn condition(fake: &FakeApiServer, name: &str, type_: &str) -> Option<serde_json::Value> {
    let g: Gauge = fake.get("default", name).ok()??;
    g.status?
        .conditions
        .into_iter()
        .find(|c| c["type"] == type_)
}

/// Changes `name`'s spec, which reconciles it again once its last reconcile (and what the
/// framework wrote after it) is done: a key is reconciled by one worker at a time.
async fn touch(fake: &FakeApiServer, name: &str, size: u32) {
    let api: Api<Gauge> = Api::namespaced(fake.client(), "default");
    let patch = json!({ "spec": { "size": size } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the spec patch");
}

#[tokio::test]
async fn a_reconcile_that_writes_nothing_leaves_the_condition_unknown_once() {
    let fake = fake_for::<Gauge>();
    let quiet = Quiet::default();
    fake.seed(&gauge("new")).expect("seed");
    let controller = Controller::new(quiet.clone()).condition("Available");
    let running = start(&fake, controller);
    let unknown = wait_for(Duration::from_secs(10), "Available=Unknown", || async {
        condition(&fake, "new", "Available").filter(|c| c["status"] == "Unknown")
    })
    .await
    .expect("the first state reaches the status");
    assert_eq!(unknown["reason"], "Reconciling");
    assert_eq!(unknown["observedGeneration"], 1);
    assert_eq!(
        condition(&fake, "new", "Ready"),
        None,
        "only the controller's"
    );

    // The next reconcile comes from the spec change, not from the status write; the condition
    // is there, so nothing more is written.
    touch(&fake, "new", 2).await;
    quiet.reconciled("new", 2).await;
    touch(&fake, "new", 3).await;
    quiet.reconciled("new", 3).await;
    assert_eq!(
        quiet.attempts("new"),
        3,
        "the status write reconciled nothing"
    );
    let again = condition(&fake, "new", "Available").expect("still there");
    assert_eq!(
        again["observedGeneration"], 1,
        "set once, never rewritten: {again}"
    );
    running.stop().await;
}

#[tokio::test]
async fn with_the_first_state_off_the_status_is_left_alone() {
    let fake = fake_for::<Gauge>();
    let quiet = Quiet::default();
    fake.seed(&gauge("plain")).expect("seed");
    let running = start(
        &fake,
        Controller::new(quiet.clone()).initial_condition(false),
    );
    quiet.reconciled("plain", 1).await;
    touch(&fake, "plain", 2).await;
    quiet.reconciled("plain", 2).await;
    let g: Option<Gauge> = fake.get("default", "plain").expect("get");
    let status = g.and_then(|g| g.status);
    assert!(
        status.is_none_or(|s| s.conditions.is_empty()),
        "no condition written"
    );
    running.stop().await;
}
