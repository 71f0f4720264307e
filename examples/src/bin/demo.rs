//! The README's demo: the example operator against a local control plane it starts.
//!
//! Run with `bash scripts/demo`. It starts etcd and kube-apiserver on loopback, installs the
//! chart (the `ConfigMapGenerator` CRD, the ServiceAccount and its RBAC) with helm, runs the
//! operator (the same controller as `configmap_generator`) as that ServiceAccount with leader
//! election and its metrics on a free port, creates a sample generator, and shows the ConfigMap
//! it produced, its status and a few lines of `/metrics`. Ctrl-C stops it (`--once` exits at once).
//! With `--shards N` it runs N replicas as shards of the controller's ring instead of one, and
//! shows how the sharder spread a few more generators between them.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, ResourceExt as _};
use kubeward::cli::{LogFormat, init_logging};
use kubeward::leader;
use kubeward::manager::{Config, LeaderElection, Manager};
use kubeward::serving::{BindAddress, Endpoints};
use kubeward::shard::Shard;
use kubeward::sharding::{RING_LABEL, shard_label};
use kubeward::testing::{Binaries, ControlPlane, free_addr, scrape};
use kubeward_examples::by_hand::generated_name;
use kubeward_examples::configmap_generator::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, Generator,
};
use tokio::task::JoinHandle;

/// Command-line flags of the demo.
#[derive(Debug, Parser)]
struct Args {
    /// Exit after showing the result, instead of waiting for Ctrl-C.
    #[arg(long)]
    once: bool,
    /// Run this many replicas as shards of the controller's ring (0: one unsharded replica).
    #[arg(long, default_value_t = 0)]
    shards: u16,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    say("starting etcd and kube-apiserver on loopback (the first run builds kube-apiserver)")?;
    // ANCHOR: control_plane
    let cp = ControlPlane::start()
        .await
        .context("starting the local control plane")?;
    // ANCHOR_END: control_plane
    // Logging starts after start-up: kube's client logs each 500 from `/readyz` while it warms up.
    init_logging(LogFormat::Text, "info,kube_client=warn")?;
    say(&format!(
        "control plane at {}; kubectl --kubeconfig {}",
        cp.server_url(),
        cp.kubeconfig().display()
    ))?;

    install_chart(&cp)?;
    let crds: Api<CustomResourceDefinition> = Api::all(cp.client());
    let established = await_condition(
        crds,
        "configmapgenerators.demo.kubeward.dev",
        conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(30), established).await??;
    say(&format!(
        "installed the chart into {RELEASE_NAMESPACE}: CRD, ServiceAccount {SERVICE_ACCOUNT}, RBAC"
    ))?;

    let shard_ids: Vec<Option<String>> = if args.shards == 0 {
        vec![None]
    } else {
        (0..args.shards)
            .map(|i| Some(format!("shard-{i}")))
            .collect()
    };
    let mut replicas = Vec::new();
    for shard in shard_ids {
        replicas.push(start_operator(&cp, shard)?);
    }
    let metrics_addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.0).collect();

    let metrics_addr = show_the_operator_at_work(&cp, &metrics_addrs).await?;
    if args.shards > 0 {
        show_the_shards(&cp).await?;
    }

    if args.once {
        for (_, shutdown, _) in &replicas {
            shutdown();
        }
    } else {
        // The manager turns SIGTERM and SIGINT into its shutdown, so either one ends the demo.
        say(&format!(
            "metrics at http://{metrics_addr}/metrics; press Ctrl-C to stop"
        ))?;
    }
    for (_, _, operator) in replicas {
        operator.await??;
    }
    say("stopped cleanly")?;
    Ok(())
}

/// A running replica of the operator: its metrics address, its shutdown, its run.
type Replica = (
    SocketAddr,
    Box<dyn Fn() + Send>,
    JoinHandle<kubeward::manager::Result<()>>,
);

/// Starts the operator, as the shard `shard` of the controller's ring if given.
fn start_operator(cp: &ControlPlane, shard: Option<String>) -> anyhow::Result<Replica> {
    // ANCHOR: manager
    let metrics_addr = free_addr()?;
    let election = LeaderElection::new(
        LEASE,
        Some(RELEASE_NAMESPACE.to_owned()),
        leader::Config::default(),
    );
    let config = Config::default().leader_election(Some(election));
    // The operator acts as the chart's ServiceAccount: what it may do is what the chart grants.
    let client = cp.service_account_client(RELEASE_NAMESPACE, SERVICE_ACCOUNT);
    let manager = Manager::new(client, config)?;
    manager.add(Endpoints::new().metrics(BindAddress::On(metrics_addr)))?;
    // ANCHOR: shard
    if let Some(id) = shard {
        // Before the ring's controller, which then reconciles only this shard's objects.
        manager.add(Shard::new(RING, id).namespace(Some(RELEASE_NAMESPACE.into())))?;
    }
    manager.add(ConfigMapGenerator::controller(Generator))?;
    // ANCHOR_END: shard
    let shutdown = manager.shutdown_token();
    let operator = tokio::spawn(manager.run());
    // ANCHOR_END: manager
    Ok((metrics_addr, Box::new(move || shutdown.cancel()), operator))
}

/// Creates more generators and shows how the sharder spread them between the shards.
async fn show_the_shards(cp: &ControlPlane) -> anyhow::Result<()> {
    const MORE: usize = 30;
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), "default");
    for i in 0..MORE {
        let spec = ConfigMapGeneratorSpec {
            content: format!("generator {i}"),
        };
        let generator = ConfigMapGenerator::new(&format!("gen-{i}"), spec);
        generators
            .create(&PostParams::default(), &generator)
            .await?;
    }
    let label = shard_label(RING);
    let spread = async {
        loop {
            let listed = generators.list(&ListParams::default()).await?;
            let mut by_shard: BTreeMap<String, usize> = BTreeMap::new();
            for g in &listed {
                if let Some(shard) = g.labels().get(&label) {
                    *by_shard.entry(shard.clone()).or_default() += 1;
                }
            }
            if by_shard.values().sum::<usize>() == listed.items.len() {
                return anyhow::Ok(by_shard);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let by_shard = tokio::time::timeout(Duration::from_secs(60), spread).await??;
    say(&format!(
        "created {MORE} more generators; the sharder spread them (label {label}): {by_shard:?}"
    ))?;
    say(&format!(
        "kubectl get leases -n {RELEASE_NAMESPACE} -l {RING_LABEL}={RING} shows the shards"
    ))?;
    Ok(())
}

/// Creates a sample generator and shows what the operator made of it; returns the metrics
/// address of the replica that reconciled it.
async fn show_the_operator_at_work(
    cp: &ControlPlane,
    metrics_addrs: &[SocketAddr],
) -> anyhow::Result<SocketAddr> {
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), "default");
    let sample = ConfigMapGenerator::new(
        "hello",
        ConfigMapGeneratorSpec {
            content: "Hello from kubeward!".into(),
        },
    );
    generators.create(&PostParams::default(), &sample).await?;
    say("created ConfigMapGenerator default/hello")?;

    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), "default");
    let name = generated_name(&sample);
    let produced = await_condition(configmaps, &name, |cm: Option<&ConfigMap>| cm.is_some());
    let produced = tokio::time::timeout(Duration::from_secs(30), produced)
        .await??
        .context("the ConfigMap exists")?;
    let produced_name = produced.name_any();
    let content = produced
        .data
        .unwrap_or_default()
        .remove("content")
        .unwrap_or_default();
    say(&format!(
        "the operator produced ConfigMap default/{produced_name}: content = {content:?}"
    ))?;

    let ready = await_condition(
        generators.clone(),
        "hello",
        |g: Option<&ConfigMapGenerator>| {
            g.and_then(|g| g.status.as_ref())
                .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "Ready"))
        },
    );
    let generator = tokio::time::timeout(Duration::from_secs(30), ready)
        .await??
        .context("the generator exists")?;
    say(&format!(
        "status: {}",
        serde_json::to_string(&generator.status)?
    ))?;

    // The reconcile that wrote the status is still publishing its Event: wait for it to count.
    // Sharded, the generator's shard reconciled it: look at each replica's metrics.
    let counted = async {
        loop {
            for &addr in metrics_addrs {
                let metrics = scrape(addr).await?;
                if metrics
                    .lines()
                    .any(|l| l.contains(r#"result="success"} "#) && !l.ends_with(" 0"))
                {
                    return anyhow::Ok((addr, metrics));
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let (metrics_addr, metrics) = tokio::time::timeout(Duration::from_secs(30), counted).await??;
    let shown = [
        "controller_runtime_reconcile_total",
        "workqueue_depth",
        "leader_election_master_status",
    ];
    for line in metrics
        .lines()
        .filter(|l| shown.iter().any(|m| l.starts_with(m)))
    {
        say(&format!("metrics: {line}"))?;
    }
    Ok(metrics_addr)
}

const RELEASE_NAMESPACE: &str = "operator-system";
const SERVICE_ACCOUNT: &str = "configmap-generator";
const LEASE: &str = "configmap-generator-leader";
/// The controller's ring: its name.
const RING: &str = "configmap-generator";

/// `helm install` of the example operator's chart, with the control plane's kubeconfig.
fn install_chart(cp: &ControlPlane) -> anyhow::Result<()> {
    let chart = concat!(env!("CARGO_MANIFEST_DIR"), "/../charts/configmap-generator");
    let output = std::process::Command::new(Binaries::tool("helm")?)
        .args([
            "install",
            "demo",
            chart,
            "--namespace",
            RELEASE_NAMESPACE,
            "--create-namespace",
        ])
        .arg("--kubeconfig")
        .arg(cp.kubeconfig())
        .args(["--set", &format!("serviceAccount.name={SERVICE_ACCOUNT}")])
        .args(["--set", &format!("leaderElection.id={LEASE}")])
        .output()
        .context("running helm")?;
    anyhow::ensure!(
        output.status.success(),
        "helm install failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

fn say(line: &str) -> std::io::Result<()> {
    writeln!(std::io::stdout(), "demo: {line}")
}
