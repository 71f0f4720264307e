//! A controller's failures: retried or not, counted or not, reported.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use super::{Running, fake_for, start};
use crate::controller::{self, Action, Cleanup, Context, Controller, ErrorAction, Reconciler};
use crate::queue::rate_limiter::ExponentialBackoff;
use crate::testing::fake::Verb;
use crate::testing::{FakeApiServer, events_about, wait_for};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, CustomResource, ResourceExt};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What a widget's reconcile does, by `spec.mode`.
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "test.kubeward.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
struct WidgetSpec {
    /// `invalid`: create a ConfigMap with an invalid name (422); `conflict`: a write from a
    /// stale read on the first attempt (409); anything else: succeed.
    mode: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
struct WidgetStatus {
    #[serde(default)]
    conditions: Vec<serde_json::Value>,
}

/// Counts attempts per widget.
#[derive(Clone, Default)]
struct Widgets {
    attempts: Arc<Mutex<HashMap<String, usize>>>,
    cleanups: Arc<Mutex<HashMap<String, usize>>>,
}

impl Widgets {
    fn attempts(&self, name: &str) -> usize {
        self.attempts.lock().get(name).copied().unwrap_or(0)
    }
}

impl Reconciler<Widget> for Widgets {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        w: Arc<Widget>,
        ctx: &Context<Widget>,
    ) -> Result<Action, kube::Error> {
        let name = w.name_any();
        let attempt = {
            let mut attempts = self.attempts.lock();
            let n = attempts.entry(name.clone()).or_default();
            *n += 1;
            *n
        };
        let namespace = w.namespace().unwrap_or_default();
        match w.spec.mode.as_str() {
            "invalid" => {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(format!("{name}_NOT_A_DNS_NAME")),
                        ..ObjectMeta::default()
                    },
                    ..ConfigMap::default()
                };
                let api: Api<ConfigMap> = Api::namespaced(ctx.client(), &namespace);
                api.create(&PostParams::default(), &cm).await?;
            }
            "conflict" if attempt == 1 => {
                let mut stale = (*w).clone();
                stale.metadata.resource_version = Some("0".into());
                stale.metadata.labels = Some(BTreeMap::from([("seen".into(), "yes".into())]));
                let api: Api<Widget> = Api::namespaced(ctx.client(), &namespace);
                api.replace(&name, &PostParams::default(), &stale).await?;
            }
            _ => {}
        }
        Ok(Action::await_change())
    }
}

impl Cleanup<Widget> for Widgets {
    /// Fails the first time.
    async fn cleanup(&self, w: Arc<Widget>, _: &Context<Widget>) -> Result<(), kube::Error> {
        let mut cleanups = self.cleanups.lock();
        let n = cleanups.entry(w.name_any()).or_default();
        *n += 1;
        if *n == 1 {
            let status = kube::core::Status::failure("the backend is busy", "InternalError");
            return Err(kube::Error::Api(status.with_code(500).boxed()));
        }
        Ok(())
    }
}

/// The same reconciles, with a policy that retries what the default gives up on.
#[derive(Clone, Default)]
struct Stubborn(Widgets);

impl Reconciler<Widget> for Stubborn {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        w: Arc<Widget>,
        ctx: &Context<Widget>,
    ) -> Result<Action, kube::Error> {
        self.0.reconcile(w, ctx).await
    }

    fn error_policy(
        &self,
        _: &Widget,
        error: &controller::Error<kube::Error>,
        _: &Context<Widget>,
    ) -> ErrorAction {
        match error {
            controller::Error::Reconcile(_) if error.status_code() == Some(422) => {
                ErrorAction::RetryAfter(Duration::from_millis(10))
            }
            _ => error.default_action(),
        }
    }
}

fn widget(name: &str, mode: &str) -> Widget {
    let mut w = Widget::new(name, WidgetSpec { mode: mode.into() });
    w.metadata.namespace = Some("default".into());
    w
}

/// Runs `controller` on `fake`; zero backoff, so that a retry, if one came, would be queued
/// before any key added later (the queue is first in, first out).
fn run(fake: &FakeApiServer, controller: Controller<Widget>) -> Running<Widget> {
    start(
        fake,
        controller.rate_limiter(ExponentialBackoff::new(Duration::ZERO, Duration::ZERO)),
    )
}

fn counter(running: &Running<Widget>, family: &str, result: Option<&str>) -> f64 {
    running.sample(family, result.map(|r| ("result", r)))
}

fn ready(fake: &FakeApiServer, name: &str) -> Option<serde_json::Value> {
    let w: Widget = fake.get("default", name).ok()??;
    w.status?
        .conditions
        .into_iter()
        .find(|c| c["type"] == "Ready")
}

/// Creates `name` (mode ok) and waits until it was reconciled: every key queued before it,
/// including any retry of another widget, has been handed out by then.
async fn queue_moved_past(fake: &FakeApiServer, widgets: &Widgets, name: &str) {
    let api: Api<Widget> = Api::namespaced(fake.client(), "default");
    api.create(&PostParams::default(), &widget(name, "ok"))
        .await
        .expect("create");
    wait_for(
        Duration::from_secs(10),
        &format!("{name} to be reconciled"),
        || async { (widgets.attempts(name) == 1).then_some(()) },
    )
    .await
    .expect("the marker widget is reconciled");
}

#[tokio::test]
async fn a_terminal_error_is_reconciled_once_reported_and_again_only_when_the_object_changes() {
    let fake = fake_for::<Widget>();
    let widgets = Widgets::default();
    let bad = fake.seed(&widget("bad", "invalid")).expect("seed");
    let running = run(&fake, Controller::new(widgets.clone()));

    let condition = wait_for(Duration::from_secs(10), "bad to be Ready=False", || async {
        ready(&fake, "bad").filter(|c| c["status"] == "False")
    })
    .await
    .expect("the failure reaches the status");
    assert_eq!(condition["reason"], "Invalid", "{condition}");
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("reconcile failed: "), "{message}");
    assert!(message.contains("bad_NOT_A_DNS_NAME"), "{message}");
    assert_eq!(condition["observedGeneration"], 1);

    queue_moved_past(&fake, &widgets, "marker-1").await;
    assert_eq!(
        widgets.attempts("bad"),
        1,
        "neither a retry nor the status write reconciled it"
    );
    assert!(
        (counter(
            &running,
            "controller_runtime_terminal_reconcile_errors_total",
            None
        ) - 1.0)
            .abs()
            < f64::EPSILON
    );

    let events = wait_for(
        Duration::from_secs(10),
        "a ReconcileError Event about bad",
        || async {
            let events = events_about(fake.client(), &bad).await.ok()?;
            events
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("ReconcileError"))
        },
    )
    .await
    .expect("the failure is recorded as an Event");
    assert_eq!(events.type_.as_deref(), Some("Warning"));
    assert!(
        events
            .note
            .unwrap_or_default()
            .contains("bad_NOT_A_DNS_NAME")
    );

    let api: Api<Widget> = Api::namespaced(fake.client(), "default");
    let change = json!({ "metadata": { "labels": { "touched": "yes" } } });
    api.patch("bad", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .expect("patch");
    wait_for(
        Duration::from_secs(10),
        "bad to be reconciled after its change",
        || async { (widgets.attempts("bad") == 2).then_some(()) },
    )
    .await
    .expect("a change brings a terminally failed object back");
    queue_moved_past(&fake, &widgets, "marker-2").await;
    assert_eq!(
        widgets.attempts("bad"),
        2,
        "reconciled once more, not retried"
    );
    running.stop().await;
}

#[tokio::test]
async fn a_conflict_is_retried_at_once_and_is_neither_an_error_nor_reported() {
    let fake = fake_for::<Widget>();
    let widgets = Widgets::default();
    let racy = fake.seed(&widget("racy", "conflict")).expect("seed");
    let running = run(&fake, Controller::new(widgets.clone()));

    wait_for(
        Duration::from_secs(10),
        "racy to be attempted again",
        || async { (widgets.attempts("racy") >= 2).then_some(()) },
    )
    .await
    .expect("a conflict is retried");
    let errors = counter(&running, "controller_runtime_reconcile_errors_total", None);
    assert!(
        errors.abs() < f64::EPSILON,
        "a conflict is no error: {errors}"
    );
    let requeues = counter(
        &running,
        "controller_runtime_reconcile_total",
        Some("requeue"),
    );
    assert!(
        (requeues - 1.0).abs() < f64::EPSILON,
        "counted as a requeue: {requeues}"
    );
    queue_moved_past(&fake, &widgets, "marker").await;
    let racy_ready = ready(&fake, "racy");
    assert!(
        racy_ready.as_ref().is_none_or(|c| c["status"] != "False"),
        "no False condition for a conflict (the retry that succeeds may set it Unknown): {racy_ready:?}"
    );
    let reported = events_about(fake.client(), &racy)
        .await
        .expect("list Events");
    assert!(reported.is_empty(), "no Event for a conflict: {reported:?}");
    running.stop().await;
}

#[tokio::test]
async fn the_users_error_policy_overrides_the_default_one() {
    let fake = fake_for::<Widget>();
    let stubborn = Stubborn::default();
    fake.seed(&widget("bad", "invalid")).expect("seed");
    let running = run(&fake, Controller::new(stubborn.clone()));
    wait_for(
        Duration::from_secs(10),
        "bad to be retried twice",
        || async { (stubborn.0.attempts("bad") >= 3).then_some(()) },
    )
    .await
    .expect("the user's policy retries a 422");
    let terminal = counter(
        &running,
        "controller_runtime_terminal_reconcile_errors_total",
        None,
    );
    assert!(
        terminal.abs() < f64::EPSILON,
        "nothing terminal: {terminal}"
    );
    running.stop().await;
}

#[tokio::test]
async fn the_status_is_left_alone_when_reporting_on_it_is_off() {
    let fake = fake_for::<Widget>();
    let widgets = Widgets::default();
    let bad = fake.seed(&widget("bad", "invalid")).expect("seed");
    let controller = Controller::new(widgets.clone()).report_errors_on_status(false);
    let running = run(&fake, controller);
    wait_for(
        Duration::from_secs(10),
        "a ReconcileError Event about bad",
        || async {
            let events = events_about(fake.client(), &bad).await.ok()?;
            events
                .iter()
                .any(|e| e.reason.as_deref() == Some("ReconcileError"))
                .then_some(())
        },
    )
    .await
    .expect("the Event is still recorded");
    queue_moved_past(&fake, &widgets, "marker").await;
    assert_eq!(ready(&fake, "bad"), None);
    running.stop().await;
}

#[tokio::test]
async fn reporting_that_fails_during_cleanup_does_not_keep_the_object_from_going_away() {
    const FINALIZER: &str = "test.kubeward.dev/cleanup";
    let fake = fake_for::<Widget>();
    let widgets = Widgets::default();
    fake.seed(&widget("doomed", "ok")).expect("seed");
    let running = run(
        &fake,
        Controller::with_finalizer(widgets.clone(), FINALIZER),
    );
    wait_for(
        Duration::from_secs(10),
        "doomed to carry the finalizer",
        || async {
            let w: Widget = fake.get("default", "doomed").ok()??;
            w.finalizers().iter().any(|f| f == FINALIZER).then_some(())
        },
    )
    .await
    .expect("the finalizer is added");
    // The report of the first (failing) cleanup can write neither its Event nor the status.
    fake.fail_next(
        Verb::Create,
        "events",
        http::StatusCode::INTERNAL_SERVER_ERROR,
    );
    fake.fail_next(
        Verb::Patch,
        "widgets",
        http::StatusCode::INTERNAL_SERVER_ERROR,
    );
    let api: Api<Widget> = Api::namespaced(fake.client(), "default");
    api.delete("doomed", &kube::api::DeleteParams::default())
        .await
        .expect("delete");
    wait_for(Duration::from_secs(10), "doomed to be gone", || async {
        let w: Option<Widget> = fake.get("default", "doomed").ok()?;
        w.is_none().then_some(())
    })
    .await
    .expect("the finalizer is removed once cleanup succeeds");
    assert_eq!(
        widgets.cleanups.lock().get("doomed").copied(),
        Some(2),
        "failed once, then succeeded"
    );
    running.stop().await;
}

#[test]
fn a_custom_resource_gets_conditions() {
    let reporting = crate::controller::failure::Reporting::default();
    assert!(reporting.keeps_condition(&crate::controller::Kind::of::<Widget>()));
}
