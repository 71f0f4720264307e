//! The generated project, from `cargo kubeward init` to its sample Ready.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kubeward::testing::{ControlPlane, install_crd_object, wait_for};
use tokio::time::Instant;

use super::{cargo, target_dir, workspace};
use crate::chart::{documents, helm, path_str};

/// What the author types after `init`, in order: two kinds, a second version of the first, a
/// controller of an existing kind, and webhooks (admission and conversion).
const COMMANDS: &[&str] = &[
    "create api --version v1alpha1 --kind Memo",
    "create api --version v1 --kind Note",
    "create api --version v1beta1 --kind Memo",
    "create api --group apps --version v1 --kind Deployment --resource=false --controller",
    "create webhook --kind Memo --defaulting --validation --conversion",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_operator_builds_passes_its_tests_and_makes_its_sample_ready()
-> anyhow::Result<()> {
    let started = Instant::now();
    let step = |what: &str| eprintln!("[generator {:>5.1?}] {what}", started.elapsed());
    let cp = ControlPlane::shared().await?;
    let dir = tempfile::tempdir()?;
    let ws = workspace();

    step("building cargo-kubeward");
    cargo(&ws, &["build", "--quiet", "-p", "cargo-kubeward"], &[]).await?;
    let tool = target_dir()?.join("debug/cargo-kubeward");
    let framework = ws.join("framework");
    let init = [
        "kubeward",
        "init",
        "memo-operator",
        "--group",
        "example.com",
        "--path",
    ];
    run(&tool, dir.path(), &init, Some(&framework)).await?;
    let root = dir.path().join("memo-operator");
    for command in COMMANDS {
        let args: Vec<&str> = std::iter::once("kubeward")
            .chain(command.split_whitespace())
            .collect();
        run(&tool, &root, &args, None).await?;
    }
    std::fs::copy(ws.join("Cargo.lock"), root.join("Cargo.lock"))?;

    step("cargo fmt --check, cargo clippy");
    cargo(&root, &["fmt", "--check"], &[]).await?;
    let clippy = ["clippy", "--all-targets", "--", "-D", "warnings"];
    cargo(&root, &clippy, &[]).await?;
    step("cargo test --no-run (builds the operator and its tests)");
    cargo(&root, &["test", "--no-run"], &[]).await?;
    step("cargo test, on the shared control plane");
    let on_cp = [
        ("KUBEWARD_USE_EXISTING_CLUSTER", Path::new("true")),
        ("KUBECONFIG", cp.kubeconfig()),
    ];
    cargo(&root, &["test"], &on_cp).await?;

    step("memo-operator manifests, helm lint and template");
    chart(&root).await?;
    step("the operator on the control plane, the Note sample Ready");
    sample_becomes_ready(cp, &root).await?;
    step("done");
    Ok(())
}

/// Writes the chart's generated files with the operator's `manifests`, lints the chart and checks
/// what it renders: both CRDs, the second version converted by the webhook, both webhook
/// configurations, the RBAC rules of every controller.
async fn chart(root: &Path) -> anyhow::Result<()> {
    let operator = target_dir()?.join("debug/memo-operator");
    run(&operator, root, &["manifests"], None).await?;
    let chart = root.join("charts/memo-operator");
    let chart = path_str(&chart)?;
    helm(&["lint", "--strict", chart]).await?;
    let all_on = root.join("charts/memo-operator/ci/all-on-values.yaml");
    helm(&["lint", "--strict", chart, "--values", path_str(&all_on)?]).await?;
    let rendered = documents(&helm(&["template", "r", chart, "--namespace", "ops"]).await?)?;
    let crds: Vec<&str> = rendered
        .iter()
        .filter(|d| d["kind"].as_str() == Some("CustomResourceDefinition"))
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect();
    assert_eq!(crds, ["memos.example.com", "notes.example.com"]);
    let memos = rendered
        .iter()
        .find(|d| d["metadata"]["name"].as_str() == Some("memos.example.com"));
    let memos = memos.ok_or_else(|| anyhow::anyhow!("no CRD memos.example.com"))?;
    assert_eq!(
        memos["spec"]["conversion"]["strategy"].as_str(),
        Some("Webhook"),
        "the Memo CRD's two versions are converted by the chart's webhook Service"
    );
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        assert!(
            rendered.iter().any(|d| d["kind"].as_str() == Some(kind)),
            "create webhook turned the chart's webhooks on, but no {kind} was rendered"
        );
    }
    let rules = std::fs::read_to_string(root.join("charts/memo-operator/files/rbac-rules.yaml"))?;
    assert!(
        rules.contains("deployments") && rules.contains("memos/status"),
        "{rules}"
    );

    Ok(())
}

/// Installs the chart's CRDs, runs the operator in a namespace of its own and waits until the
/// sample Note is Ready.
async fn sample_becomes_ready(cp: &ControlPlane, root: &Path) -> anyhow::Result<()> {
    let operator = target_dir()?.join("debug/memo-operator");
    let crd_yaml = std::fs::read_to_string(root.join("charts/memo-operator/files/crd.yaml"))?;
    for crd in documents(&crd_yaml)? {
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::to_value(crd)?)?;
        install_crd_object(cp.client(), crd).await?;
    }
    let ns = cp.create_namespace("generator").await?;
    let _operator = Operator::start(&operator, cp, &ns)?;
    let sample = std::fs::read_to_string(root.join("config/samples/example.com_v1_note.yaml"))?;
    let sample: DynamicObject = serde_norway::from_str(&sample)?;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Note");
    let notes: Api<DynamicObject> =
        Api::namespaced_with(cp.client(), &ns, &ApiResource::from_gvk(&gvk));
    notes.create(&PostParams::default(), &sample).await?;
    let ready = || async {
        let note = notes.get("note-sample").await.ok()?;
        let conditions = note.data["status"]["conditions"].as_array()?.clone();
        conditions
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
            .then_some(())
    };
    wait_for(
        Duration::from_secs(60),
        "the sample Note note-sample to be Ready",
        ready,
    )
    .await?;
    Ok(())
}

/// Runs `program args` in `dir` (with `path` as a last argument), failing with its output.
async fn run(program: &Path, dir: &Path, args: &[&str], path: Option<&Path>) -> anyhow::Result<()> {
    let mut command = tokio::process::Command::new(program);
    command.args(args).current_dir(dir).env_remove("KUBECONFIG");
    if let Some(path) = path {
        command.arg(path);
    }
    let output = command.output().await?;
    anyhow::ensure!(
        output.status.success(),
        "{} {args:?} failed: {}{}",
        program.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

/// The generated operator running against `cp` in `ns`, killed when dropped.
struct Operator(std::process::Child);

impl Operator {
    fn start(program: &Path, cp: &ControlPlane, ns: &str) -> anyhow::Result<Self> {
        let child = std::process::Command::new(program)
            .args(["--namespace", ns, "--health-probe-bind-address", "0"])
            .args(["--metrics-bind-address", "0", "--webhook-port", "0"])
            .env("KUBECONFIG", cp.kubeconfig())
            .stdout(std::process::Stdio::null())
            .spawn()?;
        Ok(Self(child))
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
