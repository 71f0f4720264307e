//! Admission round trips per second and p50/p99 latency over HTTPS, at 1 and 64 concurrent
//! clients: kubeward's webhook server with a validator that does no work (the framework's
//! overhead: TLS, routing, the checks on method, type and size, decoding the `AdmissionReview`
//! of a ConfigMap and encoding the answer), beside a bare rustls + hyper server that echoes the
//! body back (the floor: TLS and HTTP alone). Prints a markdown table.
//!
//! Run with `cargo bench -p kubeward --bench webhook` (or `scripts/bench webhook`).
//!
//! Both servers run in this process on a 2-worker tokio runtime, the clients on another, each
//! client one TLS connection (HTTP/1.1 keep-alive, as a webhook client reuses its connections)
//! sending the same ~1 KiB review one request after another. Each (server, clients) pair runs
//! for 5 s after a 1 s warm-up; the servers take turns. `KUBEWARD_BENCH_QUICK=1` runs 0.3 s
//! each: it checks that the bench runs, not its figures.

#![allow(clippy::print_stdout, reason = "a bench binary that prints its table")]

mod client;
mod floor;

use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeward::manager::{Config, Manager};
use kubeward::tls::Authority;
use kubeward::webhook::{self, Validator};

/// Client counts measured.
const CLIENTS: [usize; 2] = [1, 64];

/// Admits everything, at once.
struct Noop;
impl Validator<ConfigMap> for Noop {}

/// The review every client sends: a ConfigMap with a few keys and labels (~1 KiB).
const REVIEW: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},"requestKind":{"group":"","version":"v1","kind":"ConfigMap"},"requestResource":{"group":"","version":"v1","resource":"configmaps"},"name":"settings","namespace":"team-a","operation":"CREATE","userInfo":{"username":"system:serviceaccount:team-a:deployer","uid":"4d2f5e3a-1b7c-4f0e-9a8d-3c6b5e2f1a0d","groups":["system:serviceaccounts","system:serviceaccounts:team-a","system:authenticated"]},"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"team-a","labels":{"app.kubernetes.io/name":"shop","app.kubernetes.io/component":"frontend","app.kubernetes.io/part-of":"store"},"annotations":{"owner":"team-a@example.com"}},"data":{"LOG_LEVEL":"info","FEATURE_FLAGS":"search,checkout,recommendations","CACHE_TTL":"300","UPSTREAM":"http://catalog.team-a.svc:8080","TIMEOUT":"5s"}},"oldObject":null,"dryRun":false,"options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}}}"#;

fn main() -> anyhow::Result<()> {
    let quick = std::env::var("KUBEWARD_BENCH_QUICK").is_ok_and(|v| v == "1");
    let (warm_up, measure) = if quick {
        (Duration::from_millis(100), Duration::from_millis(300))
    } else {
        (Duration::from_secs(1), Duration::from_secs(5))
    };
    let dir = tempfile::tempdir()?;
    let ca = Authority::generate("bench CA")?;
    let pair = ca.issue(&["localhost"])?;
    pair.write_to(dir.path())?;

    let servers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let kubeward = servers.block_on(start_kubeward(dir.path()))?;
    let floor = servers.block_on(floor::start(&pair))?;

    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    println!("## Webhook: admission round trips over HTTPS");
    println!();
    println!("| server | clients | round trips/s | p50 | p99 |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for n in CLIENTS {
        for (name, addr, path) in [
            ("bare rustls + hyper echo (floor)", floor, "/echo"),
            (
                "kubeward, no-op validator",
                kubeward,
                "/validate--v1-configmap",
            ),
        ] {
            let run = client::Run {
                addr,
                path,
                clients: n,
                ca: ca.certificate_pem(),
                body: REVIEW,
            };
            clients.block_on(run.measure(warm_up))?;
            let result = clients.block_on(run.measure(measure))?;
            println!(
                "| {name} | {n} | {:.0} | {} | {} |",
                result.per_second(),
                micros(result.percentile(50)),
                micros(result.percentile(99)),
            );
        }
    }
    println!();
    println!(
        "Each client is one HTTP/1.1 keep-alive TLS connection sending a {}-byte AdmissionReview \
         one request after another; latencies are per round trip, measured by the client.",
        REVIEW.len()
    );
    Ok(())
}

/// Starts a manager serving the no-op validator with the certificate in `dir`; its address.
async fn start_kubeward(dir: &std::path::Path) -> anyhow::Result<SocketAddr> {
    // The manager needs a client; the webhook server never uses it (nothing is installed).
    let client = kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse()?))?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let config = webhook::Config::default().port(port).cert_dir(dir);
    let manager = Manager::new(client, Config::default().webhook(config))?;
    manager.add_validator::<ConfigMap>(Noop)?;
    tokio::spawn(manager.run());
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    client::wait_listening(addr).await?;
    Ok(addr)
}

/// `d` in µs, or ms above 10 ms.
fn micros(d: Duration) -> String {
    if d >= Duration::from_millis(10) {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.0} µs", d.as_secs_f64() * 1e6)
    }
}
