//! Runs the tests against an existing cluster instead of a local control plane, like envtest's
//! `USE_EXISTING_CLUSTER`.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};

use kube::Config;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::{Binaries, Error, Result, io_error};

/// The variable that switches the tests to the current kubeconfig context's cluster.
pub const USE_EXISTING_CLUSTER: &str = "KUBEWARD_USE_EXISTING_CLUSTER";

/// The label that marks the namespaces one test process created on an existing cluster.
const RUN_LABEL: &str = "testing.kubeward.dev/run";

/// Whether `KUBEWARD_USE_EXISTING_CLUSTER` is `true` (or `1`): then
/// [`ControlPlane::shared`](super::ControlPlane::shared) is the cluster of the current kubeconfig
/// context (`KUBECONFIG`, else `~/.kube/config`) rather than a local control plane.
#[must_use]
pub fn use_existing_cluster() -> bool {
    std::env::var(USE_EXISTING_CLUSTER).is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// For a test that needs a control plane of its own (it kills, restarts or stalls the API
/// server, or acts on etcd): true with an existing cluster, after printing that the test is
/// skipped and why; the test then returns at once.
///
/// ```no_run
/// # #[allow(dead_code)]
/// # async fn demo() -> Result<(), kubeward_testing::Error> {
/// use kubeward_testing::{ControlPlane, skip_on_existing_cluster};
///
/// if skip_on_existing_cluster("restarts kube-apiserver") {
///     return Ok(());
/// }
/// let mut cp = ControlPlane::start().await?;
/// cp.restart_apiserver().await?;
/// # Ok(()) }
/// ```
#[must_use]
pub fn skip_on_existing_cluster(why: &str) -> bool {
    let skip = use_existing_cluster();
    if skip {
        #[allow(clippy::print_stderr)] // the test harness shows it next to the test's name
        {
            eprintln!(
                "skipped: {why}, which an existing cluster ({USE_EXISTING_CLUSTER}) cannot offer"
            );
        }
    }
    skip
}

/// An existing cluster: its run label, and the process that deletes the namespaces this test
/// process created when it ends (also when it is killed: its standard input is a pipe from us).
#[derive(Debug)]
pub(crate) struct Existing {
    run: String,
    _reaper: Option<Reaper>,
}

impl Existing {
    /// Reads the current kubeconfig context; returns the cluster, the kubeconfig's path and the
    /// client configuration.
    pub(crate) async fn connect() -> Result<(Self, PathBuf, Config)> {
        let path = kubeconfig_path()?;
        let kubeconfig = Kubeconfig::read_from(&path)
            .map_err(|e| Error::Client(Box::new(kube::Error::InferKubeconfig(e))))?;
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| Error::Client(Box::new(kube::Error::InferKubeconfig(e))))?;
        let run = format!(
            "{}-{}",
            std::process::id(),
            super::control_plane::random_hex(4)?
        );
        let reaper = Reaper::start(&path, &run);
        Ok((
            Self {
                run,
                _reaper: reaper,
            },
            path,
            config,
        ))
    }

    /// The API server's address, from the cluster URL.
    pub(crate) fn api_addr(config: &Config) -> Result<SocketAddr> {
        let host = config.cluster_url.host().unwrap_or("localhost");
        let port = config.cluster_url.port_u16().unwrap_or(443);
        (host.trim_start_matches('[').trim_end_matches(']'), port)
            .to_socket_addrs()
            .map_err(io_error(format!("resolving {host}:{port}")))?
            .next()
            .ok_or_else(|| Error::Io {
                action: format!("resolving {host}:{port}"),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            })
    }

    /// The labels of a namespace this test process creates.
    pub(crate) fn namespace_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(RUN_LABEL.to_owned(), self.run.clone())])
    }
}

/// The first file of `KUBECONFIG`, else `~/.kube/config`.
fn kubeconfig_path() -> Result<PathBuf> {
    let listed = std::env::var_os("KUBECONFIG")
        .and_then(|v| std::env::split_paths(&v).find(|p| !p.as_os_str().is_empty()));
    let path = listed
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".kube/config")));
    path.ok_or_else(|| Error::Io {
        action: format!("{USE_EXISTING_CLUSTER} is set but neither KUBECONFIG nor HOME is"),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    })
}

/// Deletes this run's namespaces with kubectl once our end of its standard input closes.
#[derive(Debug)]
struct Reaper {
    _child: Child,
    _lifeline: Option<ChildStdin>,
}

impl Reaper {
    /// `None`, after saying so, when kubectl is not installed: the namespaces then stay.
    fn start(kubeconfig: &std::path::Path, run: &str) -> Option<Self> {
        let kubectl = match Binaries::tool("kubectl") {
            Ok(kubectl) => kubectl,
            Err(e) => {
                eprintln!("the test namespaces will not be deleted afterwards: {e}");
                return None;
            }
        };
        let script = r#"read _ignored
exec "$@" >/dev/null 2>&1"#;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg("kubeward-reaper")
            .arg(kubectl)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["delete", "namespaces", "--wait=false", "-l"])
            .arg(format!("{RUN_LABEL}={run}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let lifeline = child.stdin.take();
        Some(Self {
            _child: child,
            _lifeline: lifeline,
        })
    }
}
