//! The example operator on kube-runtime with the parts kubeward's example operator has by default
//! and kube-runtime lacks, each from a crate a kube-rs author would pick: leader election on a
//! Lease (kube-lease-manager), Prometheus metrics of its reconciles (prometheus) and health
//! probes over HTTP/1.1 (hyper), and flags (clap). The build-cost comparison of
//! `scripts/bench build` measures it beside kubeward's; the operator is `kube_runtime.rs`.

// A kube-runtime author prints the CRD as any program would; kubeward's own lints forbid `print!`.
#![allow(clippy::print_stdout)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use clap::Parser as _;
use futures::StreamExt as _;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::controller::Controller;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResourceExt as _};
use kube_lease_manager::LeaseManagerBuilder;
use prometheus::{Histogram, HistogramOpts, IntCounterVec, Opts, Registry, TextEncoder};
use tokio::net::TcpListener;

// Its `main` is replaced by this file's; its `pub` types are the crate root's there.
#[allow(dead_code, unreachable_pub)]
#[path = "kube_runtime.rs"]
mod alone;

use alone::{ConfigMapGenerator, Ctx, MANAGER};

/// The flags of `configmap_generator` that these parts have.
#[derive(clap::Parser)]
struct Flags {
    #[command(subcommand)]
    command: Option<Command>,
    /// Address of the metrics endpoint.
    #[arg(long, default_value = "0.0.0.0:8080")]
    metrics_bind_address: SocketAddr,
    /// Address of the health probes.
    #[arg(long, default_value = "0.0.0.0:8081")]
    health_probe_bind_address: SocketAddr,
    /// Elect a leader on a Lease, so that one replica reconciles at a time.
    #[arg(long)]
    leader_elect: bool,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    leader_election_namespace: String,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Prints the CustomResourceDefinition as YAML.
    Crd,
}

/// Reconciles counted by result, and their durations.
#[derive(Clone)]
struct Metrics {
    reconciles: IntCounterVec,
    duration: Histogram,
}

impl Metrics {
    fn register(registry: &Registry) -> prometheus::Result<Self> {
        let opts = Opts::new("reconcile_total", "Reconciles by result");
        let reconciles = IntCounterVec::new(opts, &["result"])?;
        let opts = HistogramOpts::new("reconcile_time_seconds", "Durations of reconciles");
        let duration = Histogram::with_opts(opts)?;
        registry.register(Box::new(reconciles.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        Ok(Self {
            reconciles,
            duration,
        })
    }
}

/// Answers a request for `path`: the status and the body.
type Answer = fn(&Registry, &str) -> (StatusCode, String);

fn metrics_endpoint(registry: &Registry, path: &str) -> (StatusCode, String) {
    match path {
        "/metrics" => match TextEncoder::new().encode_to_string(&registry.gather()) {
            Ok(text) => (StatusCode::OK, text),
            Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()),
        },
        _ => (StatusCode::NOT_FOUND, String::new()),
    }
}

fn probe_endpoints(_: &Registry, path: &str) -> (StatusCode, String) {
    match path {
        "/healthz" | "/readyz" => (StatusCode::OK, "ok".into()),
        _ => (StatusCode::NOT_FOUND, String::new()),
    }
}

/// Serves `answer` over HTTP/1.1 on `listener`, a task per connection.
async fn serve(listener: TcpListener, registry: Registry, answer: Answer) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(%error, "accepting a connection");
                continue;
            }
        };
        let registry = registry.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let (status, body) = answer(&registry, request.uri().path());
                let mut response = Response::new(Full::new(Bytes::from(body)));
                *response.status_mut() = status;
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                tracing::debug!(%error, "serving a connection");
            }
        });
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    if let Some(Command::Crd) = flags.command {
        print!("{}", serde_norway::to_string(&ConfigMapGenerator::crd())?);
        return Ok(());
    }
    tracing_subscriber::fmt::init();
    let client = Client::try_default().await?;
    let registry = Registry::new();
    let metrics = Metrics::register(&registry)?;
    let metrics_listener = TcpListener::bind(flags.metrics_bind_address).await?;
    let probes_listener = TcpListener::bind(flags.health_probe_bind_address).await?;
    tokio::spawn(serve(metrics_listener, registry.clone(), metrics_endpoint));
    tokio::spawn(serve(probes_listener, registry, probe_endpoints));

    // The Lease is held while the receiver lives; dropping it releases the Lease.
    let mut election = None;
    if flags.leader_elect {
        let lease = LeaseManagerBuilder::new(client.clone(), format!("{MANAGER}-leader"))
            .with_namespace(&flags.leader_election_namespace)
            .build()
            .await?;
        let (mut is_leader, task) = lease.watch().await;
        is_leader.wait_for(|&leading| leading).await?;
        tracing::info!("elected leader");
        election = Some((is_leader, task));
    }

    let reporter = Reporter {
        controller: MANAGER.into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        recorder,
    });
    let reconcile = move |generator, ctx| {
        let metrics = metrics.clone();
        async move {
            let timer = metrics.duration.start_timer();
            let result = alone::reconcile(generator, ctx).await;
            timer.observe_duration();
            let outcome = if result.is_ok() { "success" } else { "error" };
            metrics.reconciles.with_label_values(&[outcome]).inc();
            result
        }
    };
    let generators: Api<ConfigMapGenerator> = Api::all(client.clone());
    let configmaps: Api<ConfigMap> = Api::all(client);
    let controller = Controller::new(generators, watcher::Config::default())
        .owns(configmaps, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, alone::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::warn!(%error, "reconcile failed");
            }
        });
    let lost = async {
        match &mut election {
            Some((is_leader, _)) => is_leader.wait_for(|&leading| !leading).await.map(drop),
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        () = controller => Ok(()),
        _ = lost => Err(anyhow::anyhow!("lost the leader-election Lease")),
    };
    if let Some((is_leader, task)) = election {
        // Released at once, so the next leader need not wait for the Lease to expire.
        drop(is_leader);
        task.await??;
    }
    outcome
}
