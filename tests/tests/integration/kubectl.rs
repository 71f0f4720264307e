//! The real `kubectl` on a kind with `#[derive(Controller)]`: it explains the kind and its status,
//! lists Ready and Reason columns, and finds the kind by its category; and on the example
//! operator, `kubectl wait`, `get` and `describe` show why a failing object is not Ready.

use crate::fixtures::watching;
use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, CustomResource};
use kubeward::Controller;
use kubeward::manager::Manager;
use kubeward::testing::{ControlPlane, NoopReconciler, install_definition, wait_for};
use kubeward_examples::configmap_generator::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, Generator,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::chart::{path_str, run};

/// A lamp that kubectl is asked about.
#[derive(CustomResource, Controller, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubectl.kubeward.dev",
    version = "v1",
    kind = "Lamp",
    namespaced,
    status = "LampStatus",
    category = "kubeward-tests"
)]
#[controller(reconciler = NoopReconciler)]
pub(crate) struct LampSpec {
    /// How bright the lamp shines.
    pub(crate) brightness: u32,
}

/// What the lamp reports.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct LampStatus {
    /// The lamp's conditions; Ready once it shines.
    #[serde(default)]
    pub(crate) conditions: Vec<LampCondition>,
}

/// One condition.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct LampCondition {
    /// `Ready`.
    #[serde(rename = "type")]
    pub(crate) type_: String,
    /// `True`, `False` or `Unknown`.
    pub(crate) status: String,
    /// Why, in `CamelCase`.
    pub(crate) reason: String,
    /// Why, in words.
    pub(crate) message: String,
}

/// Runs `kubectl args` against the control plane, with a fresh cache so that it discovers the
/// CRD and its `OpenAPI` as the apiserver serves them now.
async fn kubectl(cp: &ControlPlane, args: &[&str]) -> anyhow::Result<String> {
    let cache = tempfile::tempdir()?;
    let kubeconfig = path_str(cp.kubeconfig())?;
    let cache_dir = path_str(cache.path())?;
    let mut all = vec!["--kubeconfig", kubeconfig, "--cache-dir", cache_dir];
    all.extend_from_slice(args);
    run("kubectl", &all, None).await
}

/// Waits until `kubectl args` succeeds and prints every one of `expected`: the apiserver
/// publishes a new CRD's `OpenAPI` and discovery a moment after the CRD is established.
async fn kubectl_until(
    cp: &ControlPlane,
    args: &[&str],
    expected: &[&str],
) -> anyhow::Result<String> {
    let printed = parking_lot::Mutex::new(String::new());
    let last = &printed;
    let found = wait_for(
        Duration::from_secs(60),
        &format!("`kubectl {}` to print {expected:?}", args.join(" ")),
        || async move {
            let output = kubectl(cp, args).await.unwrap_or_else(|e| format!("{e:#}"));
            let all = expected.iter().all(|e| output.contains(e));
            last.lock().clone_from(&output);
            all.then_some(output)
        },
    )
    .await;
    found.map_err(|e| anyhow::anyhow!("{e}; it last printed:\n{}", printed.lock()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explains_lists_and_finds_a_derived_kind_by_category() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<Lamp>(cp.client()).await?;

    kubectl_until(
        cp,
        &["explain", "lamp"],
        &["A lamp that kubectl is asked about.", "status"],
    )
    .await?;
    // The 1.20 apiserver leaves a nullable status out of its OpenAPI: this needs it published.
    kubectl_until(
        cp,
        &["explain", "lamp.status.conditions"],
        &["The lamp's conditions; Ready once it shines.", "reason"],
    )
    .await?;

    let ns = cp.create_namespace("kubectl").await?;
    let lamps: Api<Lamp> = Api::namespaced(cp.client(), &ns);
    let lamp = Lamp::new("desk", LampSpec { brightness: 3 });
    lamps.create(&PostParams::default(), &lamp).await?;
    let status = json!({ "status": { "conditions": [{
        "type": "Ready", "status": "True", "reason": "Shining", "message": "bright as asked"
    }]}});
    lamps
        .patch_status("desk", &PatchParams::default(), &Patch::Merge(&status))
        .await?;

    let table = kubectl_until(
        cp,
        &["get", "lamps", "--namespace", &ns],
        &["READY", "REASON", "AGE", "Shining"],
    )
    .await?;
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "READY", "REASON", "AGE"], "{table}");
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        row.get(..3),
        Some(&["desk", "True", "Shining"][..]),
        "{table}"
    );

    let wide = kubectl(cp, &["get", "lamps", "--namespace", &ns, "-o", "wide"]).await?;
    assert!(
        wide.contains("MESSAGE") && wide.contains("bright as asked"),
        "{wide}"
    );

    // Unknown to the server without the category; with one kind in it, kubectl prints its table.
    kubectl_until(
        cp,
        &["get", "kubeward-tests", "--namespace", &ns],
        &["desk", "Shining"],
    )
    .await?;
    Ok(())
}

/// A generator named so that its ConfigMap's name (`<name>-generated`) is longer than the 253
/// characters Kubernetes allows: every apply is refused with 422 Invalid.
fn doomed_name() -> String {
    "doomed-".to_owned() + &"x".repeat(240)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_waits_for_a_good_generator_and_shows_why_a_failing_one_is_not_ready()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("kubectl-wait").await?;
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    manager.add(ConfigMapGenerator::controller(Generator))?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let spec = |content: &str| ConfigMapGeneratorSpec {
        content: content.into(),
    };
    let doomed = doomed_name();
    generators
        .create(
            &PostParams::default(),
            &ConfigMapGenerator::new("good", spec("fine")),
        )
        .await?;
    generators
        .create(
            &PostParams::default(),
            &ConfigMapGenerator::new(&doomed, spec("never")),
        )
        .await?;

    let wait = |condition: &'static str, object: String, timeout: &'static str| {
        let ns = ns.clone();
        async move {
            let args = ["wait", "--namespace", &ns, condition, &object, timeout];
            kubectl(cp, &args).await
        }
    };
    let good = wait("--for=condition=Ready", "cmg/good".into(), "--timeout=60s").await?;
    assert!(good.contains("condition met"), "{good}");
    let failing = format!("cmg/{doomed}");
    let not_ready = wait(
        "--for=condition=Ready=False",
        failing.clone(),
        "--timeout=60s",
    )
    .await;
    let not_ready = match not_ready {
        Ok(printed) => printed,
        Err(e) => {
            let now = kubectl(cp, &["get", "--namespace", &ns, &failing, "-o", "yaml"]).await;
            anyhow::bail!("{e:#}\nthe generator now:\n{now:?}");
        }
    };
    assert!(not_ready.contains("condition met"), "{not_ready}");
    // Waiting for Ready on the failing one times out; `get` and `describe` say why.
    let waited = wait("--for=condition=Ready", failing.clone(), "--timeout=2s").await;
    assert!(
        waited.is_err(),
        "the failing generator must not become Ready: {waited:?}"
    );
    let table = kubectl(cp, &["get", "cmg", "--namespace", &ns]).await?;
    let row = table
        .lines()
        .find(|l| l.starts_with(&doomed))
        .unwrap_or_default();
    assert!(
        row.split_whitespace()
            .take(3)
            .eq([doomed.as_str(), "False", "Invalid"]),
        "READY False with the API's reason, Invalid:\n{table}"
    );
    let described = kubectl_until(
        cp,
        &["describe", "cmg", "--namespace", &ns, &doomed],
        &["Warning", "ReconcileError", "Invalid"],
    )
    .await?;
    assert!(
        described.contains("must be no more than 253 characters"),
        "{described}"
    );

    // It never had a ConfigMap: deleting it takes its finalizer off at once and claims no
    // deletion of a ConfigMap in an Event.
    generators.delete(&doomed, &DeleteParams::default()).await?;
    wait_for(
        Duration::from_secs(30),
        "the failing generator to be gone",
        || async {
            generators
                .get_opt(&doomed)
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await?;
    let events = kubectl(cp, &["get", "events", "--namespace", &ns]).await?;
    assert!(
        !events
            .lines()
            .any(|l| l.contains("Deleted") && l.contains(&doomed[..40])),
        "no ConfigMap was deleted for it:\n{events}"
    );
    token.cancel();
    tokio::time::timeout(Duration::from_secs(30), run).await???;
    Ok(())
}
