//! The local control plane is real: it stores objects, enforces RBAC and cleans up after itself.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::testing::{ControlPlane, TcpProxy, wait_for};

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

#[tokio::test]
async fn a_config_map_is_stored_and_an_unbound_service_account_is_forbidden() -> anyhow::Result<()>
{
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("rbac").await?;

    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    admin
        .create(&PostParams::default(), &config_map("stored", "hello"))
        .await?;
    let read = admin.get("stored").await?;
    assert_eq!(
        read.data
            .unwrap_or_default()
            .get("value")
            .map(String::as_str),
        Some("hello")
    );

    let unbound: Api<ConfigMap> = Api::namespaced(cp.service_account_client(&ns, "nobody"), &ns);
    match unbound.get("stored").await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403, "expected Forbidden, got {status:?}");
        }
        other => panic!("an unbound ServiceAccount must be forbidden, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn two_control_planes_run_side_by_side_without_sharing_state() -> anyhow::Result<()> {
    if kubeward::testing::skip_on_existing_cluster("two local control planes") {
        return Ok(());
    }
    let (first, second) = tokio::try_join!(ControlPlane::start(), ControlPlane::start())?;
    assert_ne!(first.server_url(), second.server_url());
    assert_ne!(first.etcd_url(), second.etcd_url());

    let in_first: Api<ConfigMap> = Api::namespaced(first.client(), "default");
    in_first
        .create(&PostParams::default(), &config_map("only-in-first", "1"))
        .await?;
    let in_second: Api<ConfigMap> = Api::namespaced(second.client(), "default");
    assert!(
        in_second.get_opt("only-in-first").await?.is_none(),
        "the second control plane saw the first one's object"
    );
    assert!(in_first.get_opt("only-in-first").await?.is_some());
    Ok(())
}

/// Processes whose command line mentions `dir` (every etcd and kube-apiserver flag names it).
fn processes_using(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter_map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline
                .contains(&needle)
                .then(|| format!("{}: {cmdline}", e.file_name().to_string_lossy()))
        })
        .collect()
}

#[test]
fn a_control_plane_dropped_by_a_panicking_test_leaves_no_process_behind() {
    if kubeward::testing::skip_on_existing_cluster("the processes of a local control plane") {
        return;
    }
    let (dir_tx, dir_rx) = std::sync::mpsc::channel();
    let outcome = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        runtime.block_on(async move {
            let cp = ControlPlane::start()
                .await
                .expect("the control plane starts");
            dir_tx
                .send(cp.dir().to_owned())
                .expect("the test thread listens");
            assert!(
                !processes_using(cp.dir()).is_empty(),
                "etcd and kube-apiserver run while the test runs"
            );
            panic!("the test fails while holding the control plane");
        })
    })
    .join();
    assert!(outcome.is_err(), "the inner test was meant to panic");
    let dir = dir_rx
        .recv()
        .expect("the control plane started before the panic");
    let left = processes_using(&dir);
    assert!(
        left.is_empty(),
        "processes outlived the panicking test: {left:?}"
    );
    assert!(
        !dir.exists(),
        "the temporary folder {} was not removed",
        dir.display()
    );
}

#[tokio::test]
async fn the_proxy_cuts_stalls_and_restores_traffic_to_the_apiserver() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("proxy").await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let through: Api<ConfigMap> = Api::namespaced(cp.client_through(&proxy), &ns);
    let direct: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    direct
        .create(&PostParams::default(), &config_map("seen", "1"))
        .await?;

    assert!(
        through.get_opt("seen").await?.is_some(),
        "the proxy forwards while open"
    );
    assert!(proxy.connections_accepted() >= 1);

    proxy.cut();
    assert!(
        through.get_opt("seen").await.is_err(),
        "a cut proxy lets no request through"
    );

    proxy.stall();
    let stalled = tokio::time::timeout(Duration::from_secs(2), through.get_opt("seen")).await;
    assert!(
        stalled.is_err(),
        "a stalled request must hang, not answer: {stalled:?}"
    );

    proxy.restore();
    let restored = wait_for(
        Duration::from_secs(20),
        "a request through the restored proxy",
        || async { through.get_opt("seen").await.ok().flatten() },
    )
    .await?;
    assert_eq!(restored.metadata.name.as_deref(), Some("seen"));
    Ok(())
}
