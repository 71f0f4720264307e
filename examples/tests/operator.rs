//! The example operator binary as a child process: readiness follows its cache, SIGTERM drains.

#[path = "operator/database.rs"]
mod database;
#[path = "operator/database_simulation.rs"]
mod database_simulation;
#[path = "operator/first_run.rs"]
mod first_run;
#[path = "operator/generator_simulation.rs"]
mod generator_simulation;
#[path = "operator/outages.rs"]
mod outages;
#[path = "operator/simulated.rs"]
mod simulated;
#[path = "operator/waits.rs"]
mod waits;
#[path = "operator/webapp.rs"]
mod webapp;
#[path = "operator/webapp_simulation.rs"]
mod webapp_simulation;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kubeward::testing::{
    Binaries, ControlPlane, TcpProxy, events_about, free_addr, get, install_definition,
    lease_holder, scrape, signal, terminate, wait_for,
};
use kubeward_examples::by_hand::{FINALIZER, generated_name};
use kubeward_examples::configmap_generator::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, DELAY_ANNOTATION,
};

/// The status code of `GET path`, or `None` while nothing answers.
async fn status_of(addr: SocketAddr, path: &str) -> Option<u16> {
    Some(get(addr, path).await.ok()?.status().as_u16())
}

/// Kills the operator if the test fails before it exits on its own.
struct Operator(Child);

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A kubeconfig like the control plane's, but pointing at `proxy`.
fn kubeconfig_through(
    cp: &ControlPlane,
    proxy: &TcpProxy,
    dir: &std::path::Path,
) -> anyhow::Result<std::path::PathBuf> {
    let original = std::fs::read_to_string(cp.kubeconfig())?;
    let port = cp.apiserver_addr().port();
    let rewritten = original.replace(&format!("127.0.0.1:{port}"), &proxy.addr().to_string());
    anyhow::ensure!(
        rewritten != original,
        "the kubeconfig names the apiserver's port"
    );
    // Named for the proxy: `dir` may be the shared control plane's, whose own `kubeconfig`
    // other tests read.
    let path = dir.join(format!("kubeconfig-through-{}", proxy.addr().port()));
    std::fs::write(&path, rewritten)?;
    Ok(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_follows_the_cache_and_sigterm_lets_a_slow_reconcile_finish() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("binary").await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let kubeconfig = kubeconfig_through(cp, &proxy, cp.dir())?;
    let (metrics, probes) = (free_addr()?, free_addr()?);

    proxy.stall(); // the operator starts but cannot list yet
    let child = Command::new(env!("CARGO_BIN_EXE_configmap_generator"))
        .args([
            "--namespace",
            &ns,
            "--metrics-bind-address",
            &metrics.to_string(),
        ])
        .args([
            "--health-probe-bind-address",
            &probes.to_string(),
            "--graceful-shutdown-timeout",
            "20",
        ])
        .env("KUBECONFIG", &kubeconfig)
        .stdout(Stdio::null())
        .spawn()?;
    let mut operator = Operator(child);

    let before = wait_for(
        Duration::from_secs(30),
        "the probe endpoint to answer",
        || status_of(probes, "/readyz"),
    )
    .await?;
    assert_eq!(before, 503, "/readyz must fail before the cache has synced");
    assert_eq!(status_of(probes, "/healthz").await, Some(200));
    proxy.restore();
    wait_for(
        Duration::from_secs(60),
        "/readyz to turn 200 once the cache synced",
        || async { (status_of(probes, "/readyz").await == Some(200)).then_some(()) },
    )
    .await?;

    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let mut slow = ConfigMapGenerator::new(
        "slow",
        ConfigMapGeneratorSpec {
            content: "worth the wait".into(),
        },
    );
    slow.metadata = ObjectMeta {
        name: Some("slow".into()),
        annotations: Some([(DELAY_ANNOTATION.to_owned(), "3".to_owned())].into()),
        ..ObjectMeta::default()
    };
    generators.create(&PostParams::default(), &slow).await?;
    // The finalizer goes on right before the (slow) reconcile body runs.
    wait_for(
        Duration::from_secs(30),
        "the operator to start reconciling (finalizer added)",
        || async {
            let g = generators.get("slow").await.ok()?;
            g.metadata
                .finalizers
                .unwrap_or_default()
                .iter()
                .any(|f| f == FINALIZER)
                .then_some(())
        },
    )
    .await?;

    let exited = terminate(&mut operator.0, Duration::from_secs(30)).await?;
    assert!(
        exited.success(),
        "the operator must exit 0 after a graceful shutdown, got {exited}"
    );

    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let produced = configmaps.get_opt(&generated_name(&slow)).await?;
    assert!(
        produced.is_some(),
        "the in-flight reconcile finished before the process exited"
    );
    Ok(())
}

/// The control plane's kubeconfig, acting as the ServiceAccount `namespace/name`.
fn kubeconfig_as(
    cp: &ControlPlane,
    namespace: &str,
    name: &str,
) -> anyhow::Result<std::path::PathBuf> {
    let original = std::fs::read_to_string(cp.kubeconfig())?;
    let token_line = original
        .lines()
        .find(|l| l.trim_start().starts_with("token:"))
        .expect("an admin token");
    let impersonation = format!(
        "{token_line}\n    as: system:serviceaccount:{namespace}:{name}\n    as-groups:\n    - system:serviceaccounts\n    - system:serviceaccounts:{namespace}\n    - system:authenticated"
    );
    let path = cp.dir().join(format!("kubeconfig-{name}"));
    std::fs::write(&path, original.replace(token_line, &impersonation))?;
    Ok(path)
}

/// Installs the example operator's chart as release `cmg` in `namespace`; waits for its CRD.
async fn install_chart(
    cp: &ControlPlane,
    namespace: &str,
    sa: &str,
    lease: &str,
) -> anyhow::Result<()> {
    let chart = concat!(env!("CARGO_MANIFEST_DIR"), "/../charts/configmap-generator");
    let installed = Command::new(Binaries::tool("helm")?)
        .args([
            "install",
            "cmg",
            chart,
            "--namespace",
            namespace,
            "--create-namespace",
            "--kubeconfig",
        ])
        .arg(cp.kubeconfig())
        .args([
            "--set",
            &format!("serviceAccount.name={sa}"),
            "--set",
            &format!("leaderElection.id={lease}"),
        ])
        .output()?;
    anyhow::ensure!(
        installed.status.success(),
        "helm install: {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let api: Api<ConfigMapGenerator> = Api::all(cp.client());
    wait_for(
        Duration::from_secs(30),
        "the chart's CRD to be served",
        || async { api.list(&ListParams::default()).await.ok().map(|_| ()) },
    )
    .await?;
    Ok(())
}

/// Starts the operator binary as the chart's ServiceAccount, with leader election on.
fn spawn_as_service_account(
    cp: &ControlPlane,
    namespace: &str,
    sa: &str,
    lease: &str,
    log: &std::path::Path,
) -> anyhow::Result<(Operator, SocketAddr)> {
    let (metrics, probes) = (free_addr()?, free_addr()?);
    let child = Command::new(env!("CARGO_BIN_EXE_configmap_generator"))
        .args([
            "--leader-elect",
            "--leader-election-id",
            lease,
            "--leader-election-namespace",
            namespace,
        ])
        .args([
            "--leader-election-lease-duration",
            "4s",
            "--leader-election-renew-deadline",
            "3s",
        ])
        .args(["--leader-election-retry-period", "500ms"])
        .args(["--metrics-bind-address", &metrics.to_string()])
        .args(["--health-probe-bind-address", &probes.to_string()])
        .env("KUBECONFIG", kubeconfig_as(cp, namespace, sa)?)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log)?)
        .spawn()?;
    Ok((Operator(child), metrics))
}

/// Waits until `/metrics` counts a successful reconcile; returns the page.
async fn scrape_after_success(metrics: SocketAddr) -> anyhow::Result<String> {
    let page = wait_for(
        Duration::from_secs(30),
        "/metrics to count a successful reconcile",
        || async {
            let body = scrape(metrics).await.ok()?;
            body.lines()
                .any(|l| {
                    l.starts_with("controller_runtime_reconcile_total")
                        && l.contains(r#"result="success""#)
                        && !l.ends_with(" 0")
                })
                .then_some(body)
        },
    )
    .await?;
    Ok(page)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_runs_on_exactly_the_charts_rbac_with_leader_election_and_never_gets_a_403()
-> anyhow::Result<()> {
    // A private control plane: the release takes ownership of the cluster-scoped CRD.
    if kubeward::testing::skip_on_existing_cluster(
        "a private control plane the release's CRD can belong to",
    ) {
        return Ok(());
    }
    let cp = ControlPlane::start().await?;
    let (release_ns, sa, lease) = ("operator-system", "cmg-operator", "cmg-leader");
    install_chart(&cp, release_ns, sa, lease).await?;
    let log_path = cp.dir().join("operator.log");
    let (mut operator, metrics) = spawn_as_service_account(&cp, release_ns, sa, lease, &log_path)?;

    let leases: Api<Lease> = Api::namespaced(cp.client(), release_ns);
    wait_for(
        Duration::from_secs(30),
        "the operator to take the Lease",
        || async { lease_holder(&leases, lease).await.ok()?.map(drop) },
    )
    .await?;

    let apps = cp.create_namespace("apps").await?;
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &apps);
    let sample = ConfigMapGenerator::new(
        "sample",
        ConfigMapGeneratorSpec {
            content: "rbac is enough".into(),
        },
    );
    generators.create(&PostParams::default(), &sample).await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &apps);
    wait_for(
        Duration::from_secs(30),
        "the operator, as its ServiceAccount, to produce the ConfigMap",
        || async { configmaps.get_opt(&generated_name(&sample)).await.ok()? },
    )
    .await?;
    let events: Api<Event> = Api::namespaced(cp.client(), &apps);
    wait_for(Duration::from_secs(30), "a Generated event", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("Generated"))
            .then_some(())
    })
    .await
    .map_err(|e| {
        anyhow::anyhow!(
            "{e}; operator log:\n{}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        )
    })?;
    let page = scrape_after_success(metrics).await?;
    assert!(
        page.contains(r#"leader_election_master_status{name="cmg-leader"} 1"#),
        "the leader reports itself"
    );

    let exited = terminate(&mut operator.0, Duration::from_secs(30)).await?;
    assert!(exited.success(), "exit status {exited}");
    let log = std::fs::read_to_string(&log_path)?;
    // A refusal reads `reason: "Forbidden", code: 403`; a bare "403" could be in a timestamp.
    assert!(
        !log.contains("code: 403") && !log.to_lowercase().contains("forbidden"),
        "the chart's RBAC was not enough:\n{log}"
    );
    assert_eq!(
        lease_holder(&leases, lease).await?,
        None,
        "a graceful shutdown releases the Lease"
    );
    Ok(())
}

#[test]
fn bad_flags_are_refused_with_a_clear_message_and_exit_code_2() -> anyhow::Result<()> {
    let cases: [(&[&str], &str); 3] = [
        (&["--metrics-bind-address", "eighty"], "is not an address"),
        (
            &["--leader-elect", "--leader-election-renew-deadline", "20s"],
            "must be greater than renew deadline",
        ),
        (&["--log-format", "xml"], "invalid value 'xml'"),
    ];
    for (args, message) in cases {
        let output = Command::new(env!("CARGO_BIN_EXE_configmap_generator"))
            .args(args)
            .output()?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?} must exit with code 2; stderr: {stderr}"
        );
        assert!(
            stderr.contains(message),
            "{args:?}: expected {message:?} in {stderr}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_apiserver_unreachable_it_keeps_retrying_unready_and_says_why()
-> anyhow::Result<()> {
    // A kubeconfig whose server is a port nothing listens on.
    let dead = free_addr()?;
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster:\n    server: http://{dead}\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: gone\n  context:\n    cluster: gone\n    user: u\ncurrent-context: gone\n"
        ),
    )?;
    let log = dir.path().join("operator.log");
    let probes = free_addr()?;
    let child = Command::new(env!("CARGO_BIN_EXE_configmap_generator"))
        .args([
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            &probes.to_string(),
        ])
        .env("KUBECONFIG", &kubeconfig)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()?;
    let mut operator = Operator(child);

    wait_for(
        Duration::from_secs(30),
        "the operator to log why it cannot list",
        || async {
            std::fs::read_to_string(&log)
                .ok()?
                .contains("API server unreachable; retrying with backoff")
                .then_some(())
        },
    )
    .await?;
    assert_eq!(
        status_of(probes, "/readyz").await,
        Some(503),
        "unready while nothing is cached"
    );
    assert_eq!(
        status_of(probes, "/healthz").await,
        Some(200),
        "alive: it keeps retrying"
    );
    assert!(
        operator.0.try_wait()?.is_none(),
        "it keeps running rather than exiting"
    );
    let exited = terminate(&mut operator.0, Duration::from_secs(30)).await?;
    assert!(exited.success(), "SIGTERM still stops it cleanly: {exited}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_during_a_graceful_shutdown_exits_at_once_with_code_1() -> anyhow::Result<()>
{
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("forced").await?;
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("operator.log");
    let child = Command::new(env!("CARGO_BIN_EXE_configmap_generator"))
        .args(["--namespace", &ns, "--metrics-bind-address", "0"])
        .args(["--health-probe-bind-address", "0"])
        .args(["--graceful-shutdown-timeout", "60s"])
        .env("KUBECONFIG", cp.kubeconfig())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()?;
    let mut operator = Operator(child);

    // A reconcile that takes 20 s keeps the graceful shutdown busy.
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let mut slow = ConfigMapGenerator::new(
        "slow",
        ConfigMapGeneratorSpec {
            content: "never mind".into(),
        },
    );
    slow.metadata.annotations = Some([(DELAY_ANNOTATION.to_owned(), "20".to_owned())].into());
    generators.create(&PostParams::default(), &slow).await?;
    wait_for(
        Duration::from_secs(30),
        "the slow reconcile to start (finalizer added)",
        || async {
            let g = generators.get("slow").await.ok()?;
            g.metadata
                .finalizers?
                .iter()
                .any(|f| f == FINALIZER)
                .then_some(())
        },
    )
    .await?;

    signal(&operator.0, "INT")?;
    wait_for(
        Duration::from_secs(10),
        "the operator to log that it is shutting down",
        || async {
            std::fs::read_to_string(&log)
                .ok()?
                .contains("shutting down; send it again")
                .then_some(())
        },
    )
    .await?;
    assert!(
        operator.0.try_wait()?.is_none(),
        "the first SIGINT waits for the 20 s reconcile"
    );

    signal(&operator.0, "INT")?;
    let exited = wait_for(
        Duration::from_secs(1),
        "the operator to exit within a second of the second SIGINT",
        || {
            let status = operator.0.try_wait().ok().flatten();
            async move { status }
        },
    )
    .await
    .map_err(|e| {
        anyhow::anyhow!(
            "{e}; log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    })?;
    assert_eq!(
        exited.code(),
        Some(1),
        "a forced shutdown exits with code 1"
    );
    let text = std::fs::read_to_string(&log)?;
    assert!(
        !text.contains('\x1b'),
        "text logs into a file carry no colour codes:\n{text}"
    );
    Ok(())
}

/// The log lines of a `--log-format=json` log, each parsed (the test fails on a line that is
/// not one JSON object).
fn json_lines(log: &str) -> Vec<serde_json::Value> {
    log.lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            assert!(value.is_object(), "not a JSON object: {line}");
            value
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_outage_logs_one_warning_a_few_summaries_and_one_line_when_it_is_back()
-> anyhow::Result<()> {
    const OUTAGE: Duration = Duration::from_secs(10);
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("outage").await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let dir = tempfile::tempdir()?;
    let kubeconfig = kubeconfig_through(cp, &proxy, dir.path())?;
    let (metrics, log) = (free_addr()?, dir.path().join("operator.log"));
    // With leader election: the elector's failed Lease requests (every 2 s) are the same
    // outage's, told by the same lines. Its renew deadline outlasts the outage, so it keeps
    // leading.
    let child = Command::new(env!("CARGO_BIN_EXE_configmap_generator"))
        .args(["--namespace", &ns, "--log-format", "json"])
        .args(["--leader-elect", "--leader-election-namespace", &ns])
        .args(["--leader-election-lease-duration", "60s"])
        .args(["--leader-election-renew-deadline", "40s"])
        .args(["--metrics-bind-address", &metrics.to_string()])
        .args(["--health-probe-bind-address", "0"])
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()?;
    let mut operator = Operator(child);
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let sample = ConfigMapGenerator::new(
        "before",
        ConfigMapGeneratorSpec {
            content: "up".into(),
        },
    );
    generators.create(&PostParams::default(), &sample).await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    wait_for(
        Duration::from_secs(30),
        "the operator to reconcile before the outage",
        || async { configmaps.get_opt(&generated_name(&sample)).await.ok()? },
    )
    .await?;
    // The outage hits an idle operator: the status and the reconcile's Event are written (the
    // Event by a task of its own, after the reconcile) and no reconcile runs or waits.
    let stored = wait_for(
        Duration::from_secs(30),
        "the status to be written",
        || async {
            let stored = generators.get("before").await.ok()?;
            stored.status.as_ref()?.observed_generation.map(|_| stored)
        },
    )
    .await?;
    wait_for(
        Duration::from_secs(30),
        "the reconcile's Event to be written",
        || async {
            let events = events_about(cp.client(), &stored).await.ok()?;
            events
                .iter()
                .any(|e| e.reason.as_deref() == Some("Generated"))
                .then_some(())
        },
    )
    .await?;
    wait_for(
        Duration::from_secs(30),
        "the operator to be idle",
        || async {
            let page = scrape(metrics).await.ok()?;
            let idle = |family: &str| {
                page.lines()
                    .filter(|l| l.starts_with(family))
                    .all(|l| l.ends_with(" 0"))
            };
            (idle("controller_runtime_active_workers{") && idle("workqueue_depth{")).then_some(())
        },
    )
    .await?;

    proxy.cut();
    tokio::time::sleep(OUTAGE).await; // the outage itself: its length is what is under test
    let failed_requests = |page: &str| -> f64 {
        page.lines()
            .filter(|l| l.starts_with("rest_client_requests_total{code=\"<error>\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let during = scrape(metrics).await.unwrap_or_default();
    proxy.restore();
    let back = wait_for(
        Duration::from_secs(60),
        "the operator to log that the API server is back",
        || async {
            let text = std::fs::read_to_string(&log).ok()?;
            text.contains("API server reachable again").then_some(text)
        },
    )
    .await?;
    let exited = terminate(&mut operator.0, Duration::from_secs(30)).await?;
    assert!(exited.success(), "exit status {exited}");

    assert_outage_lines(&back, failed_requests(&during), OUTAGE);
    Ok(())
}

/// The log of an outage of `outage` during which `failed` requests failed: a warning when it
/// began, at most one summary per backoff step, one line when it was over; each line JSON.
fn assert_outage_lines(back: &str, failed: f64, outage: Duration) {
    let lines = json_lines(back);
    let level = |l: &serde_json::Value| l["level"].as_str().unwrap_or_default().to_owned();
    let loud: Vec<_> = lines
        .iter()
        .filter(|l| matches!(level(l).as_str(), "WARN" | "ERROR"))
        .collect();
    // Informers back off from 0.8 s, doubling with jitter: within 10 s each fails about four
    // times (more requests than lines); the lines are one warning when the outage begins and at
    // most one summary per backoff step.
    assert!(
        failed >= 4.0,
        "the outage made requests fail: {failed} counted by rest_client_requests_total"
    );
    assert!(
        (1..=6).contains(&loud.len()),
        "{} WARN/ERROR lines for a {outage:?} outage with {failed} failed requests:\n{back}",
        loud.len()
    );
    assert!(
        loud.iter().all(|l| !l["target"]
            .as_str()
            .unwrap_or_default()
            .starts_with("kube_client")),
        "kube's per-request errors are quiet:\n{back}"
    );
    assert_eq!(
        loud[0]["message"], "API server unreachable; retrying with backoff",
        "the first line names the outage: {}",
        loud[0]
    );
    assert!(
        loud[0]["error"].as_str().is_some_and(|e| !e.is_empty()),
        "with the error: {}",
        loud[0]
    );
    let recovered: Vec<_> = lines
        .iter()
        .filter(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("API server reachable again"))
        })
        .collect();
    assert_eq!(recovered.len(), 1, "one line when it is back:\n{back}");
    let down_for = recovered[0]["down_for_seconds"]
        .as_f64()
        .unwrap_or_default();
    assert!(
        down_for >= outage.as_secs_f64() - 1.0,
        "it tells how long the API server was gone: {}",
        recovered[0]
    );
}

/// A kubeconfig with one context, `here`, whose cluster is `cluster` (indented YAML lines).
fn kubeconfig_with(cluster: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n{cluster}users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: here\n  context:\n    cluster: c\n    user: u\ncurrent-context: here\n"
    )
}

/// Runs the operator with `args` and `KUBECONFIG` set to `kubeconfig` (unset when `None`), with
/// a `HOME` without `.kube` and outside a pod; checks that it exits with code 2 and prints one
/// line containing `expected`.
fn refused_in_one_line(
    args: &[String],
    kubeconfig: Option<&std::path::Path>,
    expected: &str,
) -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let mut command = Command::new(env!("CARGO_BIN_EXE_configmap_generator"));
    command
        .args(args)
        .env("HOME", home.path())
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBECONFIG");
    if let Some(path) = kubeconfig {
        command.env("KUBECONFIG", path);
    }
    let output = command.output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let case = format!("{args:?} with KUBECONFIG {kubeconfig:?}");
    assert_eq!(output.status.code(), Some(2), "{case}: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{case}: one line, got {stderr}");
    assert!(
        lines[0].contains(expected),
        "{case}: expected {expected:?} in {stderr}"
    );
    Ok(())
}

#[test]
fn a_missing_or_malformed_kubeconfig_or_an_unknown_context_is_one_line_naming_it()
-> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let missing = dir.path().join("nowhere.yaml");
    let malformed = dir.path().join("malformed.yaml");
    std::fs::write(&malformed, "clusters: [unclosed\n")?;
    let good = dir.path().join("good.yaml");
    std::fs::write(&good, kubeconfig_with("    server: http://127.0.0.1:9\n"))?;
    let cases: [(Vec<String>, String); 4] = [
        (
            vec!["--kubeconfig".into(), missing.display().to_string()],
            format!("--kubeconfig {}: cannot read it", missing.display()),
        ),
        (
            vec!["--kubeconfig".into(), malformed.display().to_string()],
            format!(
                "--kubeconfig {}: not a valid kubeconfig",
                malformed.display()
            ),
        ),
        (
            vec![
                "--kubeconfig".into(),
                good.display().to_string(),
                "--context".into(),
                "elsewhere".into(),
            ],
            format!(
                "--context elsewhere: no such context in {} (it has: here)",
                good.display()
            ),
        ),
        (
            vec!["--context".into(), "elsewhere".into()],
            "--context elsewhere: no such context in the kubeconfig (it has: here)".into(),
        ),
    ];
    for (args, expected) in cases {
        refused_in_one_line(&args, Some(&good), &expected)?;
    }
    Ok(())
}

#[test]
fn no_kubeconfig_a_missing_kubeconfig_variable_or_a_missing_ca_file_is_one_line_saying_what_to_do()
-> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let missing = dir.path().join("nowhere.yaml");
    let (ca, no_ca) = (dir.path().join("ca.crt"), dir.path().join("no-ca.yaml"));
    let cluster = format!(
        "    server: https://127.0.0.1:9\n    certificate-authority: {}\n",
        ca.display()
    );
    std::fs::write(&no_ca, kubeconfig_with(&cluster))?;
    let unusable = "error: no usable Kubernetes client configuration:";
    let fix = "; pass --kubeconfig PATH, set KUBECONFIG, or run in a pod with a service account";
    // (flags, KUBECONFIG, the line expected)
    let cases: [(Vec<String>, Option<&std::path::Path>, String); 4] = [
        (
            vec![],
            Some(&missing),
            format!(
                "{unusable} KUBECONFIG={}: cannot read it: No such file or directory (os error 2){fix}",
                missing.display()
            ),
        ),
        (
            vec![],
            None,
            format!(
                "{unusable} no kubeconfig (KUBECONFIG is unset and ~/.kube/config does not \
                 exist) and not in a pod (KUBERNETES_SERVICE_HOST is unset){fix}"
            ),
        ),
        (
            vec![],
            Some(&no_ca),
            format!(
                "{unusable} KUBECONFIG={}: its certificate authority {}: cannot read it",
                no_ca.display(),
                ca.display()
            ),
        ),
        (
            vec!["--kubeconfig".into(), no_ca.display().to_string()],
            None,
            format!(
                "{unusable} --kubeconfig {}: its certificate authority {}: cannot read it",
                no_ca.display(),
                ca.display()
            ),
        ),
    ];
    for (args, kubeconfig, expected) in cases {
        refused_in_one_line(&args, kubeconfig, &expected)?;
    }
    Ok(())
}

/// Starts the operator binary as shard `id` of its controller's ring, watching `apps`, with
/// its shard and leader Leases in `system`.
fn spawn_shard(
    cp: &ControlPlane,
    system: &str,
    apps: &str,
    id: &str,
    log: &std::path::Path,
) -> anyhow::Result<Operator> {
    let child = Command::new(env!("CARGO_BIN_EXE_configmap_generator"))
        .args(["--leader-elect", "--leader-election-id", "sharder"])
        .args(["--leader-election-namespace", system])
        .args(["--leader-election-lease-duration", "4s"])
        .args(["--leader-election-renew-deadline", "3s"])
        .args(["--leader-election-retry-period", "500ms"])
        .args(["--shard-ring", "configmap-generator", "--shard-id", id])
        .args(["--watch-namespaces", apps])
        .args(["--metrics-bind-address", "0"])
        .args(["--health-probe-bind-address", "0"])
        .env("KUBECONFIG", cp.kubeconfig())
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log)?)
        .spawn()?;
    Ok(Operator(child))
}

/// The shard label of every generator in `api` whose ConfigMap holds its current content.
async fn produced_by_shard(
    api: &Api<ConfigMapGenerator>,
    configmaps: &Api<ConfigMap>,
) -> anyhow::Result<Vec<(String, Option<String>)>> {
    let label = kubeward::sharding::shard_label("configmap-generator");
    let made: std::collections::HashMap<String, String> = configmaps
        .list(&ListParams::default())
        .await?
        .into_iter()
        .filter_map(|cm| {
            let content = cm.data?.remove("content")?;
            Some((cm.metadata.name?, content))
        })
        .collect();
    Ok(api
        .list(&ListParams::default())
        .await?
        .into_iter()
        .filter(|g| made.get(&generated_name(g)) == Some(&g.spec.content))
        .map(|g| {
            let shard = g
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(&label))
                .cloned();
            (g.metadata.name.unwrap_or_default(), shard)
        })
        .collect())
}

/// Creates generators `g-0`.. `g-{n-1}` with `content`, or sets it on existing ones.
async fn write_generators(
    api: &Api<ConfigMapGenerator>,
    n: usize,
    content: &str,
    create: bool,
) -> anyhow::Result<()> {
    for i in 0..n {
        let name = format!("g-{i}");
        if create {
            let spec = ConfigMapGeneratorSpec {
                content: content.into(),
            };
            api.create(
                &PostParams::default(),
                &ConfigMapGenerator::new(&name, spec),
            )
            .await?;
        } else {
            let patch = serde_json::json!({ "spec": { "content": content } });
            let params = kube::api::PatchParams::default();
            api.patch(&name, &params, &kube::api::Patch::Merge(&patch))
                .await?;
        }
    }
    Ok(())
}

/// `Some` once every generator in `api` is labelled with one of `shards`.
async fn all_on(api: &Api<ConfigMapGenerator>, shards: &[&str]) -> Option<()> {
    let label = kubeward::sharding::shard_label("configmap-generator");
    let list = api.list(&ListParams::default()).await.ok()?;
    list.items
        .iter()
        .all(|g| {
            let shard = g.metadata.labels.as_ref().and_then(|l| l.get(&label));
            shard.is_some_and(|s| shards.contains(&s.as_str()))
        })
        .then_some(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_shard_processes_share_the_generators_and_a_killed_ones_move_within_its_lease()
-> anyhow::Result<()> {
    const GENERATORS: usize = 120;
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let (system, apps) = (
        cp.create_namespace("shards").await?,
        cp.create_namespace("sharded-apps").await?,
    );
    let dir = tempfile::tempdir()?;
    let mut shards = Vec::new();
    for id in ["shard-a", "shard-b", "shard-c"] {
        let log = dir.path().join(format!("{id}.log"));
        shards.push((id, spawn_shard(cp, &system, &apps, id, &log)?, log));
    }
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &apps);
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &apps);
    write_generators(&generators, GENERATORS, "first", true).await?;
    let logs = |shards: &[(&str, Operator, std::path::PathBuf)]| {
        shards
            .iter()
            .map(|(id, _, log)| {
                format!(
                    "{id}:\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let all_three = ["shard-a", "shard-b", "shard-c"].map(String::from);
    let placed = wait_for(
        Duration::from_secs(60),
        "every generator produced and labelled with one of the three shards",
        || async {
            let done = produced_by_shard(&generators, &configmaps).await.ok()?;
            let assigned = done
                .iter()
                .filter(|(_, s)| s.as_ref().is_some_and(|s| all_three.contains(s)))
                .count();
            (done.len() == GENERATORS && assigned == GENERATORS).then_some(done)
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e}\n{}", logs(&shards)))?;
    for shard in &all_three {
        let share = placed
            .iter()
            .filter(|(_, s)| s.as_ref() == Some(shard))
            .count();
        // A third is 40; consistent hashing of 120 names spreads them less evenly than of 3,000.
        assert!(
            (20..=60).contains(&share),
            "{shard} holds {share} of {GENERATORS}"
        );
    }

    // SIGKILL the third shard: no release, no goodbye. Its generators must go to the others
    // once its 4 s Lease has expired (the sharder may have died with it and be re-elected).
    let (_, mut killed, _) = shards.pop().expect("three shards");
    let killed_at = tokio::time::Instant::now();
    killed.0.kill()?;
    killed.0.wait()?;
    wait_for(
        Duration::from_secs(30),
        "every generator assigned to a live shard",
        || all_on(&generators, &["shard-a", "shard-b"]),
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e}\n{}", logs(&shards)))?;
    let moved_after = killed_at.elapsed();
    assert!(
        moved_after <= Duration::from_secs(4 + 5),
        "the dead shard's generators were reassigned {moved_after:?} after it was killed"
    );
    // And the survivors reconcile them: a change to every generator reaches its ConfigMap.
    write_generators(&generators, GENERATORS, "second", false).await?;
    wait_for(
        Duration::from_secs(60),
        "every generator's change produced by a live shard",
        || async {
            let done = produced_by_shard(&generators, &configmaps).await.ok()?;
            (done.len() == GENERATORS).then_some(())
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e}\n{}", logs(&shards)))?;
    for (_, operator, _) in &mut shards {
        let exited = terminate(&mut operator.0, Duration::from_secs(30)).await?;
        assert!(
            exited.success(),
            "a shard exits cleanly on SIGTERM: {exited}"
        );
    }
    Ok(())
}
