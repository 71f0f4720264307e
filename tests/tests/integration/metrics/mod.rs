//! `/metrics` of a Manager on the real control plane: counts, buckets, promtool, a real Prometheus,
//! and secure metrics behind `TokenReview` and `SubjectAccessReview`.

mod client;
mod dashboard;
mod https;
mod prometheus;
pub(crate) mod scrape;
mod secure;

use crate::fixtures::watching;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};
use kubeward::controller::{self, Action, Context, Controller, ErrorAction, Reconciler};
use kubeward::manager::{LeaderElection, Manager};
use kubeward::metrics::{RECONCILE_TIME_BUCKETS, WORKQUEUE_DURATION_BUCKETS};
use kubeward::queue::rate_limiter::ExponentialBackoff;
use kubeward::serving::{BindAddress, Endpoints};
use kubeward::shard::Shard;
use kubeward::testing::{ControlPlane, free_addr, install_definition, wait_for};
use kubeward_examples::configmap_generator::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, Generator,
};
use parking_lot::Mutex;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use self::prometheus::{Prometheus, tool};
use self::scrape::{Scrape, scrape};

const CONTROLLER: &str = "scripted";
const RESULTS: [&str; 4] = ["success", "error", "requeue", "requeue_after"];

/// Reconciles ConfigMaps as their name prefix says: `ok-` succeeds, `flaky-` fails once then
/// succeeds, `later-` asks to be requeued in an hour, `terminal-` fails terminally, `slow`
/// waits for a permit from the test, then succeeds.
#[derive(Clone)]
struct Scripted {
    attempts: Arc<Mutex<std::collections::HashMap<String, u32>>>,
    slow: Arc<Semaphore>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Scripting(&'static str);

impl Reconciler<ConfigMap> for Scripted {
    type Error = Scripting;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _ctx: &Context<ConfigMap>,
    ) -> Result<Action, Scripting> {
        let name = cm.name_any();
        let attempt = {
            let mut attempts = self.attempts.lock();
            let n = attempts.entry(name.clone()).or_default();
            *n += 1;
            *n
        };
        if name.starts_with("flaky-") && attempt == 1 {
            Err(Scripting("first attempt fails"))
        } else if name.starts_with("terminal-") {
            Err(Scripting("never works"))
        } else if name.starts_with("later-") {
            Ok(Action::requeue(Duration::from_secs(3600)))
        } else if name == "slow" {
            let permit = self.slow.acquire().await;
            drop(permit);
            Ok(Action::await_change())
        } else {
            Ok(Action::await_change())
        }
    }

    fn error_policy(
        &self,
        _: &ConfigMap,
        error: &controller::Error<Scripting>,
        _: &Context<ConfigMap>,
    ) -> ErrorAction {
        match error {
            controller::Error::Reconcile(Scripting("never works")) => ErrorAction::Terminal,
            _ => ErrorAction::Retry,
        }
    }
}

/// A Manager serving `/metrics` on a free loopback port, running in the background.
struct Running {
    addr: SocketAddr,
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
}

impl Running {
    fn start(manager: Manager, addr: SocketAddr) -> Self {
        let token = manager.shutdown_token();
        Self {
            addr,
            token,
            run: tokio::spawn(manager.run()),
        }
    }

    /// Scrapes until `check` holds on a scrape.
    async fn wait_until<T>(
        &self,
        what: &str,
        check: impl Fn(Scrape) -> Option<T>,
    ) -> anyhow::Result<T> {
        let check = &check;
        Ok(wait_for(Duration::from_secs(60), what, || async move {
            check(scrape(self.addr).await?)
        })
        .await?)
    }

    async fn stop(self) -> anyhow::Result<()> {
        self.token.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.run)
            .await??
            .map_err(Into::into)
    }
}

/// A manager in namespace `ns` running the [`Scripted`] controller (two workers, 50 ms backoff).
fn start_scripted(cp: &ControlPlane, ns: &str, scripted: &Scripted) -> anyhow::Result<Running> {
    let addr = free_addr()?;
    let manager = Manager::new(cp.client(), watching(ns.to_owned()))?;
    manager.add(Endpoints::new().metrics(BindAddress::On(addr)))?;
    manager.add(
        Controller::new(scripted.clone())
            .name(CONTROLLER)
            .concurrency(2)
            .rate_limiter(ExponentialBackoff::new(
                Duration::from_millis(50),
                Duration::from_secs(1),
            )),
    )?;
    Ok(Running::start(manager, addr))
}

async fn create_configmaps(api: &Api<ConfigMap>, names: &[&str]) -> anyhow::Result<()> {
    for name in names {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some((*name).to_owned()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        api.create(&PostParams::default(), &cm).await?;
    }
    Ok(())
}

fn reconciles(scrape: &Scrape, result: &str) -> Option<f64> {
    scrape.value(
        "controller_runtime_reconcile_total",
        &[("controller", CONTROLLER), ("result", result)],
    )
}

fn queue(scrape: &Scrape, family: &str) -> Option<f64> {
    scrape.value(family, &[("name", CONTROLLER), ("controller", CONTROLLER)])
}

/// The `le` bounds of `family`'s buckets for `labels`, in order, `+Inf` last.
fn bucket_bounds(scrape: &Scrape, family: &str, labels: &[(&str, &str)]) -> Vec<f64> {
    let mut bounds: Vec<f64> = scrape
        .matching(family, labels)
        .filter_map(|s| s.labels.get("le")?.parse().ok())
        .collect();
    bounds.sort_by(f64::total_cmp);
    bounds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraped_metrics_count_the_reconciles_the_test_caused_and_the_queue_drains()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("metrics").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let scripted = Scripted {
        attempts: Arc::default(),
        slow: Arc::new(Semaphore::new(0)),
    };
    let running = start_scripted(cp, &ns, &scripted)?;

    // Every result series exists, at 0, before anything was reconciled.
    let first = running
        .wait_until("the metrics endpoint to answer", |s| {
            s.value(
                "controller_runtime_max_concurrent_reconciles",
                &[("controller", CONTROLLER)],
            )
            .map(|_| RESULTS.map(|r| reconciles(&s, r)))
        })
        .await?;
    assert_eq!(
        first,
        RESULTS.map(|_| Some(0.0)),
        "results at the start: {first:?}"
    );

    let ok = ["ok-1", "ok-2", "ok-3"];
    let flaky = ["flaky-1", "flaky-2"];
    let later = ["later-1", "later-2"];
    let terminal = ["terminal-1"];
    for names in [&ok[..], &flaky, &later, &terminal, &["slow"]] {
        create_configmaps(&api, names).await?;
    }

    // While `slow` is held, the unfinished-work gauges grow (updated every 500 ms).
    running
        .wait_until("a worker reported busy on `slow` for over 1 s", |s| {
            let longest = queue(&s, "workqueue_longest_running_processor_seconds")?;
            let unfinished = queue(&s, "workqueue_unfinished_work_seconds")?;
            (longest > 1.0 && unfinished >= longest).then_some(())
        })
        .await?;
    scripted.slow.add_permits(1);

    // ok ×3, flaky ×2 (after one failure each) and slow succeed; flaky's first attempts and
    // terminal fail; later ×2 ask for a requeue.
    let expected = [
        ("success", (ok.len() + flaky.len() + 1) as f64),
        ("error", (flaky.len() + terminal.len()) as f64),
        ("requeue", 0.0),
        ("requeue_after", later.len() as f64),
    ];
    let total: f64 = expected.iter().map(|(_, n)| n).sum();
    let done = running
        .wait_until(
            &format!("{total} reconciles, all finished, and an empty queue"),
            |s| {
                let counted: f64 = RESULTS.iter().filter_map(|r| reconciles(&s, r)).sum();
                let idle = s.value(
                    "controller_runtime_active_workers",
                    &[("controller", CONTROLLER)],
                )? == 0.0;
                let empty = queue(&s, "workqueue_depth")? == 0.0;
                let settled = queue(&s, "workqueue_longest_running_processor_seconds")? == 0.0;
                (counted >= total && idle && empty && settled).then_some(s)
            },
        )
        .await?;
    for (result, n) in expected {
        assert_eq!(
            reconciles(&done, result),
            Some(n),
            "reconcile_total{{result={result}}}"
        );
    }
    let per_controller = |family| done.value(family, &[("controller", CONTROLLER)]);
    assert_eq!(
        per_controller("controller_runtime_reconcile_errors_total"),
        Some(3.0)
    );
    assert_eq!(
        per_controller("controller_runtime_terminal_reconcile_errors_total"),
        Some(1.0)
    );
    assert_eq!(
        per_controller("controller_runtime_reconcile_panics_total"),
        Some(0.0)
    );
    assert_eq!(
        per_controller("controller_runtime_max_concurrent_reconciles"),
        Some(2.0)
    );
    assert_eq!(
        per_controller("controller_runtime_reconcile_time_seconds_count"),
        Some(total)
    );
    // Nine ConfigMaps queued once each, and flaky ×2 again after their backoff.
    assert_eq!(queue(&done, "workqueue_adds_total"), Some(11.0));
    assert_eq!(queue(&done, "workqueue_retries_total"), Some(2.0));
    assert_eq!(
        queue(&done, "workqueue_work_duration_seconds_count"),
        Some(total)
    );
    assert_eq!(
        queue(&done, "workqueue_queue_duration_seconds_count"),
        Some(total)
    );

    assert_documented_buckets(&done);
    assert_informer_and_process_families(&done, &ns, &api).await?;
    running.stop().await
}

/// The histograms carry controller-runtime's and client-go's buckets.
fn assert_documented_buckets(done: &Scrape) {
    let mut reconcile_bounds = RECONCILE_TIME_BUCKETS.to_vec();
    reconcile_bounds.push(f64::INFINITY);
    assert_eq!(
        bucket_bounds(
            done,
            "controller_runtime_reconcile_time_seconds_bucket",
            &[("controller", CONTROLLER)]
        ),
        reconcile_bounds
    );
    assert_eq!((reconcile_bounds[0], reconcile_bounds[39]), (0.005, 60.0));
    let mut queue_bounds = WORKQUEUE_DURATION_BUCKETS.to_vec();
    queue_bounds.push(f64::INFINITY);
    for family in [
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_work_duration_seconds_bucket",
    ] {
        assert_eq!(
            bucket_bounds(done, family, &[("name", CONTROLLER)]),
            queue_bounds,
            "{family}"
        );
    }
    assert_eq!((queue_bounds[0], queue_bounds[11]), (1e-8, 1000.0));
}

/// The informer's own families count the test's ConfigMaps; the process families are there.
async fn assert_informer_and_process_families(
    done: &Scrape,
    ns: &str,
    api: &Api<ConfigMap>,
) -> anyhow::Result<()> {
    let resource = format!("/api/v1/namespaces/{ns}/configmaps");
    let informer = |family| done.value(family, &[("resource", resource.as_str())]);
    let in_namespace = api.list(&ListParams::default()).await?.items.len();
    assert_eq!(
        in_namespace, 9,
        "the namespace holds only the test's ConfigMaps"
    );
    assert_eq!(informer("kubeward_informer_store_objects"), Some(9.0));
    assert_eq!(informer("kubeward_informer_relists_total"), Some(1.0));
    assert_eq!(
        informer("kubeward_informer_decode_failures_total"),
        Some(0.0)
    );
    assert!(informer("kubeward_informer_list_requests_total") >= Some(1.0));
    assert!(informer("kubeward_informer_watch_requests_total") >= Some(1.0));
    let synced = informer("kubeward_informer_last_sync_timestamp_seconds").unwrap_or_default();
    let started = done
        .value("process_start_time_seconds", &[])
        .unwrap_or_default();
    assert!(
        synced >= started.floor() && started > 1.7e9,
        "last sync {synced} before the process started {started}"
    );
    assert!(done.value("process_resident_memory_bytes", &[]) > Some(1e6));
    assert!(done.value("process_open_fds", &[]) > Some(0.0));

    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promtool_accepts_the_scraped_metrics() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("promtool").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let scripted = Scripted {
        attempts: Arc::default(),
        slow: Arc::new(Semaphore::new(1)),
    };
    let running = start_scripted(cp, &ns, &scripted)?;
    create_configmaps(&api, &["ok-1", "flaky-1", "later-1", "terminal-1"]).await?;
    let scraped = running
        .wait_until("five reconciles", |s| {
            let counted: f64 = RESULTS.iter().filter_map(|r| reconciles(&s, r)).sum();
            (counted >= 5.0).then_some(s.text)
        })
        .await?;
    running.stop().await?;

    let mut promtool = tokio::process::Command::new(tool("promtool")?)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = promtool
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("promtool has no stdin"))?;
    stdin.write_all(scraped.as_bytes()).await?;
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), promtool.wait_with_output()).await??;
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{report}"
    );
    // promtool reports lint problems (e.g. a counter without `_total`) with exit code 0 on
    // older versions; none is expected.
    assert!(
        report.trim().is_empty(),
        "promtool found problems:\n{report}"
    );
    Ok(())
}

/// Every panel of the chart's dashboard shows data from the operator `prometheus` scrapes.
async fn every_dashboard_query_returns_data(prometheus: &Prometheus) -> anyhow::Result<()> {
    let queries = dashboard::queries()?;
    let empty = Mutex::new(Vec::new());
    wait_for(
        Duration::from_secs(60),
        "every dashboard query to return data",
        || async {
            let mut missing = Vec::new();
            for (title, expr) in &queries {
                match prometheus.query(&dashboard::substituted(expr)).await {
                    Ok(series) if !series.is_empty() => {}
                    Ok(_) => missing.push(format!("{title}: {expr} (no data)")),
                    Err(e) => missing.push(format!("{title}: {e}")),
                }
            }
            let done = missing.is_empty();
            *empty.lock() = missing;
            done.then_some(())
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e}:\n{}", empty.lock().join("\n")))?;
    Ok(())
}

/// A webhook server with one route and a certificate from files (so nothing is installed in
/// the cluster), so that the dashboard's webhook panels have data too.
struct Webhook {
    addr: SocketAddr,
    certs: tempfile::TempDir,
    ca: kubeward::tls::Authority,
}

impl Webhook {
    fn new() -> anyhow::Result<Self> {
        let certs = tempfile::tempdir()?;
        let ca = kubeward::tls::Authority::generate("metrics test CA")?;
        ca.issue(&["localhost", "127.0.0.1"])?
            .write_to(certs.path())?;
        Ok(Self {
            addr: free_addr()?,
            certs,
            ca,
        })
    }

    fn config(&self) -> kubeward::webhook::Config {
        kubeward::webhook::Config::default()
            .port(self.addr.port())
            .cert_dir(self.certs.path())
    }

    fn route() -> kubeward::webhook::Route {
        kubeward::webhook::Route::new("/echo", |body: bytes::Bytes| async move {
            http::Response::new(body)
        })
    }

    /// A GET, answered 405: a request like any other for the webhook families.
    async fn call(&self) -> anyhow::Result<()> {
        let local = SocketAddr::from(([127, 0, 0, 1], self.addr.port()));
        let answer = wait_for(
            Duration::from_secs(30),
            "the webhook server to answer",
            || async {
                https::get(local, "/echo", self.ca.certificate_pem(), None)
                    .await
                    .ok()
            },
        )
        .await?;
        assert_eq!(answer.status(), 405, "{}", answer.body());
        Ok(())
    }
}

/// Whether the generator's status says Ready.
fn is_ready(generator: &ConfigMapGenerator) -> bool {
    generator
        .status
        .as_ref()
        .is_some_and(|s| s.conditions.is_true("Ready"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scraping_the_example_operator_answers_the_reconcile_count()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("prometheus").await?;
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let addr = free_addr()?;
    let webhook = Webhook::new()?;
    let config = watching(ns.clone())
        .webhook(webhook.config())
        .leader_election(Some(LeaderElection::new(
            "configmap-generator",
            Some(ns.clone()),
            kubeward::leader::Config::default(),
        )));
    // A client the manager builds, as the operator's binary does: its requests are measured.
    let manager = Manager::new(cp.config(), config)?;
    manager.add(Endpoints::new().metrics(BindAddress::On(addr)))?;
    // As one shard of its ring, so that the sharder's panels have data too.
    manager.add(Shard::new("configmap-generator", "prometheus-0").namespace(Some(ns.clone())))?;
    manager.add(ConfigMapGenerator::controller(Generator))?;
    manager.add_route(Webhook::route())?;
    let running = Running::start(manager, addr);
    let prometheus = Prometheus::start(addr).await?;
    webhook.call().await?;

    let n = 3;
    for i in 0..n {
        let generator = ConfigMapGenerator::new(
            &format!("gen-{i}"),
            ConfigMapGeneratorSpec {
                content: format!("v{i}"),
            },
        );
        generators
            .create(&PostParams::default(), &generator)
            .await?;
    }
    wait_for(
        Duration::from_secs(60),
        &format!("{n} generators reporting their ConfigMap"),
        || async {
            let list = generators.list(&ListParams::default()).await.ok()?;
            let reported = list.items.iter().filter(|g| is_ready(g)).count();
            (reported == n).then_some(())
        },
    )
    .await?;

    // The operator settles (the status writes and owned ConfigMaps cause a few more reconciles);
    // Prometheus must then report what the operator's endpoint reports.
    let query = "controller_runtime_reconcile_total{job=\"kubeward\",controller=\"configmap-generator\",result=\"success\"}";
    let (served, answered) = wait_for(
        Duration::from_secs(60),
        "Prometheus to answer the success count the operator serves",
        || async {
            let served = scrape(addr).await?;
            let busy = served.value("workqueue_depth", &[("name", "configmap-generator")])? > 0.0
                || served.value(
                    "controller_runtime_active_workers",
                    &[("controller", "configmap-generator")],
                )? > 0.0;
            let served = served.value(
                "controller_runtime_reconcile_total",
                &[("controller", "configmap-generator"), ("result", "success")],
            )?;
            let answer = prometheus.query(query).await.ok()?;
            let [(_, answered)] = answer.as_slice() else {
                return None;
            };
            // Counts: whole numbers.
            (!busy && (*answered - served).abs() < 0.5).then_some((served, *answered))
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e}; Prometheus log:\n{}", prometheus.log()))?;
    assert!(
        answered >= n as f64,
        "each of the {n} generators succeeded at least once, yet Prometheus says {answered} (endpoint: {served})"
    );
    let errors = prometheus
        .query("sum(controller_runtime_reconcile_total{controller=\"configmap-generator\",result=\"error\"})")
        .await?;
    assert_eq!(errors.first().map(|(_, v)| *v), Some(0.0), "{errors:?}");
    let up = prometheus.query("up{job=\"kubeward\"}").await?;
    assert_eq!(up.first().map(|(_, v)| *v), Some(1.0), "{up:?}");

    every_dashboard_query_returns_data(&prometheus).await?;

    drop(prometheus);
    running.stop().await
}
