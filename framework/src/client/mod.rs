//! The manager's client: kube's stack over HTTP/2, health-checked, each request counted and spanned.

mod request_span;
mod transport;

pub(crate) use self::transport::HealthChecks;
use crate::metrics::Metrics;

/// A client for `config` whose requests are counted in `metrics`' `rest_client_*` families and
/// whose connections are health-checked with `checks`.
///
/// # Errors
/// kube's, when no client can be built for `config` (e.g. a TLS setting that does not load).
pub(crate) fn build_client(
    config: kube::Config,
    checks: HealthChecks,
    metrics: &Metrics,
) -> Result<kube::Client, kube::Error> {
    let host = config
        .cluster_url
        .authority()
        .map(ToString::to_string)
        .unwrap_or_default();
    let builder = transport::builder(config, checks)?;
    Ok(builder.with_layer(&metrics.client_layer(&host)).build())
}

#[cfg(test)]
mod tests;
