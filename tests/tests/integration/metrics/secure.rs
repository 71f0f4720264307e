//! `/metrics` over HTTPS behind `TokenReview` and `SubjectAccessReview` on the real control
//! plane: 401 without a valid token, 403 without the RBAC, 200 for a `metrics-reader`, and a real
//! Prometheus scraping with a ServiceAccount token file, verifying a given certificate or (as
//! kubebuilder's ServiceMonitor) skipping verification of a self-signed one.

use crate::fixtures::watching;
use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::manager::Manager;
use kubeward::serving::{BindAddress, Endpoints};
use kubeward::testing::{ControlPlane, TcpProxy, free_addr, presents, wait_for};
use kubeward::tls::Authority;

use super::Running;
use super::https::get;
use super::prometheus::Prometheus;
use super::scrape::Scrape;

/// A manager serving secure metrics with a certificate for `localhost` from a test CA.
struct Secure {
    running: Running,
    ca_pem: String,
    authority: Authority,
    certs: tempfile::TempDir,
}

impl Secure {
    fn start(cp: &ControlPlane, ns: &str) -> anyhow::Result<Self> {
        Self::start_with_client(cp.client(), ns)
    }

    /// As [`Self::start`], the manager asking the API server through `client`.
    fn start_with_client(client: kube::Client, ns: &str) -> anyhow::Result<Self> {
        let authority = Authority::generate("kubeward test metrics CA")?;
        let certs = tempfile::tempdir()?;
        authority
            .issue(&["localhost", "127.0.0.1"])?
            .write_to(certs.path())?;
        let addr = free_addr()?;
        let manager = Manager::new(client, watching(ns.to_owned()))?;
        manager.add(
            Endpoints::new()
                .metrics(BindAddress::On(addr))
                .secure_metrics(Some(certs.path().to_owned())),
        )?;
        Ok(Self {
            running: Running::start(manager, addr),
            ca_pem: authority.certificate_pem().to_owned(),
            authority,
            certs,
        })
    }

    fn addr(&self) -> SocketAddr {
        self.running.addr
    }

    /// `/metrics` as `token` sees it: its status and body.
    async fn fetch(&self, token: Option<&str>) -> anyhow::Result<(u16, String)> {
        let response = get(self.addr(), "/metrics", &self.ca_pem, token).await?;
        Ok((response.status().as_u16(), response.into_body()))
    }
}

/// A token of the new ServiceAccount `name` in `ns`, from the `TokenRequest` API; with `reader`, the
/// account is bound to a ClusterRole that may `get` `/metrics`, as the chart's `metrics-reader`.
async fn service_account_token(
    cp: &ControlPlane,
    ns: &str,
    name: &str,
    reader: bool,
) -> anyhow::Result<String> {
    let accounts: Api<ServiceAccount> = Api::namespaced(cp.client(), ns);
    let account = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    };
    accounts.create(&PostParams::default(), &account).await?;
    if reader {
        // Cluster-scoped, so named after the test's namespace.
        let role_name = format!("{ns}-metrics-reader");
        let role = ClusterRole {
            metadata: ObjectMeta {
                name: Some(role_name.clone()),
                ..ObjectMeta::default()
            },
            rules: Some(vec![PolicyRule {
                non_resource_urls: Some(vec!["/metrics".into()]),
                verbs: vec!["get".into()],
                ..PolicyRule::default()
            }]),
            ..ClusterRole::default()
        };
        Api::<ClusterRole>::all(cp.client())
            .create(&PostParams::default(), &role)
            .await?;
        let binding = ClusterRoleBinding {
            metadata: ObjectMeta {
                name: Some(role_name.clone()),
                ..ObjectMeta::default()
            },
            role_ref: RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "ClusterRole".into(),
                name: role_name,
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: name.to_owned(),
                namespace: Some(ns.to_owned()),
                ..Subject::default()
            }]),
        };
        Api::<ClusterRoleBinding>::all(cp.client())
            .create(&PostParams::default(), &binding)
            .await?;
    }
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let answered = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await?;
    answered
        .status
        .and_then(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| anyhow::anyhow!("the TokenRequest for {name} returned no token"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_metrics_answer_401_without_a_valid_token_403_without_rbac_and_200_to_a_reader()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("secure-metrics").await?;
    let stranger = service_account_token(cp, &ns, "stranger", false).await?;
    let reader = service_account_token(cp, &ns, "reader", true).await?;
    let secure = Secure::start(cp, &ns)?;

    let (status, body) = wait_for(
        Duration::from_secs(30),
        "the secure metrics endpoint to answer",
        || async { secure.fetch(None).await.ok() },
    )
    .await?;
    assert_eq!(status, 401, "no token: {body}");
    assert!(body.contains("no bearer token"), "{body}");
    let response = get(secure.addr(), "/metrics", &secure.ca_pem, None).await?;
    assert_eq!(
        response
            .headers()
            .get("www-authenticate")
            .map(http::HeaderValue::as_bytes),
        Some(&b"Bearer"[..])
    );

    let (status, body) = secure.fetch(Some("not-a-token")).await?;
    assert_eq!(status, 401, "a forged token: {body}");

    let (status, body) = secure.fetch(Some(&stranger)).await?;
    assert_eq!(status, 403, "a token without the RBAC: {body}");
    assert!(
        body.contains(&format!("system:serviceaccount:{ns}:stranger")),
        "the refusal names the user: {body}"
    );

    // RBAC reaches the authorizer's cache a moment after the binding is created.
    let served = wait_for(
        Duration::from_secs(30),
        "the reader's token to be served the metrics",
        || async {
            let (status, body) = secure.fetch(Some(&reader)).await.ok()?;
            (status == 200).then_some(body)
        },
    )
    .await?;
    let scrape = Scrape::parse(&served)?;
    assert!(
        scrape.value("process_start_time_seconds", &[]) > Some(1.7e9),
        "the reader gets the series:\n{served}"
    );

    // The flight recorder sits behind the same guard: refused without a token and to a token
    // without the RBAC; the reader gets an answer (404: no controller recorded the object).
    let debug = format!("/debug/reconciles/{ns}/nobody");
    let answer = get(secure.addr(), &debug, &secure.ca_pem, None).await?;
    assert_eq!(answer.status(), 401, "no token: {}", answer.body());
    let answer = get(secure.addr(), &debug, &secure.ca_pem, Some(&stranger)).await?;
    assert_eq!(
        answer.status(),
        403,
        "a token without the RBAC: {}",
        answer.body()
    );
    let answer = get(secure.addr(), &debug, &secure.ca_pem, Some(&reader)).await?;
    assert_eq!(answer.status(), 404, "the reader: {}", answer.body());
    assert!(
        answer.body().contains(r#""controllers": []"#),
        "{}",
        answer.body()
    );

    // Plain HTTP is not served on the secure port: the TLS handshake fails, nothing leaks.
    let plain = kubeward::testing::get(secure.addr(), "/metrics").await;
    assert!(
        plain.as_ref().map_or(true, |r| r.status() != 200),
        "plain HTTP got {plain:?}"
    );
    secure.running.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scrapes_secure_metrics_with_a_service_account_token_file()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("secure-prometheus").await?;
    let reader = service_account_token(cp, &ns, "prometheus", true).await?;
    let stranger = service_account_token(cp, &ns, "stranger", false).await?;
    let secure = Secure::start(cp, &ns)?;

    let files = tempfile::tempdir()?;
    let ca = files.path().join("ca.pem");
    std::fs::write(&ca, &secure.ca_pem)?;
    let job = |name: &str, token: &str| -> anyhow::Result<String> {
        let token_file = files.path().join(format!("{name}.token"));
        std::fs::write(&token_file, token)?;
        Ok(format!(
            "  - job_name: {name}\n    scheme: https\n    \
             authorization:\n      credentials_file: {}\n    \
             tls_config:\n      ca_file: {}\n      server_name: localhost\n    \
             static_configs:\n      - targets: ['{}']\n",
            token_file.display(),
            ca.display(),
            secure.addr()
        ))
    };
    // A second manager without --metrics-cert-dir serves a certificate it made itself; like
    // kubebuilder's ServiceMonitor, that job skips verification.
    let self_signed_addr = free_addr()?;
    let self_signed = Manager::new(cp.client(), watching(ns.clone()))?;
    self_signed.add(
        Endpoints::new()
            .metrics(BindAddress::On(self_signed_addr))
            .secure_metrics(None),
    )?;
    let self_signed = Running::start(self_signed, self_signed_addr);
    let reader_file = files.path().join("kubeward.token");
    let jobs = job("kubeward", &reader)?
        + &job("stranger", &stranger)?
        + &format!(
            "  - job_name: self-signed\n    scheme: https\n    \
             authorization:\n      credentials_file: {}\n    \
             tls_config:\n      insecure_skip_verify: true\n    \
             static_configs:\n      - targets: ['{self_signed_addr}']\n",
            reader_file.display()
        );
    let prometheus = Prometheus::start_with_jobs(&jobs).await?;

    let up = wait_for(
        Duration::from_secs(60),
        "Prometheus to scrape both jobs and the reader's to get the series",
        || async {
            let up = |job: &str| {
                let query = format!("up{{job=\"{job}\"}}");
                let prometheus = &prometheus;
                async move {
                    let answer = prometheus.query(&query).await.ok()?;
                    answer.first().map(|(_, v)| *v)
                }
            };
            let ups = (
                up("kubeward").await?,
                up("stranger").await?,
                up("self-signed").await?,
            );
            for job in ["kubeward", "self-signed"] {
                let query = format!("process_start_time_seconds{{job=\"{job}\"}}");
                if prometheus.query(&query).await.ok()?.is_empty() {
                    return None;
                }
            }
            Some(ups)
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e}; Prometheus log:\n{}", prometheus.log()))?;
    assert_eq!(
        up,
        (1.0, 0.0, 1.0),
        "the reader's scrapes are up, the stranger's (403) down"
    );
    drop(prometheus);
    self_signed.stop().await?;
    secure.running.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_metrics_answer_503_while_the_api_server_cannot_be_asked_and_200_once_it_can()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("secure-metrics-503").await?;
    let reader = service_account_token(cp, &ns, "reader", true).await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let secure = Secure::start_with_client(cp.client_through(&proxy), &ns)?;
    wait_for(
        Duration::from_secs(30),
        "the secure metrics endpoint to answer",
        || async { secure.fetch(None).await.ok() },
    )
    .await?;

    // No decision about this token is remembered yet, so it must be reviewed, and cannot be.
    proxy.cut();
    let (status, body) = secure.fetch(Some(&reader)).await?;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("cannot check access to /metrics") && body.contains("TokenReview"),
        "{body}"
    );

    // An unavailable API server is not remembered: the next request asks again.
    proxy.restore();
    let (status, body) = wait_for(
        Duration::from_secs(30),
        "the reader to be served once the API server is reachable",
        || async {
            let (status, body) = secure.fetch(Some(&reader)).await.ok()?;
            (status == 200).then_some((status, body))
        },
    )
    .await?;
    assert_eq!(status, 200);
    assert!(body.contains("process_start_time_seconds"), "{body}");
    secure.running.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_metrics_serve_a_certificate_rotated_in_the_cert_dir_without_a_restart()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("secure-metrics-rotation").await?;
    let reader = service_account_token(cp, &ns, "reader", true).await?;
    let secure = Secure::start(cp, &ns)?;
    let reader_is_served = || async {
        let (status, _) = secure.fetch(Some(&reader)).await.ok()?;
        (status == 200).then_some(())
    };
    wait_for(
        Duration::from_secs(30),
        "the reader to be served the metrics",
        reader_is_served,
    )
    .await?;

    // As cert-manager renews the mounted Secret: new files in the folder, same CA.
    let rotated = secure.authority.issue(&["localhost", "127.0.0.1"])?;
    rotated.write_to(secure.certs.path())?;
    // The folder is re-read every 10 s.
    wait_for(
        Duration::from_secs(30),
        "new handshakes to present the rotated certificate",
        || async {
            presents(
                secure.addr(),
                "localhost",
                &secure.ca_pem,
                rotated.certificate_pem(),
            )
            .await
            .ok()?
            .then_some(())
        },
    )
    .await?;
    wait_for(
        Duration::from_secs(10),
        "the reader to be served over the rotated certificate",
        reader_is_served,
    )
    .await?;
    secure.running.stop().await
}
