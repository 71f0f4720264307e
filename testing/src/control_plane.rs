//! Starts etcd and kube-apiserver on free loopback ports, the way controller-runtime's envtest does.

use std::fmt::Write as _;
use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use tempfile::TempDir;
use tokio::sync::OnceCell;

use super::existing::Existing;
use super::process::Supervised;
use super::{Binaries, Error, Result, TcpProxy, free_addr, io_error};

/// How long start-up may take before it is reported as failed.
const READY_TIMEOUT: Duration = Duration::from_secs(90);
/// What the log tails of an existing cluster say.
const NO_LOG: &str = "(an existing cluster: its logs are not at hand)";
/// How often to try again when a free port was taken by someone else between probe and bind.
const START_ATTEMPTS: usize = 3;

/// A running etcd + kube-apiserver pair on loopback, with RBAC on and an admin token; or, with
/// `KUBEWARD_USE_EXISTING_CLUSTER=true`, the cluster of the current kubeconfig context (see
/// [`use_existing_cluster`](super::use_existing_cluster)).
///
/// Both processes stop and the temporary folder is removed when this is dropped, also while a
/// test panics; the processes die with the test process even if it is killed.
#[derive(Debug)]
pub struct ControlPlane {
    // Field order is drop order: the processes go first.
    local: Option<Local>,
    existing: Option<Existing>,
    config: Config,
    api_addr: SocketAddr,
    kubeconfig: PathBuf,
    dir: TempDir,
}

/// The processes of a local control plane.
#[derive(Debug)]
struct Local {
    // Field order is drop order: the apiserver must go before etcd.
    apiserver: Supervised,
    etcd: Supervised,
    apiserver_program: PathBuf,
    apiserver_args: Vec<String>,
    etcd_url: String,
}

impl ControlPlane {
    /// Starts a new control plane and waits until kube-apiserver reports `/readyz`.
    ///
    /// # Errors
    /// A missing program ([`Error::MissingBinary`] says how to install it), a process that does
    /// not start, or a control plane that is not ready within 90 s ([`Error::NotReady`], with the
    /// end of its log).
    pub async fn start() -> Result<Self> {
        Self::start_with_apiserver_flags(&[]).await
    }

    /// Starts a new control plane, like [`Self::start`], whose kube-apiserver also gets `flags`
    /// after its own (a flag given again wins), e.g.
    /// `--enable-admission-plugins=OwnerReferencesPermissionEnforcement` to test what a cluster
    /// with that plugin refuses.
    ///
    /// # Errors
    /// As [`Self::start`]; an unknown or invalid flag makes kube-apiserver exit, reported as
    /// [`Error::NotReady`] with the end of its log.
    pub async fn start_with_apiserver_flags(flags: &[&str]) -> Result<Self> {
        Self::start_with(&[], flags).await
    }

    /// Starts a new control plane, like [`Self::start`], whose etcd and kube-apiserver also get
    /// these flags after their own (a flag given again wins), e.g. a million objects of 1 KB
    /// need `--quota-backend-bytes=8589934592` (etcd's default holds 2 GB), and a paginated
    /// list of them outlives kube-apiserver's compaction unless `--etcd-compaction-interval=0`.
    ///
    /// # Errors
    /// As [`Self::start`]; an unknown or invalid flag makes its program exit, reported as
    /// [`Error::NotReady`] with the end of its log.
    pub async fn start_with_flags(etcd_flags: &[&str], apiserver_flags: &[&str]) -> Result<Self> {
        Self::start_with(etcd_flags, apiserver_flags).await
    }

    async fn start_with(etcd_flags: &[&str], apiserver_flags: &[&str]) -> Result<Self> {
        let binaries = Binaries::find()?;
        let mut attempt = 1;
        loop {
            match Self::start_once(&binaries, etcd_flags, apiserver_flags).await {
                Err(Error::NotReady { log_tail, .. })
                    if attempt < START_ATTEMPTS && log_tail.contains("address already in use") =>
                {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// One control plane shared by every test of this test binary; started on first use.
    ///
    /// Tests that share it should each work in their own namespace ([`Self::create_namespace`]).
    ///
    /// # Errors
    /// As [`Self::start`].
    /// With `KUBEWARD_USE_EXISTING_CLUSTER=true` it is the cluster of the current kubeconfig
    /// context instead: no process is started, and the namespaces tests create are deleted
    /// when the test process ends.
    ///
    /// # Errors
    /// As [`Self::start`]; with an existing cluster, a kubeconfig that cannot be read or a
    /// cluster that does not answer.
    pub async fn shared() -> Result<&'static Self> {
        static SHARED: OnceCell<ControlPlane> = OnceCell::const_new();
        SHARED
            .get_or_try_init(|| async {
                if super::use_existing_cluster() {
                    Self::existing().await
                } else {
                    Self::start().await
                }
            })
            .await
    }

    /// The cluster of the current kubeconfig context (`KUBECONFIG`, else `~/.kube/config`).
    async fn existing() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("kubeward-existing-")
            .tempdir()
            .map_err(io_error("creating a temporary folder"))?;
        let (existing, kubeconfig, config) = Existing::connect().await?;
        let api_addr = Existing::api_addr(&config)?;
        Ok(Self {
            local: None,
            existing: Some(existing),
            config,
            api_addr,
            kubeconfig,
            dir,
        })
    }

    /// Whether this is an existing cluster (`KUBEWARD_USE_EXISTING_CLUSTER`), not processes this
    /// test binary started.
    #[must_use]
    pub fn is_existing_cluster(&self) -> bool {
        self.existing.is_some()
    }

    /// A client with cluster-admin rights (`system:masters`).
    #[must_use]
    pub fn client(&self) -> Client {
        client_from(self.config.clone())
    }

    /// The configuration behind [`Self::client`], to adjust before building a client.
    #[must_use]
    pub fn config(&self) -> Config {
        self.config.clone()
    }

    /// A client that impersonates `user` in `groups`; what it may do is up to RBAC.
    ///
    /// # Panics
    /// When `user` or a group holds a character an HTTP header value cannot (a control
    /// character): a mistake in the test, not in what it tests.
    #[must_use]
    pub fn impersonating(&self, user: &str, groups: &[&str]) -> Client {
        let mut config = self.config.clone();
        config.auth_info.impersonate = Some(user.to_owned());
        config.auth_info.impersonate_groups =
            Some(groups.iter().map(|g| (*g).to_owned()).collect());
        client_from(config)
    }

    /// A client that acts as the `ServiceAccount` `namespace/name`, as a pod running under it would.
    ///
    /// # Panics
    /// As [`Self::impersonating`].
    #[must_use]
    pub fn service_account_client(&self, namespace: &str, name: &str) -> Client {
        let user = format!("system:serviceaccount:{namespace}:{name}");
        let ns_group = format!("system:serviceaccounts:{namespace}");
        self.impersonating(
            &user,
            &["system:serviceaccounts", &ns_group, "system:authenticated"],
        )
    }

    /// An admin client whose traffic goes through `proxy`, so a test can cut or stall it.
    #[must_use]
    pub fn client_through(&self, proxy: &TcpProxy) -> Client {
        let mut config = self.config.clone();
        config.cluster_url = https_url(proxy.addr());
        client_from(config)
    }

    /// The address kube-apiserver listens on, to put a [`TcpProxy`] in front of it.
    #[must_use]
    pub fn apiserver_addr(&self) -> SocketAddr {
        self.api_addr
    }

    /// A kubeconfig file for kubectl and helm, with the admin token.
    #[must_use]
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The URL of kube-apiserver, `https://127.0.0.1:PORT`.
    #[must_use]
    pub fn server_url(&self) -> String {
        self.config.cluster_url.to_string()
    }

    /// The client URL of etcd, for tests that act on storage (e.g. compaction); empty for an
    /// existing cluster.
    #[must_use]
    pub fn etcd_url(&self) -> &str {
        self.local.as_ref().map_or("", |l| l.etcd_url.as_str())
    }

    /// The temporary folder holding data, certificates and logs.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last lines of kube-apiserver's log, for failure messages.
    #[must_use]
    pub fn apiserver_log_tail(&self, lines: usize) -> String {
        self.local
            .as_ref()
            .map_or_else(|| NO_LOG.to_owned(), |l| l.apiserver.log_tail(lines))
    }

    /// Kills kube-apiserver (SIGKILL, no goodbye to its clients) and starts it again on the same
    /// port, certificates and etcd; returns once it reports `/readyz` again.
    ///
    /// # Errors
    /// It did not start, or was not ready within 90 s ([`Error::NotReady`]);
    /// [`Error::ExistingCluster`] for an existing cluster, whose API server this cannot restart.
    pub async fn restart_apiserver(&mut self) -> Result<()> {
        let client = self.client();
        let Some(local) = self.local.as_mut() else {
            return Err(Error::ExistingCluster {
                action: "restarting kube-apiserver",
            });
        };
        local.apiserver.stop();
        let log = self.dir.path().join("kube-apiserver.log");
        local.apiserver = Supervised::spawn(&local.apiserver_program, &local.apiserver_args, log)?;
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        wait_readyz(&client, deadline)
            .await
            .map_err(|()| Error::NotReady {
                component: "kube-apiserver",
                seconds: READY_TIMEOUT.as_secs(),
                log_tail: local.apiserver.log_tail(15),
            })
    }

    /// The last lines of etcd's log, for failure messages.
    #[must_use]
    pub fn etcd_log_tail(&self, lines: usize) -> String {
        self.local
            .as_ref()
            .map_or_else(|| NO_LOG.to_owned(), |l| l.etcd.log_tail(lines))
    }

    /// Creates a namespace named `prefix-N` that no other caller of this control plane gets. On
    /// an existing cluster it is labelled with this test run and deleted when the test process
    /// ends.
    ///
    /// # Errors
    /// The API call failed.
    pub async fn create_namespace(&self, prefix: &str) -> Result<String, kube::Error> {
        let api: Api<Namespace> = Api::all(self.client());
        let namespace = Namespace {
            metadata: ObjectMeta {
                generate_name: Some(format!("{prefix}-")),
                labels: self.existing.as_ref().map(Existing::namespace_labels),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let created = api.create(&PostParams::default(), &namespace).await?;
        Ok(created.metadata.name.unwrap_or_default())
    }

    async fn start_once(
        binaries: &Binaries,
        etcd_flags: &[&str],
        apiserver_flags: &[&str],
    ) -> Result<Self> {
        let dir = super::scratch::scratch_dir()?;
        let root = dir.path().to_owned();
        let token = random_hex(16)?;
        write(
            &root.join("tokens.csv"),
            &format!("{token},admin,admin,\"system:masters\"\n"),
        )?;
        make_signing_key(&binaries.openssl, &root.join("sa.key"))?;

        let [client_port, peer_port, api_port] =
            [free_addr()?, free_addr()?, free_addr()?].map(|addr| addr.port());
        let etcd_url = format!("http://127.0.0.1:{client_port}");
        let mut etcd_args = etcd_args(&root, &etcd_url, peer_port);
        etcd_args.extend(etcd_flags.iter().map(|&f| f.to_owned()));
        let etcd = Supervised::spawn(&binaries.etcd, &etcd_args, root.join("etcd.log"))?;
        let apiserver_program = binaries.kube_apiserver.clone();
        let mut apiserver_args = apiserver_args(&root, &etcd_url, api_port);
        apiserver_args.extend(apiserver_flags.iter().map(|&f| f.to_owned()));
        let apiserver = Supervised::spawn(
            &apiserver_program,
            &apiserver_args,
            root.join("kube-apiserver.log"),
        )?;

        let kubeconfig = root.join("kubeconfig");
        let config = wait_ready(&root, api_port, &token, &kubeconfig, &apiserver, &etcd).await?;
        Ok(Self {
            local: Some(Local {
                apiserver,
                etcd,
                apiserver_program,
                apiserver_args,
                etcd_url,
            }),
            existing: None,
            config,
            api_addr: SocketAddr::from(([127, 0, 0, 1], api_port)),
            kubeconfig,
            dir,
        })
    }
}

/// Builds a client from a configuration derived from the one validated at start-up.
fn client_from(config: Config) -> Client {
    // `Client::try_from` fails on TLS or credentials it cannot load, and on impersonation names
    // that are no valid header value. `start` and `existing` built a client from this very TLS and
    // credential configuration before returning; the callers change only the URL (to a loopback
    // address) or add impersonation, whose names `impersonating` documents as its one panic.
    Client::try_from(config).expect("configs derived from the validated start-up config are valid")
}

fn https_url(addr: SocketAddr) -> http::Uri {
    // `https://` followed by a `SocketAddr`'s display (`1.2.3.4:5`, `[::1]:5`) is always a valid
    // authority-only URI.
    format!("https://{addr}")
        .parse()
        .expect("a socket address makes a valid URL")
}

fn etcd_args(root: &Path, client_url: &str, peer_port: u16) -> Vec<String> {
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    vec![
        "--name=kubeward".into(),
        format!("--data-dir={}", root.join("etcd").display()),
        format!("--listen-client-urls={client_url}"),
        format!("--advertise-client-urls={client_url}"),
        format!("--listen-peer-urls={peer_url}"),
        format!("--initial-advertise-peer-urls={peer_url}"),
        format!("--initial-cluster=kubeward={peer_url}"),
        "--unsafe-no-fsync".into(),
        "--log-level=warn".into(),
    ]
}

fn apiserver_args(root: &Path, etcd_url: &str, port: u16) -> Vec<String> {
    let key = root.join("sa.key");
    vec![
        format!("--etcd-servers={etcd_url}"),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        format!("--secure-port={port}"),
        // v1.20 still opens an unauthenticated port 8080 by default; two control planes would clash on it.
        "--insecure-port=0".into(),
        format!("--cert-dir={}", root.join("certs").display()),
        format!("--token-auth-file={}", root.join("tokens.csv").display()),
        "--authorization-mode=RBAC".into(),
        format!("--service-account-key-file={}", key.display()),
        format!("--service-account-signing-key-file={}", key.display()),
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
        "--service-cluster-ip-range=10.0.0.0/24".into(),
        "--allow-privileged=true".into(),
        // No controller-manager creates default ServiceAccounts here, so pods could not be admitted.
        "--disable-admission-plugins=ServiceAccount".into(),
        "--profiling=false".into(),
    ]
}

/// Waits for the serving certificate, then for `/readyz`; returns the admin client config.
async fn wait_ready(
    root: &Path,
    port: u16,
    token: &str,
    kubeconfig: &Path,
    apiserver: &Supervised,
    etcd: &Supervised,
) -> Result<Config> {
    let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
    let cert = root.join("certs/apiserver.crt");
    let not_ready = || {
        let mut log_tail = apiserver.log_tail(15);
        let _ = write!(log_tail, "\n--- etcd ---\n{}", etcd.log_tail(5));
        Error::NotReady {
            component: "kube-apiserver",
            seconds: READY_TIMEOUT.as_secs(),
            log_tail,
        }
    };
    while !cert.is_file() {
        if tokio::time::Instant::now() > deadline {
            return Err(not_ready());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    write(kubeconfig, &kubeconfig_yaml(port, &cert, token))?;
    let parsed = Kubeconfig::read_from(kubeconfig)
        .map_err(|e| Error::Client(Box::new(kube::Error::InferKubeconfig(e))))?;
    let config = Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
        .await
        .map_err(|e| Error::Client(Box::new(kube::Error::InferKubeconfig(e))))?;
    let client = Client::try_from(config.clone()).map_err(|e| Error::Client(Box::new(e)))?;
    wait_readyz(&client, deadline)
        .await
        .map_err(|()| not_ready())?;
    Ok(config)
}

/// Polls `/readyz` until it answers `ok`; `Err` at the deadline.
async fn wait_readyz(client: &Client, deadline: tokio::time::Instant) -> Result<(), ()> {
    loop {
        // A constant path and no headers: the builder has nothing it could refuse.
        let request = http::Request::get("/readyz")
            .body(Vec::new())
            .expect("a constant request is valid");
        if matches!(client.request_text(request).await.as_deref(), Ok("ok")) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn kubeconfig_yaml(port: u16, ca: &Path, token: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: kubeward
  cluster:
    server: https://127.0.0.1:{port}
    certificate-authority: {ca}
users:
- name: admin
  user:
    token: {token}
contexts:
- name: kubeward
  context:
    cluster: kubeward
    user: admin
    namespace: default
current-context: kubeward
",
        ca = ca.display()
    )
}

fn make_signing_key(openssl: &Path, key: &Path) -> Result<()> {
    let output = Command::new(openssl)
        .args([
            "ecparam",
            "-genkey",
            "-name",
            "prime256v1",
            "-noout",
            "-out",
        ])
        .arg(key)
        .output()
        .map_err(io_error("running openssl to make a service-account key"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::Io {
            action: "making a service-account key with openssl".into(),
            source: std::io::Error::other(String::from_utf8_lossy(&output.stderr).into_owned()),
        })
    }
}

pub(crate) fn random_hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0_u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(io_error("reading /dev/urandom"))?;
    Ok(buf.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    }))
}

fn write(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).map_err(io_error(format!("writing {}", path.display())))
}
