//! What the example operator logs when the API server is gone with work queued or refuses its
//! token, and how soon it notices a connection that died without a word.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kubeward::testing::{
    ControlPlane, TcpProxy, free_addr, install_definition, scrape, terminate, wait_for,
};
use kubeward_examples::by_hand::generated_name;
use kubeward_examples::configmap_generator::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, DELAY_ANNOTATION,
};

use super::{Operator, json_lines, kubeconfig_through};

/// How many generators wait in the queue when the outage begins.
const QUEUED: usize = 100;

/// Starts the example operator on `ns` with leader election, its JSON log in `log`; `lease`
/// adds Lease timings.
fn spawn(
    kubeconfig: &Path,
    ns: &str,
    metrics: &str,
    lease: &[&str],
    log: &Path,
) -> anyhow::Result<Operator> {
    let child = Command::new(env!("CARGO_BIN_EXE_configmap_generator"))
        .args(["--namespace", ns, "--log-format", "json"])
        .args(["--leader-elect", "--leader-election-namespace", ns])
        .args(lease)
        .args(["--metrics-bind-address", metrics])
        .args(["--health-probe-bind-address", "0"])
        .env("KUBECONFIG", kubeconfig)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log)?)
        .spawn()?;
    Ok(Operator(child))
}

/// The WARN and ERROR lines of a JSON log.
fn loud(log: &str) -> Vec<serde_json::Value> {
    json_lines(log)
        .into_iter()
        .filter(|l| matches!(l["level"].as_str(), Some("WARN" | "ERROR")))
        .collect()
}

/// Creates [`QUEUED`] generators whose reconciles take a second each.
async fn create_slow_generators(generators: &Api<ConfigMapGenerator>) -> anyhow::Result<()> {
    for i in 0..QUEUED {
        let mut generator = ConfigMapGenerator::new(
            &format!("g{i}"),
            ConfigMapGeneratorSpec {
                content: "queued".into(),
            },
        );
        generator.metadata = ObjectMeta {
            name: Some(format!("g{i}")),
            annotations: Some([(DELAY_ANNOTATION.to_owned(), "1".to_owned())].into()),
            ..ObjectMeta::default()
        };
        generators
            .create(&PostParams::default(), &generator)
            .await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_with_a_hundred_reconciles_queued_logs_a_few_lines_and_how_many_waited()
-> anyhow::Result<()> {
    const OUTAGE: Duration = Duration::from_secs(10);
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("queued").await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let dir = tempfile::tempdir()?;
    let kubeconfig = kubeconfig_through(cp, &proxy, dir.path())?;
    let (metrics, log) = (free_addr()?, dir.path().join("operator.log"));
    // The renew deadline outlasts the outage, so it keeps leading through it.
    let lease = [
        "--leader-election-lease-duration=60s",
        "--leader-election-renew-deadline=40s",
    ];
    let mut operator = spawn(&kubeconfig, &ns, &metrics.to_string(), &lease, &log)?;

    // A reconcile takes a second (the delay annotation) and one runs at a time, so the queue
    // holds nearly all of them when the outage begins.
    create_slow_generators(&Api::namespaced(cp.client(), &ns)).await?;
    let depth = || async {
        let page = scrape(metrics).await.ok()?;
        let depth: f64 = page
            .lines()
            .filter(|l| l.starts_with("workqueue_depth{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        Some(depth)
    };
    wait_for(
        Duration::from_secs(60),
        "the operator to lead and queue the generators",
        || async { depth().await.filter(|d| *d >= 90.0) },
    )
    .await?;

    proxy.cut();
    // What is still queued as the server goes away (/metrics is not behind the proxy): each of
    // these reconciles meets the outage and waits for the server. On a busy machine a few more
    // may finish between the wait above and the cut.
    let queued = depth().await.unwrap_or_default();
    tokio::time::sleep(OUTAGE).await; // the outage itself: its length is what is under test
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
    // The reconciles that waited go on: more ConfigMaps appear after the outage.
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let made = configmaps.list(&ListParams::default()).await?.items.len();
    wait_for(
        Duration::from_secs(60),
        "the waiting reconciles to go on once the server is back",
        || async {
            let now = configmaps
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .len();
            (now >= made + 3).then_some(())
        },
    )
    .await?;
    let exited = terminate(&mut operator.0, Duration::from_secs(30)).await?;
    assert!(exited.success(), "exit status {exited}");

    let lines = loud(&back);
    let total = back.lines().count();
    // The figure the reliability page quotes (before this behaviour: thousands of lines).
    eprintln!(
        "{OUTAGE:?} outage, {QUEUED} reconciles queued: {} WARN/ERROR lines, {total} lines in all",
        lines.len()
    );
    let report = format!("{} WARN/ERROR lines:\n{back}", lines.len());
    assert!(
        lines.iter().all(|l| l["message"] != "reconcile failed"
            && !l["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("could not")),
        "a reconcile that failed for the outage is neither logged nor reported: {report}"
    );
    // One warning when it began and summaries ever further apart (at 2, 4, 8 s at most).
    assert!((1..=6).contains(&lines.len()), "{report}");
    let recovered = json_lines(&back)
        .into_iter()
        .find(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("API server reachable again"))
        })
        .expect("the line was waited for");
    let waiting = recovered["waiting_reconciles"].as_u64().unwrap_or_default();
    eprintln!("{queued} reconciles queued at the cut, {waiting} waited for the server");
    // The reconcile that was running at the cut may have finished its writes before it.
    assert!(
        waiting as f64 + 1.0 >= queued && queued >= 80.0,
        "the line saying the server is back counts the {queued} reconciles queued at the cut as \
         waiting: {recovered}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_is_one_short_line_with_the_code_and_reason() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("token").await?;
    let dir = tempfile::tempdir()?;
    let original = std::fs::read_to_string(cp.kubeconfig())?;
    let wrong: String = original
        .lines()
        .map(|line| match line.split_once("token: ") {
            Some((indent, _)) => format!("{indent}token: not-the-token\n"),
            None => format!("{line}\n"),
        })
        .collect();
    anyhow::ensure!(wrong != original, "the kubeconfig has a token to replace");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, wrong)?;
    let log = dir.path().join("operator.log");
    // The default timings: on SIGTERM it tries to release the Lease for one renew deadline.
    let mut operator = spawn(&kubeconfig, &ns, "0", &[], &log)?;

    // The informer retries after 0.8, 1.6 and 3.2 s, the elector every 2 s.
    let text = wait_for(
        Duration::from_secs(30),
        "the informer to fail three times",
        || async {
            let text = std::fs::read_to_string(&log).ok()?;
            (text.matches("list failed; retrying").count() >= 3).then_some(text)
        },
    )
    .await?;
    let exited = terminate(&mut operator.0, Duration::from_secs(30)).await?;
    assert!(exited.success(), "exit status {exited}");

    let lines = loud(&text);
    assert!(!lines.is_empty(), "the refusal is logged:\n{text}");
    for line in &lines {
        let error = line["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with("401 Unauthorized") && error.len() < 100,
            "the code and reason, not the whole status: {line}"
        );
    }
    let elector = lines
        .iter()
        .filter(|l| l["lease"].as_str().is_some())
        .count();
    assert_eq!(
        elector, 1,
        "the elector says it once, not every 2 s:\n{text}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_made_after_the_connection_died_without_a_word_is_reconciled_within_a_minute()
-> anyhow::Result<()> {
    // The default health checks ping a connection that read nothing for 30 s and close it when
    // the ping is unanswered 15 s later; the watches then reconnect (0.8 s backoff), list, and
    // the change is reconciled. Without them, the watch waits for its 320 s idle timeout.
    const BOUND: Duration = Duration::from_secs(60);
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("silent").await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let dir = tempfile::tempdir()?;
    let kubeconfig = kubeconfig_through(cp, &proxy, dir.path())?;
    let (metrics, log) = (free_addr()?, dir.path().join("operator.log"));
    // The Lease requests wait on the dead connection too; a renew deadline longer than the
    // health checks' bound keeps the leader leading until they move to a new one.
    let lease = [
        "--leader-election-lease-duration=90s",
        "--leader-election-renew-deadline=60s",
    ];
    let mut operator = spawn(&kubeconfig, &ns, &metrics.to_string(), &lease, &log)?;
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let generator = |name: &str| {
        ConfigMapGenerator::new(
            name,
            ConfigMapGeneratorSpec {
                content: name.into(),
            },
        )
    };
    let before = generator("before");
    generators.create(&PostParams::default(), &before).await?;
    wait_for(
        Duration::from_secs(60),
        "the operator to lead and reconcile before the connection dies",
        || async { configmaps.get_opt(&generated_name(&before)).await.ok()? },
    )
    .await?;

    proxy.strand();
    let died = tokio::time::Instant::now();
    let after = generator("after");
    generators.create(&PostParams::default(), &after).await?;
    wait_for(
        BOUND,
        "a change made after the connection died to be reconciled",
        || async { configmaps.get_opt(&generated_name(&after)).await.ok()? },
    )
    .await
    .map_err(|e| {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        anyhow::anyhow!("{e}; the operator's log:\n{text}")
    })?;
    let took = died.elapsed();
    eprintln!("reconciled {took:?} after the connection died without a word");
    assert!(
        operator.0.try_wait()?.is_none(),
        "it kept leading and running"
    );
    let exited = terminate(&mut operator.0, Duration::from_secs(30)).await?;
    assert!(exited.success(), "exit status {exited}");
    Ok(())
}
