//! The smallest build, kubeward without default features, as an operator of its own: built,
//! then run on the shared control plane until it has reconciled a generator and counts it.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use kubeward::testing::{ControlPlane, free_addr, get, install_definition, wait_for};
use kubeward_examples::configmap_generator::{ConfigMapGenerator, ConfigMapGeneratorSpec};

use super::{cargo, target_dir, workspace};
use crate::metrics::scrape::scrape;

/// The operator's `main`: the example's reconciler, its manager configured in code as
/// `configmap_generator_minimal` does, but on the addresses and namespace the test gives it.
const MAIN: &str = r#"
use kubeward::informer::CacheScope;
use kubeward::leader;
use kubeward::manager::{Config, LeaderElection, Manager};
use kubeward::serving::{BindAddress, Endpoints};
use smallest_operator::configmap_generator::{ConfigMapGenerator, Generator};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let address = |name| -> anyhow::Result<BindAddress> {
        Ok(BindAddress::On(std::env::var(name)?.parse()?))
    };
    let namespace = std::env::var("WATCH_NAMESPACE")?;
    let election = LeaderElection::new(
        "smallest-operator-leader",
        Some(namespace.clone()),
        leader::Config::default(),
    );
    let config = Config::default()
        .cache(CacheScope::default().namespaces([namespace]))
        .leader_election(Some(election));
    let manager = Manager::new(kube::Config::infer().await?, config)?;
    let endpoints = Endpoints::new()
        .metrics(address("METRICS_ADDRESS")?)
        .health_probes(address("PROBE_ADDRESS")?);
    manager.add(endpoints)?;
    manager.add(ConfigMapGenerator::controller(Generator))?;
    Ok(manager.run().await?)
}
"#;

/// The crates the operator names, as the workspace's `[workspace.dependencies]` declare them, with
/// the features the operator adds.
const DEPENDENCIES: &[(&str, &str)] = &[
    ("anyhow", ""),
    ("k8s-openapi", "\"latest\", "),
    ("kube", ""),
    ("schemars", ""),
    ("serde", ""),
    ("serde_json", ""),
    ("tokio", "\"rt-multi-thread\", "),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smallest_build_reconciles_and_serves_its_metrics() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let dir = tempfile::tempdir()?;
    write_crate(dir.path())?;
    // Without `--features`: every default feature of kubeward stays off.
    cargo(dir.path(), &["build", "--quiet"], &[]).await?;
    let tree = cargo(
        dir.path(),
        &["tree", "-e", "normal", "--prefix", "none"],
        &[],
    )
    .await?;
    // What the features `cli`, `tls`, `webhooks` and `sharding` bring, and what stays.
    assert!(
        tree.lines().any(|line| line.starts_with("prometheus ")),
        "the operator's tree lists its crates:\n{tree}"
    );
    for left_out in [
        "clap ",
        "tracing-subscriber ",
        "rcgen ",
        "json-patch ",
        "twox-hash ",
    ] {
        assert!(
            !tree.lines().any(|line| line.starts_with(left_out)),
            "the smallest build links {left_out}"
        );
    }

    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("smallest").await?;
    let (metrics, probes) = (free_addr()?, free_addr()?);
    let _operator = tokio::process::Command::new(target_dir()?.join("debug/smallest-operator"))
        .env("KUBECONFIG", cp.kubeconfig())
        .env("WATCH_NAMESPACE", &ns)
        .env("METRICS_ADDRESS", metrics.to_string())
        .env("PROBE_ADDRESS", probes.to_string())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;

    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let spec = ConfigMapGeneratorSpec {
        content: "made by the smallest build".into(),
    };
    generators
        .create(
            &PostParams::default(),
            &ConfigMapGenerator::new("small", spec),
        )
        .await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    wait_for(
        Duration::from_secs(60),
        "the generator's ConfigMap, made by the smallest build",
        || async {
            let made = configmaps.get_opt("small-generated").await.ok()??;
            let content = made.data?.get("content")?.clone();
            (content == "made by the smallest build").then_some(())
        },
    )
    .await?;
    wait_for(
        Duration::from_secs(30),
        "/readyz ok and a successful reconcile counted on /metrics",
        || async {
            let ready = get(probes, "/readyz").await.ok()?;
            let successes = scrape(metrics).await?.value(
                "controller_runtime_reconcile_total",
                &[("controller", "configmap-generator"), ("result", "success")],
            )?;
            (ready.status() == 200 && successes > 0.0).then_some(())
        },
    )
    .await?;
    Ok(())
}

/// Writes the operator's crate into `dir`: the example operator's two modules as its library,
/// [`MAIN`] as its binary, kubeward by path without default features, the workspace's lock file.
fn write_crate(dir: &Path) -> anyhow::Result<()> {
    let ws = workspace();
    let versions = std::fs::read_to_string(ws.join("Cargo.toml"))?;
    let mut manifest = String::from(
        "[package]\nname = \"smallest-operator\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\
         publish = false\n\n[workspace]\n\n[dependencies]\n",
    );
    for (name, features) in DEPENDENCIES {
        let line = versions
            .lines()
            .find(|line| line.starts_with(&format!("{name} = ")))
            .ok_or_else(|| anyhow::anyhow!("no {name} in [workspace.dependencies]"))?;
        let line = line.replacen("features = [", &format!("features = [{features}"), 1);
        anyhow::ensure!(
            features.is_empty() || line.contains(features),
            "{name} has no features in [workspace.dependencies] to add {features} to"
        );
        manifest.push_str(&line);
        manifest.push('\n');
    }
    writeln!(
        manifest,
        "kubeward = {{ path = \"{}\", default-features = false }}",
        ws.join("framework").display()
    )?;
    std::fs::write(dir.join("Cargo.toml"), manifest)?;
    std::fs::copy(ws.join("Cargo.lock"), dir.join("Cargo.lock"))?;
    let src = dir.join("src");
    std::fs::create_dir(&src)?;
    let mut lib = String::new();
    for module in ["configmap_generator", "configmap_generator_v1alpha1"] {
        std::fs::copy(
            ws.join(format!("examples/src/{module}.rs")),
            src.join(format!("{module}.rs")),
        )?;
        writeln!(lib, "pub mod {module};")?;
    }
    std::fs::write(src.join("lib.rs"), lib)?;
    std::fs::write(src.join("main.rs"), MAIN)?;
    Ok(())
}
