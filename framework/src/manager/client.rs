//! Finds the client configuration (`--kubeconfig`, `--context`, or inferred) and builds the
//! manager's client with its metrics layer.

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

use super::Error;
use crate::metrics::Metrics;

/// Checks that `kubeconfig` reads and parses and that `context` is one of its contexts (or of
/// the kubeconfig `KUBECONFIG` or `~/.kube/config` names, without `kubeconfig`), so that a
/// mistake is reported in one line naming the file or the context.
///
/// # Errors
/// [`Error::InvalidFlags`] naming the file or context.
pub(crate) fn check_kubeconfig(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<(), Error> {
    let loaded = match kubeconfig {
        Some(path) => Kubeconfig::read_from(path).map_err(|e| {
            Error::InvalidFlags(format!("--kubeconfig {}: {}", path.display(), reason(&e)))
        })?,
        None => match context {
            Some(_) => Kubeconfig::read().map_err(|e| {
                Error::InvalidFlags(format!(
                    "--context needs a kubeconfig (KUBECONFIG or ~/.kube/config): {}",
                    reason(&e)
                ))
            })?,
            None => return Ok(()),
        },
    };
    if let Some(context) = context
        && !loaded.contexts.iter().any(|c| c.name == context)
    {
        let known: Vec<&str> = loaded.contexts.iter().map(|c| c.name.as_str()).collect();
        let file =
            kubeconfig.map_or_else(|| "the kubeconfig".to_owned(), |p| p.display().to_string());
        return Err(Error::InvalidFlags(format!(
            "--context {context}: no such context in {file} (it has: {})",
            known.join(", ")
        )));
    }
    Ok(())
}

/// The client configuration: from `kubeconfig` (else `KUBECONFIG` or `~/.kube/config`) with
/// `context` (else the current one), or inferred (kubeconfig, else in-cluster) when both are
/// unset.
pub(crate) async fn client_config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Config, Error> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let loaded = Kubeconfig::read_from(path).map_err(kube::Error::InferKubeconfig);
            match loaded {
                Ok(loaded) => kube::Config::from_custom_kubeconfig(loaded, &options)
                    .await
                    .map_err(kube::Error::InferKubeconfig),
                Err(e) => Err(e),
            }
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(kube::Error::InferKubeconfig),
        None => kube::Config::infer()
            .await
            .map_err(kube::Error::InferConfig),
    };
    config.map_err(|e| Error::ClientConfig(Box::new(e)))
}

/// A client for `config` whose requests are counted in `metrics`' `rest_client_*` families.
pub(crate) fn build_client(config: kube::Config, metrics: &Metrics) -> Result<kube::Client, Error> {
    let host = config
        .cluster_url
        .authority()
        .map(ToString::to_string)
        .unwrap_or_default();
    let builder = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| Error::ClientConfig(Box::new(e)))?;
    Ok(builder.with_layer(&metrics.client_layer(&host)).build())
}

/// The reason `err` gives, on one line, without kube's repetition of the path.
fn reason(err: &KubeconfigError) -> String {
    match err {
        KubeconfigError::ReadConfig(io, _) => format!("cannot read it: {io}"),
        KubeconfigError::Parse(parse) => {
            let text = parse.to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default();
            format!("not a valid kubeconfig: {}", first.trim())
        }
        other => other.to_string().replace('\n', " "),
    }
}
