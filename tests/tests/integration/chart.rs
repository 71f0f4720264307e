//! The example operator's Helm chart lints, renders a restricted pod and installs with enough RBAC and no more.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, ObjectReference, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, Patch,
    PatchParams, PostParams,
};
use kube::{Api, Client};
use kubeward::testing::ControlPlane;
use kubeward_tests::wait_for;
use serde_yaml::Value;

const CRD_NAME: &str = "configmapgenerators.demo.kubeward.dev";
const SERVICE_MONITOR: &str = "monitoring.coreos.com/v1/ServiceMonitor";

fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../charts/configmap-generator")
}

fn all_on_values() -> PathBuf {
    chart_dir().join("ci/all-on-values.yaml")
}

/// Finds `program` as the control plane finds its binaries: `$KUBEWARD_BIN`, then
/// `$KUBEWARD_CACHE/bin` or `~/.cache/kubeward/bin` (where `scripts/setup` installs helm and
/// kubectl), then `$PATH`.
fn tool(program: &str) -> anyhow::Result<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("KUBEWARD_BIN").filter(|v| !v.is_empty()) {
        dirs.push(PathBuf::from(dir));
    }
    if let Some(cache) = std::env::var_os("KUBEWARD_CACHE").filter(|v| !v.is_empty()) {
        dirs.push(Path::new(&cache).join("bin"));
    } else if let Some(home) = std::env::var_os("HOME") {
        dirs.push(Path::new(&home).join(".cache/kubeward/bin"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.iter()
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| anyhow::anyhow!("{program} not found; install it with `bash scripts/setup`"))
}

/// Runs `program args`, returning stdout on success and an error quoting stderr otherwise.
async fn run(program: &str, args: &[&str], stdin: Option<&str>) -> anyhow::Result<String> {
    use tokio::io::AsyncWriteExt as _;

    let mut command = tokio::process::Command::new(tool(program)?);
    command
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let mut input = child
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("stdin of {program} was not piped"))?;
    input
        .write_all(stdin.unwrap_or_default().as_bytes())
        .await?;
    drop(input);
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .map_err(|_| anyhow::anyhow!("{program} {args:?} did not finish within 120 s"))??;
    let stdout = String::from_utf8(output.stdout)?;
    if output.status.success() {
        Ok(stdout)
    } else {
        anyhow::bail!(
            "{program} {args:?} failed with {}:\n{}\n{stdout}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
    }
}

async fn helm(args: &[&str]) -> anyhow::Result<String> {
    run("helm", args, None).await
}

/// `helm template` of the chart as release `cmg` in `default`, with `extra` flags.
async fn template(extra: &[&str]) -> anyhow::Result<Vec<Value>> {
    let chart = chart_dir();
    let mut args = vec![
        "template",
        "cmg",
        path_str(&chart)?,
        "--namespace",
        "default",
    ];
    args.extend_from_slice(extra);
    documents(&helm(&args).await?)
}

fn path_str(path: &Path) -> anyhow::Result<&str> {
    path.to_str()
        .ok_or_else(|| anyhow::anyhow!("{} is not UTF-8", path.display()))
}

/// The non-empty documents of a multi-document YAML stream.
fn documents(yaml: &str) -> anyhow::Result<Vec<Value>> {
    let mut docs = Vec::new();
    for document in serde_yaml::Deserializer::from_str(yaml) {
        let value = serde::Deserialize::deserialize(document)?;
        if !matches!(value, Value::Null) {
            docs.push(value);
        }
    }
    Ok(docs)
}

fn kinds(docs: &[Value]) -> BTreeSet<String> {
    docs.iter()
        .filter_map(|d| d["kind"].as_str().map(str::to_owned))
        .collect()
}

fn the<'a>(docs: &'a [Value], kind: &str) -> anyhow::Result<&'a Value> {
    let mut found = docs.iter().filter(|d| d["kind"].as_str() == Some(kind));
    match (found.next(), found.next()) {
        (Some(one), None) => Ok(one),
        (None, _) => anyhow::bail!("no {kind} was rendered; kinds: {:?}", kinds(docs)),
        (Some(_), Some(_)) => anyhow::bail!("more than one {kind} was rendered"),
    }
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_sequence()
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The manager container of a rendered Deployment.
fn manager(deployment: &Value) -> anyhow::Result<&Value> {
    deployment["spec"]["template"]["spec"]["containers"]
        .as_sequence()
        .and_then(|c| c.iter().find(|c| c["name"].as_str() == Some("manager")))
        .ok_or_else(|| anyhow::anyhow!("the Deployment has no `manager` container"))
}

#[tokio::test]
async fn the_chart_lints_with_default_values_and_with_every_feature_on() -> anyhow::Result<()> {
    let chart = chart_dir();
    let chart = path_str(&chart)?;
    let all_on = all_on_values();
    let defaults = helm(&["lint", "--strict", chart]).await?;
    assert!(defaults.contains("0 chart(s) failed"), "{defaults}");
    let every = helm(&["lint", "--strict", chart, "--values", path_str(&all_on)?]).await?;
    assert!(every.contains("0 chart(s) failed"), "{every}");
    Ok(())
}

#[tokio::test]
async fn default_values_render_the_operator_and_none_of_the_optional_extras() -> anyhow::Result<()>
{
    let docs = template(&["--api-versions", SERVICE_MONITOR]).await?;
    let expected: BTreeSet<String> = [
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "Deployment",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    .map(str::to_owned)
    .into();
    assert_eq!(kinds(&docs), expected);

    let crd = the(&docs, "CustomResourceDefinition")?;
    assert_eq!(crd["metadata"]["name"].as_str(), Some(CRD_NAME));
    assert_eq!(
        crd["metadata"]["annotations"]["helm.sh/resource-policy"].as_str(),
        Some("keep"),
        "the CRD must be kept on uninstall by default"
    );
    for doc in &docs {
        let labels = &doc["metadata"]["labels"];
        for label in [
            "app.kubernetes.io/name",
            "app.kubernetes.io/instance",
            "app.kubernetes.io/version",
            "app.kubernetes.io/managed-by",
            "helm.sh/chart",
        ] {
            assert!(
                labels[label].as_str().is_some(),
                "{} has no {label} label",
                doc["kind"].as_str().unwrap_or("?")
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn every_optional_feature_renders_when_turned_on_and_its_api_is_served() -> anyhow::Result<()>
{
    let all_on = all_on_values();
    let values = path_str(&all_on)?;
    let docs = template(&["--values", values, "--api-versions", SERVICE_MONITOR]).await?;
    for kind in [
        "ServiceMonitor",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "ConfigMap",
    ] {
        the(&docs, kind)?;
    }
    let crd = the(&docs, "CustomResourceDefinition")?;
    assert!(
        crd["metadata"]["annotations"]["helm.sh/resource-policy"].is_null(),
        "crds.keep=false must drop the keep policy"
    );

    let dashboard = the(&docs, "ConfigMap")?;
    let json = dashboard["data"]["configmap-generator.json"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the dashboard ConfigMap holds no JSON"))?;
    let dashboard: serde_json::Value = serde_json::from_str(json)?;
    let exprs: Vec<&str> = dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .filter_map(|t| t["expr"].as_str())
        .collect();
    for metric in [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "workqueue_depth",
        "controller_runtime_reconcile_time_seconds_bucket",
        "leader_election_master_status",
    ] {
        assert!(
            exprs.iter().any(|e| e.contains(metric)),
            "no dashboard panel queries {metric}: {exprs:?}"
        );
    }

    // Without the API the ServiceMonitor is skipped, not rendered into a failing install.
    let without_api = template(&["--values", values]).await?;
    assert!(!kinds(&without_api).contains("ServiceMonitor"));
    Ok(())
}

#[tokio::test]
async fn the_rendered_deployment_runs_a_restricted_non_root_pod_with_args_from_values()
-> anyhow::Result<()> {
    let docs = template(&[]).await?;
    let deployment = the(&docs, "Deployment")?;
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"].as_str(),
        Some("RuntimeDefault")
    );
    assert_eq!(pod["automountServiceAccountToken"].as_bool(), Some(true));

    let container = manager(deployment)?;
    let security = &container["securityContext"];
    assert_eq!(security["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(security["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(security["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(strings(&security["capabilities"]["drop"]), ["ALL"]);
    assert!(security["capabilities"]["add"].is_null());
    assert_eq!(
        security["seccompProfile"]["type"].as_str(),
        Some("RuntimeDefault")
    );
    assert!(security["privileged"].as_bool() != Some(true));
    assert_eq!(
        container["livenessProbe"]["httpGet"]["path"].as_str(),
        Some("/healthz")
    );
    assert_eq!(
        container["readinessProbe"]["httpGet"]["path"].as_str(),
        Some("/readyz")
    );
    assert!(container["resources"]["requests"]["memory"].is_string());
    assert!(container["resources"]["limits"]["memory"].is_string());

    let args = strings(&container["args"]);
    for expected in [
        "--metrics-bind-address=:8080",
        "--health-probe-bind-address=:8081",
        "--leader-elect",
        "--leader-election-id=cmg-configmap-generator",
        "--leader-election-namespace=default",
        "--leader-election-lease-duration=15s",
        "--leader-election-renew-deadline=10s",
        "--leader-election-retry-period=2s",
        "--log-format=json",
        "--log-level=info",
    ] {
        assert!(args.contains(&expected), "{expected} missing from {args:?}");
    }
    assert!(
        !args.iter().any(|a| a.starts_with("--namespace")),
        "all namespaces are watched by default: {args:?}"
    );

    // Values change the arguments, and one watched namespace narrows the binding to it.
    let docs = template(&[
        "--set",
        "watchNamespace=team-a,leaderElection.enabled=false,metrics.enabled=false",
        "--set",
        "logging.format=text,extraArgs[0]=--extra",
    ])
    .await?;
    let args = strings(&manager(the(&docs, "Deployment")?)?["args"]).join(" ");
    assert!(args.contains("--namespace=team-a"), "{args}");
    assert!(args.contains("--metrics-bind-address=0"), "{args}");
    assert!(args.contains("--log-format=text"), "{args}");
    assert!(args.ends_with("--extra"), "{args}");
    assert!(!args.contains("--leader-elect"), "{args}");
    let kinds = kinds(&docs);
    assert!(!kinds.contains("ClusterRoleBinding") && !kinds.contains("Service"));
    let binding = the(&docs, "RoleBinding")?;
    assert_eq!(binding["metadata"]["namespace"].as_str(), Some("team-a"));
    assert_eq!(binding["roleRef"]["kind"].as_str(), Some("ClusterRole"));
    Ok(())
}

#[tokio::test]
async fn the_values_schema_rejects_values_of_the_wrong_type() -> anyhow::Result<()> {
    for (bad, path) in [
        ("replicaCount=three", "/replicaCount"),
        ("logging.format=xml", "/logging/format"),
        (
            "leaderElection.leaseDuration=soon",
            "/leaderElection/leaseDuration",
        ),
        ("metrics.enabeld=true", "/metrics"),
    ] {
        let err = template(&["--set-string", bad])
            .await
            .err()
            .ok_or_else(|| anyhow::anyhow!("`{bad}` was accepted"))?;
        let message = err.to_string();
        assert!(
            message.contains(&format!("at '{path}'")),
            "`{bad}` was rejected for another reason: {message}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn an_existing_service_account_must_be_named() -> anyhow::Result<()> {
    let err = template(&["--set", "serviceAccount.create=false"])
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("an unnamed existing ServiceAccount was accepted"))?;
    assert!(
        err.to_string()
            .contains("serviceAccount.name is required when serviceAccount.create is false"),
        "{err}"
    );
    let docs = template(&[
        "--set",
        "serviceAccount.create=false,serviceAccount.name=existing",
    ])
    .await?;
    assert!(!kinds(&docs).contains("ServiceAccount"));
    let pod = &the(&docs, "Deployment")?["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"].as_str(), Some("existing"));
    let binding = the(&docs, "ClusterRoleBinding")?;
    assert_eq!(
        binding["subjects"][0]["name"].as_str(),
        Some("existing"),
        "RBAC must be granted to the existing ServiceAccount"
    );
    Ok(())
}

#[tokio::test]
async fn the_rendered_manifests_are_accepted_by_the_apiserver_and_the_service_monitor_is_skipped()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("chart-dry-run").await?;
    let kubeconfig = path_str(cp.kubeconfig())?;
    let chart = chart_dir();
    let all_on = all_on_values();
    // A server-side dry run renders with the cluster's real capabilities: this apiserver serves
    // no ServiceMonitor API, so the chart must leave it out although the values ask for it.
    let release = helm(&[
        "install",
        "cmg",
        path_str(&chart)?,
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        &ns,
        "--values",
        path_str(&all_on)?,
        "--dry-run=server",
        // Other tests of this binary may have created the (cluster-scoped) CRD without Helm's
        // ownership labels; a dry run changes nothing, so it need not refuse to adopt it.
        "--take-ownership",
        "--output=json",
    ])
    .await?;
    let release: serde_json::Value = serde_json::from_str(&release)?;
    let manifest = release["manifest"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the dry run returned no manifest: {release}"))?;
    let docs = documents(manifest)?;
    assert!(
        !kinds(&docs).contains("ServiceMonitor"),
        "{:?}",
        kinds(&docs)
    );
    assert!(
        release["info"]["notes"]
            .as_str()
            .is_some_and(|n| n.contains("the ServiceMonitor was skipped")),
        "NOTES.txt must say that the ServiceMonitor was skipped: {}",
        release["info"]["notes"]
    );

    let applied = run(
        "kubectl",
        &[
            "--kubeconfig",
            kubeconfig,
            "--namespace",
            &ns,
            "apply",
            "--dry-run=server",
            "--filename=-",
        ],
        Some(manifest),
    )
    .await?;
    let accepted = applied
        .lines()
        .filter(|l| l.ends_with("(server dry run)"))
        .count();
    assert_eq!(accepted, docs.len(), "kubectl said:\n{applied}");
    Ok(())
}

/// The status code of a failed API call, or `None` when it succeeded.
fn status_code<T>(result: Result<T, kube::Error>) -> Option<u16> {
    match result {
        Ok(_) => None,
        Err(kube::Error::Api(status)) => Some(status.code),
        Err(_) => Some(0),
    }
}

const FORBIDDEN: Option<u16> = Some(403);
/// Authorization comes before lookup: an allowed request for an object that does not exist is a 404.
const ALLOWED_BUT_ABSENT: Option<u16> = Some(404);

fn generator_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "demo.kubeward.dev",
        "v1",
        "ConfigMapGenerator",
    ))
}

fn named<K: kube::Resource<DynamicType = ()> + Default>(name: &str) -> K {
    let mut object = K::default();
    *object.meta_mut() = ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    object
}

fn event_about_a_generator(namespace: &str) -> Event {
    Event {
        metadata: ObjectMeta {
            generate_name: Some("sample-".into()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("demo.kubeward.dev/v1".into()),
            kind: Some("ConfigMapGenerator".into()),
            name: Some("sample".into()),
            namespace: Some(namespace.to_owned()),
            ..ObjectReference::default()
        },
        reason: Some("Generated".into()),
        message: Some("generated ConfigMap sample".into()),
        type_: Some("Normal".into()),
        ..Event::default()
    }
}

/// Installs the chart for real with every feature on, then acts as its `ServiceAccount`.
///
/// A private control plane, because the CRD and `ClusterRole` are cluster-scoped and Helm owns
/// them: another test of this binary creating the same CRD would make the install refuse it.
///
/// No custom resource is created: kube-apiserver v1.20.2 built with Go >= 1.18 crashes on any
/// custom-resource write (its vendored reflect2 v1.0.1 predates Go 1.18's map iterator), so what
/// the `ServiceAccount` may do to them is shown by 404 (allowed, absent) against 403 (forbidden).
#[tokio::test]
async fn an_installed_release_grants_its_service_account_what_the_operator_needs_and_no_more()
-> anyhow::Result<()> {
    let cp = ControlPlane::start().await?;
    let ns = cp.create_namespace("chart").await?;
    let other = cp.create_namespace("elsewhere").await?;
    let kubeconfig = path_str(cp.kubeconfig())?;
    let chart = chart_dir();
    let all_on = all_on_values();
    let installed = helm(&[
        "install",
        "cmg",
        path_str(&chart)?,
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        &ns,
        "--values",
        path_str(&all_on)?,
    ])
    .await?;
    assert!(installed.contains("STATUS: deployed"), "{installed}");
    assert!(
        installed.contains("the ServiceMonitor was skipped"),
        "{installed}"
    );

    let crds: Api<CustomResourceDefinition> = Api::all(cp.client());
    crd_established(&crds).await?;
    // Pods never start here (there is no kubelet), but the Deployment is stored as rendered.
    let deployment = Api::<Deployment>::namespaced(cp.client(), &ns)
        .get("cmg-configmap-generator")
        .await?;
    let pod = deployment.spec.template.spec.unwrap_or_default();
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("cmg-configmap-generator")
    );

    let sa = cp.service_account_client(&ns, "cmg-configmap-generator");
    what_the_operator_needs_is_allowed(&sa, &ns, &other).await?;
    nothing_more_is_allowed(&sa, &ns, &other).await?;

    // crds.keep=false in these values: uninstalling takes the CRD with it.
    helm(&[
        "uninstall",
        "cmg",
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        &ns,
    ])
    .await?;
    wait_for(
        Duration::from_secs(30),
        "the CRD to be deleted with the release",
        || {
            let crds = crds.clone();
            async move { crds.get_opt(CRD_NAME).await.ok()?.is_none().then_some(()) }
        },
    )
    .await?;
    Ok(())
}

async fn crd_established(crds: &Api<CustomResourceDefinition>) -> anyhow::Result<()> {
    wait_for(Duration::from_secs(30), "the CRD to be established", || {
        let crds = crds.clone();
        async move {
            let crd = crds.get(CRD_NAME).await.ok()?;
            crd.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        }
    })
    .await
}

/// Its custom resources everywhere (and their status and finalizers), ConfigMaps and Events next
/// to them, and its Lease in the release namespace `ns`.
async fn what_the_operator_needs_is_allowed(
    sa: &Client,
    ns: &str,
    other: &str,
) -> anyhow::Result<()> {
    let generators: Api<DynamicObject> =
        Api::namespaced_with(sa.clone(), other, &generator_resource());
    let all_generators: Api<DynamicObject> = Api::all_with(sa.clone(), &generator_resource());
    all_generators
        .list(&ListParams::default())
        .await
        .context("listing ConfigMapGenerators in all namespaces")?;
    generators
        .list(&ListParams::default())
        .await
        .context("listing ConfigMapGenerators in a namespace")?;
    let status_patch = Patch::Merge(serde_json::json!({ "status": { "observedGeneration": 1 } }));
    assert_eq!(
        status_code(
            generators
                .patch_status("absent", &PatchParams::default(), &status_patch)
                .await
        ),
        ALLOWED_BUT_ABSENT,
        "patching a ConfigMapGenerator's status must be allowed"
    );
    let finalizer_patch = Patch::Merge(
        serde_json::json!({ "metadata": { "finalizers": ["demo.kubeward.dev/cleanup"] } }),
    );
    assert_eq!(
        status_code(
            generators
                .patch("absent", &PatchParams::default(), &finalizer_patch)
                .await
        ),
        ALLOWED_BUT_ABSENT,
        "patching a ConfigMapGenerator's finalizers must be allowed"
    );
    for namespace in [ns, other] {
        let config_maps = Api::<ConfigMap>::namespaced(sa.clone(), namespace);
        config_maps
            .create(&PostParams::default(), &named("generated"))
            .await
            .with_context(|| format!("creating a ConfigMap in {namespace}"))?;
        config_maps
            .delete("generated", &DeleteParams::default())
            .await
            .with_context(|| format!("deleting a ConfigMap in {namespace}"))?;
    }
    Api::<Event>::namespaced(sa.clone(), other)
        .create(&PostParams::default(), &event_about_a_generator(other))
        .await
        .context("creating an Event")?;
    Api::<Lease>::namespaced(sa.clone(), ns)
        .create(&PostParams::default(), &named("configmap-generator-all-on"))
        .await
        .context("creating the Lease in the release namespace")?;

    Ok(())
}

/// No Secrets, no Leases outside the release namespace `ns`, and it never creates or deletes the
/// custom resources it reconciles.
async fn nothing_more_is_allowed(sa: &Client, ns: &str, other: &str) -> anyhow::Result<()> {
    let generators: Api<DynamicObject> =
        Api::namespaced_with(sa.clone(), other, &generator_resource());
    assert_eq!(
        status_code(
            Api::<Secret>::namespaced(sa.clone(), ns)
                .list(&ListParams::default())
                .await
        ),
        FORBIDDEN,
        "listing Secrets must be forbidden"
    );
    assert_eq!(
        status_code(
            Api::<Lease>::namespaced(sa.clone(), other)
                .create(&PostParams::default(), &named("elsewhere"))
                .await
        ),
        FORBIDDEN,
        "Leases outside the release namespace must be forbidden"
    );
    let mut sample = DynamicObject::new("sample", &generator_resource());
    sample.data = serde_json::json!({ "spec": { "content": "hello" } });
    assert_eq!(
        status_code(generators.create(&PostParams::default(), &sample).await),
        FORBIDDEN,
        "creating ConfigMapGenerators must be forbidden"
    );
    assert_eq!(
        status_code(generators.delete("absent", &DeleteParams::default()).await),
        FORBIDDEN,
        "deleting ConfigMapGenerators must be forbidden"
    );

    Ok(())
}

/// The image cannot be built here (there is no container engine), so this checks what can be
/// checked without one: the final stage is minimal, runs as the chart's non-root user and starts
/// the operator binary that the builder stage builds.
#[tokio::test]
async fn the_dockerfile_builds_the_operator_into_a_minimal_image_run_by_the_charts_user()
-> anyhow::Result<()> {
    let dockerfile = std::fs::read_to_string(chart_dir().join("../../Dockerfile"))?;
    let instructions: Vec<&str> = dockerfile
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let last_from = instructions
        .iter()
        .rposition(|l| l.starts_with("FROM "))
        .ok_or_else(|| anyhow::anyhow!("the Dockerfile has no FROM"))?;
    assert!(last_from > 0, "the Dockerfile must be multi-stage");
    assert_eq!(instructions[last_from], "FROM scratch");
    let final_stage = &instructions[last_from..];
    let user = final_stage
        .iter()
        .find_map(|l| l.strip_prefix("USER "))
        .ok_or_else(|| anyhow::anyhow!("the final stage sets no USER"))?;

    let docs = template(&[]).await?;
    let pod = &the(&docs, "Deployment")?["spec"]["template"]["spec"]["securityContext"];
    let expected = format!(
        "{}:{}",
        pod["runAsUser"].as_u64().unwrap_or_default(),
        pod["runAsGroup"].as_u64().unwrap_or_default()
    );
    assert_eq!(
        user, expected,
        "the image and the chart disagree on the user"
    );
    assert!(!user.starts_with("0:"), "the image must not run as root");

    assert!(
        dockerfile.contains("-p kubeward-examples --bin configmap-generator"),
        "the builder stage must build the operator"
    );
    assert!(
        final_stage.contains(&r#"ENTRYPOINT ["/configmap-generator"]"#),
        "the image must start the operator"
    );
    Ok(())
}
