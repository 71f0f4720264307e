//! Builds the manager's client with its metrics layer and connection health checks.

use super::Error;
use super::transport::{self, HealthChecks};
use crate::metrics::Metrics;

/// A client for `config` whose requests are counted in `metrics`' `rest_client_*` families and
/// whose connections are health-checked with `checks`.
pub(crate) fn build_client(
    config: kube::Config,
    checks: HealthChecks,
    metrics: &Metrics,
) -> Result<kube::Client, Error> {
    let host = config
        .cluster_url
        .authority()
        .map(ToString::to_string)
        .unwrap_or_default();
    let builder =
        transport::builder(config, checks).map_err(|e| Error::ClientConfig(Box::new(e)))?;
    Ok(builder.with_layer(&metrics.client_layer(&host)).build())
}
