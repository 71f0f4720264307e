//! The example operator binary as a child process: readiness follows its cache, SIGTERM drains.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::testing::{ControlPlane, TcpProxy, install_crd, wait_for};
use kubeward_examples::configmap_generator::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, DELAY_ANNOTATION, FINALIZER, generated_name,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// The status line of `GET path`, or `None` while nothing answers.
async fn status_of(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    response.split_whitespace().nth(1)?.parse().ok()
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
    let path = dir.join("kubeconfig");
    std::fs::write(&path, rewritten)?;
    Ok(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_follows_the_cache_and_sigterm_lets_a_slow_reconcile_finish() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_crd::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("binary").await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let kubeconfig = kubeconfig_through(cp, &proxy, cp.dir())?;
    let (metrics, probes) = (free_addr(), free_addr());

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
        annotations: Some([(DELAY_ANNOTATION.to_owned(), "3s".to_owned())].into()),
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

    let pid = operator.0.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status()?;
    assert!(killed.success(), "SIGTERM was delivered");
    let exited = wait_for(
        Duration::from_secs(25),
        "the operator to exit after SIGTERM",
        || {
            let status = operator.0.try_wait().ok().flatten();
            async move { status }
        },
    )
    .await?;
    assert!(
        exited.success(),
        "the operator must exit 0 after a graceful shutdown, got {exited}"
    );

    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(cp.client(), &ns);
    let produced = configmaps.get_opt(&generated_name(&slow)).await?;
    assert!(
        produced.is_some(),
        "the in-flight reconcile finished before the process exited"
    );
    Ok(())
}
