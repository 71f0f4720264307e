//! A new user's first starts of the example operators: what they print or install serves, and
//! the mistakes no flag can catch are warned of once.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::{Api, Resource as _};
use kubeward::testing::{ControlPlane, free_addr, lease_holder, terminate, wait_for};
use kubeward_examples::by_hand::generated_name;
use kubeward_examples::configmap_generator::{ConfigMapGenerator, ConfigMapGeneratorSpec};

use super::Operator;

/// How long a child process gets to log, lead or reconcile.
const REACT: Duration = Duration::from_secs(30);

/// Starts `binary` against `cp` with `args`, its endpoints on free ports and its log in `log`.
fn spawn(binary: &Path, cp: &ControlPlane, args: &[&str], log: &Path) -> anyhow::Result<Operator> {
    let child = Command::new(binary)
        .args(args)
        .args(["--metrics-bind-address", &free_addr()?.to_string()])
        .args(["--health-probe-bind-address", &free_addr()?.to_string()])
        .env("KUBECONFIG", cp.kubeconfig())
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("POD_NAMESPACE")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log)?)
        .spawn()?;
    Ok(Operator(child))
}

/// Waits until `log` has a line containing `text`; returns every such line.
async fn logged(log: &Path, text: &str) -> anyhow::Result<Vec<String>> {
    let lines = wait_for(REACT, &format!("a log line with {text:?}"), || async {
        let log = std::fs::read_to_string(log).ok()?;
        let lines: Vec<String> = log
            .lines()
            .filter(|l| l.contains(text))
            .map(str::to_owned)
            .collect();
        (!lines.is_empty()).then_some(lines)
    })
    .await;
    lines.map_err(|e| {
        let log = std::fs::read_to_string(log).unwrap_or_default();
        anyhow::anyhow!("{e}; the log:\n{log}")
    })
}

/// A generator named `name` in `namespace`, created as an administrator.
async fn create_generator(cp: &ControlPlane, namespace: &str, name: &str) -> anyhow::Result<()> {
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), namespace);
    let spec = ConfigMapGeneratorSpec {
        content: format!("made for {namespace}"),
    };
    generators
        .create(&PostParams::default(), &ConfigMapGenerator::new(name, spec))
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_an_operator_prints_or_installs_by_itself_never_sends_the_api_server_to_a_missing_webhook()
-> anyhow::Result<()> {
    // A private control plane: the CRD is cluster-scoped, and the webhook configurations the
    // second operator installs would refuse every other test's generators.
    if kubeward::testing::skip_on_existing_cluster("a control plane whose CRDs a test may replace")
    {
        return Ok(());
    }
    let cp = ControlPlane::start().await?;
    // `configmap_generator crd`, applied by hand: the operator serves no conversion.
    let printed = Command::new(env!("CARGO_BIN_EXE_configmap_generator"))
        .arg("crd")
        .output()?;
    anyhow::ensure!(printed.status.success(), "crd: {printed:?}");
    let crd: CustomResourceDefinition = serde_norway::from_slice(&printed.stdout)?;
    let crds: Api<CustomResourceDefinition> = Api::all(cp.client());
    crds.create(&PostParams::default(), &crd).await?;
    let ns = cp.create_namespace("first-run").await?;
    wait_for(REACT, "the printed CRD to be served", || async {
        create_generator(&cp, &ns, "by-hand").await.ok()
    })
    .await?;
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let stored = generators.get("by-hand").await?;
    assert_eq!(stored.spec.content, format!("made for {ns}"));
    // The older version is not served (404), instead of failing every read through a webhook
    // Service that nothing serves (500, `service "…-webhook" not found`).
    let mut v1alpha1 = ApiResource::erase::<ConfigMapGenerator>(&());
    v1alpha1.version = "v1alpha1".into();
    v1alpha1.api_version = format!("{}/v1alpha1", ConfigMapGenerator::group(&()));
    let old: Api<DynamicObject> = Api::namespaced_with(cp.client(), &ns, &v1alpha1);
    match old.get("by-hand").await {
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        other => panic!("v1alpha1 must be unserved (404), got {other:?}"),
    }

    // `--webhook-self-signed` without `--webhook-url`, outside a cluster: the configurations it
    // installs name a Service that does not exist; one warning says which flag to use.
    let log = cp.dir().join("webhooks.log");
    let port = free_addr()?.port().to_string();
    let binary = Path::new(env!("CARGO_BIN_EXE_configmap_generator_webhooks"));
    let args = ["--webhook-self-signed", "--webhook-port", &port];
    let mut operator = spawn(binary, &cp, &args, &log)?;
    let warnings = logged(&log, "--webhook-url").await?;
    assert!(
        warnings.len() == 1
            && warnings[0].contains("WARN")
            && warnings[0].contains("default/configmap-generator-webhooks-webhook"),
        "one warning naming the Service and the flag: {warnings:#?}"
    );
    terminate(&mut operator.0, REACT).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_namespace_that_does_not_exist_is_one_warning_at_start() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    kubeward::testing::install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let present = cp.create_namespace("watched").await?;
    let missing = format!("{present}-missing");
    let log = cp.dir().join(format!("{missing}.log"));
    let watched = format!("--watch-namespaces={present},{missing}");
    let binary = Path::new(env!("CARGO_BIN_EXE_configmap_generator"));
    let mut operator = spawn(binary, cp, &[&watched], &log)?;
    // It runs: a generator in the namespace that exists is reconciled.
    create_generator(cp, &present, "here").await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &present);
    let here = Api::<ConfigMapGenerator>::namespaced(cp.client(), &present)
        .get("here")
        .await?;
    wait_for(REACT, "the generator's ConfigMap", || async {
        configmaps.get_opt(&generated_name(&here)).await.ok()?
    })
    .await?;
    let warnings = logged(&log, "does not exist").await?;
    assert!(
        warnings.len() == 1 && warnings[0].contains("WARN") && warnings[0].contains(&missing),
        "one warning naming {missing}: {warnings:#?}"
    );
    terminate(&mut operator.0, REACT).await?;
    let log = std::fs::read_to_string(&log)?;
    assert!(
        !log.contains(&format!("{present:?} does not exist")),
        "warned of a namespace that exists:\n{log}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_different_operators_in_one_namespace_both_lead_on_leases_of_their_own()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    kubeward::testing::install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let system = cp.create_namespace("two-operators").await?;
    // The same program under two names, as two operators built from one template would be;
    // neither is told a Lease name.
    let dir = tempfile::tempdir()?;
    let mut operators = Vec::new();
    for name in ["alpha_operator", "beta_operator"] {
        let binary = dir.path().join(name);
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_configmap_generator"), &binary)?;
        let apps = cp.create_namespace(&name.replace('_', "-")).await?;
        let log = cp.dir().join(format!("{system}-{name}.log"));
        let args = [
            "--leader-elect",
            "--leader-election-namespace",
            &system,
            "--watch-namespaces",
            &apps,
        ];
        operators.push((spawn(&binary, cp, &args, &log)?, apps, log));
    }
    let leases: Api<Lease> = Api::namespaced(cp.client(), &system);
    for (lease, (_, apps, log)) in ["alpha-operator-leader", "beta-operator-leader"]
        .into_iter()
        .zip(&operators)
    {
        wait_for(REACT, &format!("a holder of the Lease {lease}"), || async {
            lease_holder(&leases, lease).await.ok()?.map(drop)
        })
        .await
        .map_err(|e| {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            anyhow::anyhow!("{e}; its log:\n{log}")
        })?;
        // Leading, each reconciles its own namespace.
        create_generator(cp, apps, "led").await?;
        let led = Api::<ConfigMapGenerator>::namespaced(cp.client(), apps)
            .get("led")
            .await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), apps);
        wait_for(REACT, &format!("the ConfigMap of {apps}/led"), || async {
            configmaps.get_opt(&generated_name(&led)).await.ok()?
        })
        .await?;
    }
    for (mut operator, _, _) in operators {
        let exited = terminate(&mut operator.0, REACT).await?;
        assert!(exited.success(), "exit status {exited}");
    }
    Ok(())
}
