//! Counts what a run did on the API server's side, never from the side's own bookkeeping.
//!
//! Duplicates: a list of the copies through the direct client (no proxy). Conflicts: the
//! difference of kube-apiserver's `apiserver_request_total{code="409",resource="configmaps"}`
//! across a run (runs are one at a time, and in the runs only the reconcilers' writes can meet
//! a 409: the workload's merge patches carry no resourceVersion).

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ListParams;
use kube::{Api, Client};

use crate::workload::SOURCES;

/// How many copies the copier made beyond one per source, listed without the proxy.
pub async fn duplicates(api: &Api<ConfigMap>) -> anyhow::Result<usize> {
    let copies = api.list(&ListParams::default().labels("copy-of")).await?;
    Ok(copies.items.len().saturating_sub(SOURCES))
}

/// How many requests on ConfigMaps kube-apiserver answered with 409 since it started.
pub async fn conflicts_so_far(client: &Client) -> anyhow::Result<u64> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client
        .request_text(request)
        .await
        .context("reading kube-apiserver's /metrics")?;
    let mut total = 0.0;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        if labels.contains("code=\"409\"") && labels.contains("resource=\"configmaps\"") {
            total += value.trim().parse::<f64>().unwrap_or(0.0);
        }
    }
    Ok(total as u64)
}
