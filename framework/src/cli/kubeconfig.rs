//! Finds the client configuration: `--kubeconfig` and `--context`, or inferred, with one-line
//! errors.

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError, LoadDataError};

use crate::manager::Error;

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

/// What to do when no client configuration was found, after what was tried.
const FIX: &str = "pass --kubeconfig PATH, set KUBECONFIG, or run in a pod with a service account";

/// The client configuration: from `kubeconfig` (else `KUBECONFIG` or `~/.kube/config`) with
/// `context` (else the current one), or inferred (kubeconfig, else in-cluster) when both are
/// unset.
///
/// # Errors
/// [`Error::NoClientConfig`], on one line naming what was tried and how to fix it.
pub(super) async fn client_config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Config, Error> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let unusable = |source: String, e: &KubeconfigError| {
        Error::NoClientConfig(format!("{source}: {}; {FIX}", reason(e)))
    };
    match kubeconfig {
        Some(path) => {
            let source = format!("--kubeconfig {}", path.display());
            let loaded = Kubeconfig::read_from(path).map_err(|e| unusable(source.clone(), &e))?;
            kube::Config::from_custom_kubeconfig(loaded, &options)
                .await
                .map_err(|e| unusable(source, &e))
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| unusable(default_kubeconfig(), &e)),
        None => match kube::Config::infer().await {
            Ok(config) => Ok(config),
            Err(_) => Err(Error::NoClientConfig(why_not_inferred().await)),
        },
    }
}

/// The kubeconfig kube reads when none is named: `KUBECONFIG=…`, else `~/.kube/config`.
fn default_kubeconfig() -> String {
    match std::env::var_os("KUBECONFIG") {
        Some(paths) if !paths.is_empty() => format!("KUBECONFIG={}", paths.to_string_lossy()),
        _ => "~/.kube/config".to_owned(),
    }
}

/// Why neither a kubeconfig nor the in-cluster configuration could be used, on one line: the
/// kubeconfig's problem when there is one to read (kube tries it first), else the pod's.
async fn why_not_inferred() -> String {
    let named = std::env::var_os("KUBECONFIG").is_some_and(|paths| !paths.is_empty());
    let in_home =
        std::env::var_os("HOME").is_some_and(|home| Path::new(&home).join(".kube/config").exists());
    if (named || in_home)
        && let Err(e) = kube::Config::from_kubeconfig(&KubeConfigOptions::default()).await
    {
        return format!("{}: {}; {FIX}", default_kubeconfig(), reason(&e));
    }
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_none() {
        return format!(
            "no kubeconfig (KUBECONFIG is unset and ~/.kube/config does not exist) and not in a \
             pod (KUBERNETES_SERVICE_HOST is unset); {FIX}"
        );
    }
    match kube::Config::incluster() {
        Err(e) => format!("in-cluster: {}; {FIX}", one_line(&e.to_string())),
        // Whatever failed before no longer does; the caller reports that nothing was found.
        Ok(_) => format!("the configuration changed while it was read; {FIX}"),
    }
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
        KubeconfigError::LoadCertificateAuthority(data) => {
            format!("its certificate authority {}", data_reason(data))
        }
        KubeconfigError::LoadClientCertificate(data) => {
            format!("its client certificate {}", data_reason(data))
        }
        KubeconfigError::LoadClientKey(data) => format!("its client key {}", data_reason(data)),
        KubeconfigError::CurrentContextNotSet => {
            "it names no current context; pass --context NAME".to_owned()
        }
        other => one_line(&other.to_string()),
    }
}

/// Why a certificate or key of a kubeconfig did not load, naming its file without quoting it twice.
fn data_reason(err: &LoadDataError) -> String {
    match err {
        LoadDataError::ReadFile(io, path) => format!("{}: cannot read it: {io}", path.display()),
        other => format!("does not load: {}", one_line(&other.to_string())),
    }
}

/// `text` with its line breaks as spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
