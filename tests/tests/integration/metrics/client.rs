//! The manager's own client counts and times its requests as client-go's `rest_client_*` families.

use std::net::SocketAddr;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kubeward::manager::{Config, Manager};
use kubeward::metrics::REST_CLIENT_DURATION_BUCKETS;
use kubeward::serving::{BindAddress, Endpoints};
use kubeward::testing::{ControlPlane, free_addr, wait_for};

use super::scrape::{Scrape, scrape};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_managers_client_counts_its_requests_by_code_method_and_host_in_metrics()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("rest-client").await?;
    let addr: SocketAddr = free_addr()?;
    let manager = Manager::new(cp.config(), Config::default())?;
    manager.add(Endpoints::new().metrics(BindAddress::On(addr)))?;
    let configmaps: Api<ConfigMap> = Api::namespaced(manager.client(), &ns);
    let one = ConfigMap {
        metadata: ObjectMeta {
            name: Some("one".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    configmaps.create(&PostParams::default(), &one).await?;
    for _ in 0..3 {
        configmaps.list(&ListParams::default()).await?;
    }
    assert!(
        configmaps.get("missing").await.is_err(),
        "no such ConfigMap"
    );

    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let page: Scrape = wait_for(
        std::time::Duration::from_secs(10),
        "/metrics to answer",
        || scrape(addr),
    )
    .await?;
    token.cancel();
    run.await??;

    let host = cp.apiserver_addr().to_string();
    let count = |code: &str, method: &str| {
        page.value(
            "rest_client_requests_total",
            &[("code", code), ("method", method), ("host", &host)],
        )
    };
    assert_eq!(count("201", "POST"), Some(1.0), "{}", page.text);
    // Three lists; a GET of the namespace's ConfigMaps is a list on the wire.
    assert_eq!(count("200", "GET"), Some(3.0), "{}", page.text);
    assert_eq!(count("404", "GET"), Some(1.0), "{}", page.text);
    let timed = page.value(
        "rest_client_request_duration_seconds_count",
        &[("verb", "GET"), ("host", &host)],
    );
    assert_eq!(timed, Some(4.0), "every GET is timed: {}", page.text);
    let bounds: Vec<f64> = page
        .matching(
            "rest_client_request_duration_seconds_bucket",
            &[("verb", "GET")],
        )
        .filter_map(|s| s.labels.get("le")?.parse().ok())
        .filter(|b: &f64| b.is_finite())
        .collect();
    assert_eq!(bounds, REST_CLIENT_DURATION_BUCKETS, "client-go's buckets");
    Ok(())
}
