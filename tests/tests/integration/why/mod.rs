//! The flight recorder on the real control plane: after spec edits, a drift of an owned object
//! and a failed apply, `/debug/reconciles` and the `why` subcommand show exactly those
//! reconciles, in order, with their triggers and writes.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::manager::Manager;
use kubeward::serving::{BindAddress, Endpoints};
use kubeward::testing::{ControlPlane, free_addr, wait_for};
use serde_json::{Value, json};

use crate::fixtures::watching;

/// The annotation naming the key the copy holds the source's `value` under.
const KEY: &str = "why.kubeward.dev/key";

/// Applies the Secret `NAME-copy`, owned by the source ConfigMap, holding the source's `value`
/// under the key its annotation names.
struct Copier;

impl Reconciler<ConfigMap> for Copier {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        source: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> Result<Action, kubeward::Error> {
        if source.labels().get("role").map(String::as_str) != Some("source") {
            return Ok(Action::await_change());
        }
        // ANCHOR: triggers
        // Every change, resync or requeue merged into this reconcile, oldest first.
        for trigger in ctx.triggers() {
            tracing::info!(%trigger, reason = ?trigger.reason(), "reconciling because");
        }
        // ANCHOR_END: triggers
        let key = source
            .annotations()
            .get(KEY)
            .cloned()
            .unwrap_or("value".into());
        let value = (source.data.as_ref())
            .and_then(|d| d.get("value").cloned())
            .unwrap_or_default();
        let copy = Secret {
            metadata: ObjectMeta {
                name: Some(format!("{}-copy", source.name_any())),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(key, ByteString(value.into_bytes()))])),
            ..Secret::default()
        };
        ctx.apply(source.as_ref(), copy).await?;
        Ok(Action::await_change())
    }
}

/// The recorded reconciles of `ns/name` once there are `n`: `None` until then.
async fn recorded(addr: SocketAddr, ns: &str, name: &str, n: usize) -> Option<Vec<Value>> {
    let path = format!("/debug/reconciles/{ns}/{name}?kind=ConfigMap");
    let response = kubeward::testing::get(addr, &path).await.ok()?;
    let body: Value = serde_json::from_str(response.body()).ok()?;
    let reconciles = body["controllers"][0]["reconciles"].as_array()?.clone();
    (reconciles.len() >= n).then_some(reconciles)
}

async fn patch_source(api: &Api<ConfigMap>, patch: Value) -> anyhow::Result<ConfigMap> {
    Ok(api
        .patch("source", &PatchParams::default(), &Patch::Merge(&patch))
        .await?)
}

/// The operator, running with its metrics and probes on a free address, once it is ready.
struct Operator {
    addr: SocketAddr,
    shutdown: tokio_util::sync::CancellationToken,
    running: tokio::task::JoinHandle<kubeward::manager::Result<()>>,
}

impl Operator {
    async fn start(cp: &ControlPlane, ns: &str) -> anyhow::Result<Self> {
        let addr = free_addr()?;
        let manager = Manager::new(cp.client(), watching(ns.to_owned()))?;
        let endpoints = Endpoints::new().metrics(BindAddress::On(addr));
        manager.add(endpoints.health_probes(BindAddress::On(addr)))?;
        manager.add(
            // ANCHOR: recorder
            Controller::new(Copier)
                .owns::<Secret>()
                // The last 8 reconciles of each object (the default; 0 turns the recorder off).
                .recorded_reconciles(8)
                // ANCHOR_END: recorder
                .report_errors_as_events(false)
                .report_errors_on_status(false),
        )?;
        let shutdown = manager.shutdown_token();
        let running = tokio::spawn(manager.run());
        // Ready: the controller's cache has synced, so a create arrives as a watch event.
        wait_for(
            Duration::from_secs(60),
            "the operator to be ready",
            || async {
                let ready = kubeward::testing::get(addr, "/readyz").await.ok()?;
                (ready.status() == 200).then_some(())
            },
        )
        .await?;
        Ok(Self {
            addr,
            shutdown,
            running,
        })
    }

    /// Waits until `n` reconciles of `ns/source` are recorded; returns them.
    async fn recorded(&self, ns: &str, n: usize, what: &str) -> anyhow::Result<Vec<Value>> {
        let addr = self.addr;
        Ok(wait_for(Duration::from_secs(60), what, || {
            recorded(addr, ns, "source", n)
        })
        .await?)
    }

    async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        self.running.await??;
        Ok(())
    }
}

/// The resourceVersions the sequence left: of the create, the edit, the drift, the annotation.
struct Versions([String; 4]);

/// Creates the source, edits it, drifts its copy and annotates it so that the apply fails,
/// each once the reconcile of the step before is recorded.
async fn edit_drift_and_fail(
    cp: &ControlPlane,
    ns: &str,
    operator: &Operator,
) -> anyhow::Result<Versions> {
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), ns);
    let source = ConfigMap {
        metadata: ObjectMeta {
            name: Some("source".into()),
            labels: Some(BTreeMap::from([("role".into(), "source".into())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("value".into(), "1".into())])),
        ..ConfigMap::default()
    };
    let created = api.create(&PostParams::default(), &source).await?;
    operator
        .recorded(ns, 1, "the create's reconcile to be recorded")
        .await?;
    let edited = patch_source(&api, json!({ "data": { "value": "2" } })).await?;
    operator
        .recorded(ns, 2, "the spec edit's reconcile to be recorded")
        .await?;
    let drifted = Api::<Secret>::namespaced(cp.client(), ns)
        .patch(
            "source-copy",
            &PatchParams::default(),
            &Patch::Merge(&json!({ "stringData": { "value": "drifted" } })),
        )
        .await?;
    operator
        .recorded(ns, 3, "the drift's reconcile to be recorded")
        .await?;
    let annotation = json!({ "metadata": { "annotations": { KEY: "not a key!" } } });
    let annotated = patch_source(&api, annotation).await?;
    let version = |o: &ConfigMap| o.resource_version().unwrap_or_default();
    Ok(Versions([
        version(&created),
        version(&edited),
        drifted.resource_version().unwrap_or_default(),
        version(&annotated),
    ]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recorder_shows_spec_edits_a_drift_and_a_failed_apply_in_order() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("why").await?;
    let operator = Operator::start(cp, &ns).await?;
    let addr = operator.addr;

    // A `why` for an object the operator never saw says so in one line.
    let never = why(addr, &format!("ConfigMap/{ns}/nobody")).await?;
    assert_eq!(never.lines().count(), 1, "{never}");
    assert!(
        never.starts_with(&format!("no reconcile of ConfigMap {ns}/nobody")),
        "{never}"
    );

    // 1: created; 2: a spec edit; 3: a drift of the copy; 4: an edit whose apply fails.
    let Versions([created, edited, drifted, annotated]) =
        edit_drift_and_fail(cp, &ns, &operator).await?;
    let reconciles = operator
        .recorded(&ns, 4, "the failed apply's reconcile to be recorded")
        .await?;
    // Nothing more comes: the refused apply is not retried (422 cannot succeed) and the
    // controller's own writes trigger nothing. (A window to see that nothing happens, not a
    // wait for something to happen.)
    tokio::time::sleep(Duration::from_secs(2)).await;
    let reconciles_now = recorded(addr, &ns, "source", 4).await.unwrap_or_default();
    assert_eq!(
        reconciles_now.len(),
        4,
        "exactly four reconciles: {reconciles_now:#?}"
    );

    assert_recorded(&reconciles, &ns, [created, edited, drifted, annotated]);

    // The same through the `why` subcommand, as a timeline.
    let timeline = why(addr, &format!("ConfigMap/{ns}/source")).await?;
    assert_timeline(&timeline);
    operator.stop().await
}

/// The four reconciles, with their triggers (at `versions`), results and writes.
fn assert_recorded(reconciles: &[Value], ns: &str, versions: [String; 4]) {
    let [created, edited, drifted, annotated] = versions;
    let triggers: Vec<Value> = reconciles.iter().map(|r| r["triggers"].clone()).collect();
    assert_eq!(
        triggers,
        [
            json!([{ "reason": "event", "event": "added", "resourceVersion": created }]),
            json!([{ "reason": "event", "event": "modified", "resourceVersion": edited }]),
            json!([{ "reason": "owned", "event": "modified", "kind": "Secret", "namespace": ns,
                     "name": "source-copy", "resourceVersion": drifted }]),
            json!([{ "reason": "event", "event": "modified", "resourceVersion": annotated }]),
        ],
        "{reconciles:#?}"
    );
    let outcomes: Vec<&str> = reconciles
        .iter()
        .map(|r| r["result"]["outcome"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(outcomes, ["ok", "ok", "ok", "error"], "{reconciles:#?}");
    let message = reconciles[3]["result"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("not a key!") && message.contains("Invalid"),
        "the API's message: {message}"
    );
    let writes: Vec<Value> = reconciles
        .iter()
        .map(|r| {
            let w = &r["writes"];
            json!([
                w[0]["verb"],
                w[0]["kind"],
                w[0]["name"],
                w[0]["code"],
                w.as_array().map(Vec::len)
            ])
        })
        .collect();
    assert_eq!(
        writes,
        [
            json!(["apply", "Secret", "source-copy", 201, 1]),
            json!(["apply", "Secret", "source-copy", 200, 1]),
            json!(["apply", "Secret", "source-copy", 200, 1]),
            json!(["apply", "secrets", "source-copy", 422, 1]),
        ],
        "{reconciles:#?}"
    );
    // Only the newest record keeps its diff: the failed apply's change of key.
    assert_eq!(
        reconciles[3]["writes"][0]["diff"],
        // "2", base64-encoded as a Secret's data is.
        json!(json!({ "data": { "not a key!": "Mg==" } }).to_string()),
        "{reconciles:#?}"
    );
    assert!(
        reconciles[..3]
            .iter()
            .all(|r| r["writes"][0].get("diff").is_none())
    );
}

/// The timeline `why` prints for the four reconciles.
fn assert_timeline(timeline: &str) {
    let lines: Vec<&str> = timeline.lines().collect();
    assert_eq!(lines.len(), 1 + 4 * 3, "{timeline}");
    assert!(lines[0].contains("the last 4 reconciles"), "{timeline}");
    assert!(
        lines[1].ends_with(": ok") && lines[12].contains("apply secrets"),
        "{timeline}"
    );
    assert!(
        lines[8].contains("Modified Secret")
            && lines[8].contains("source-copy (owned object changed)"),
        "{timeline}"
    );
    assert!(
        lines[10].contains(": error: ") && lines[10].contains("not a key!"),
        "{timeline}"
    );
}

/// What `why OBJECT --from http://ADDR` prints.
async fn why(addr: SocketAddr, object: &str) -> anyhow::Result<String> {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_why_cli"))
        .args(["why", object, "--from", &format!("http://{addr}")])
        .output()
        .await?;
    anyhow::ensure!(
        output.status.success(),
        "why failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8(output.stdout)?)
}
