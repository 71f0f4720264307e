//! `#[derive(Controller)]`: the generated RBAC on a real cluster (the chart's generated files are
//! checked by the examples crate's `manifests` test, which runs the operator).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kubeward::manager::{Config, Manager};
use kubeward::testing::ControlPlane;
use kubeward_examples::by_hand::generated_name;
use kubeward_examples::configmap_generator::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, Generator,
};
use kubeward_tests::{ensure_definition, metric_sum, wait_for};
use parking_lot::Mutex;

/// The controller name declared in `#[controller(name = ...)]` of the example.
const CONTROLLER: &str = "configmap-generator";

#[test]
fn the_generated_rules_are_the_least_the_example_needs() {
    let rules = ConfigMapGenerator::rbac_rules();
    let summary: Vec<(String, Vec<String>)> = rules
        .iter()
        .map(|r| {
            (
                r.resources.clone().unwrap_or_default().join(","),
                r.verbs.clone(),
            )
        })
        .collect();
    let verbs = |v: &[&str]| v.iter().map(|&s| s.to_owned()).collect::<Vec<_>>();
    assert_eq!(
        summary,
        [
            (
                "configmapgenerators".to_owned(),
                verbs(&["get", "list", "watch", "update", "patch"])
            ),
            (
                "configmapgenerators/status".to_owned(),
                verbs(&["get", "update", "patch"])
            ),
            (
                "configmapgenerators/finalizers".to_owned(),
                verbs(&["update"])
            ),
            (
                "configmaps".to_owned(),
                verbs(&[
                    "get", "list", "watch", "create", "update", "patch", "delete"
                ])
            ),
            ("events".to_owned(), verbs(&["create", "patch"])),
        ]
    );
}

/// Creates a ServiceAccount in `ns` bound cluster-wide to a ClusterRole holding `rules`.
async fn bind_service_account(
    cp: &ControlPlane,
    ns: &str,
    name: &str,
    rules: Vec<PolicyRule>,
) -> anyhow::Result<()> {
    let meta = |name: &str| ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    let accounts: Api<ServiceAccount> = Api::namespaced(cp.client(), ns);
    accounts
        .create(
            &PostParams::default(),
            &ServiceAccount {
                metadata: meta(name),
                ..ServiceAccount::default()
            },
        )
        .await?;
    let role_name = format!("{ns}-{name}");
    let cluster_roles: Api<ClusterRole> = Api::all(cp.client());
    cluster_roles
        .create(
            &PostParams::default(),
            &ClusterRole {
                metadata: meta(&role_name),
                rules: Some(rules),
                ..ClusterRole::default()
            },
        )
        .await?;
    let bindings: Api<ClusterRoleBinding> = Api::all(cp.client());
    let binding = ClusterRoleBinding {
        metadata: meta(&role_name),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: role_name.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: name.to_owned(),
            namespace: Some(ns.to_owned()),
            ..Subject::default()
        }]),
    };
    bindings.create(&PostParams::default(), &binding).await?;
    Ok(())
}

fn reconcile_errors(manager: &prometheus::Registry) -> f64 {
    metric_sum(
        manager,
        "controller_runtime_reconcile_errors_total",
        ("controller", CONTROLLER),
        |m| m.get_counter().get_value(),
    )
}

/// The warnings and errors logged on this thread; with a current-thread runtime that is every
/// task of the test, the manager's included.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let log = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("warn")
            .with_ansi(false)
            .with_writer(move || log.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn generator(name: &str) -> ConfigMapGenerator {
    let mut g = ConfigMapGenerator::new(
        name,
        ConfigMapGeneratorSpec {
            content: "least privilege".into(),
        },
    );
    g.metadata = ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    };
    g
}

/// A namespace and a manager with the derived controller, whose client is a ServiceAccount bound
/// to exactly `rules`.
async fn run_as(
    cp: &ControlPlane,
    prefix: &str,
    rules: Vec<PolicyRule>,
) -> anyhow::Result<(String, Manager)> {
    ensure_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace(prefix).await?;
    bind_service_account(cp, &ns, "operator", rules).await?;
    // The apiserver's RBAC authorizer learns of new bindings from its own informers: wait until
    // the binding is in effect, so that a 403 can only come from a missing rule.
    let as_operator: Api<ConfigMapGenerator> =
        Api::namespaced(cp.service_account_client(&ns, "operator"), &ns);
    wait_for(
        Duration::from_secs(30),
        "the ServiceAccount's binding to take effect",
        || async {
            as_operator
                .list(&ListParams::default())
                .await
                .ok()
                .map(|_| ())
        },
    )
    .await?;
    let manager = Manager::new(
        cp.service_account_client(&ns, "operator"),
        Config::default().namespace(Some(ns.clone())),
    );
    manager.add(ConfigMapGenerator::controller(Generator));
    Ok((ns, manager))
}

#[tokio::test(flavor = "current_thread")]
async fn the_derived_controller_runs_on_exactly_the_generated_rules() -> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture();
    let cp = ControlPlane::shared().await?;
    let (ns, manager) = run_as(cp, "derive-rbac", ConfigMapGenerator::rbac_rules()).await?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let created = generators
        .create(&PostParams::default(), &generator("least"))
        .await?;
    let name = generated_name(&created);
    wait_for(
        Duration::from_secs(60),
        "the ConfigMap generated by the ServiceAccount's operator",
        || async {
            configmaps
                .get_opt(&name)
                .await
                .ok()?
                .and_then(|cm| cm.data?.get("content").cloned())
        },
    )
    .await?;
    wait_for(
        Duration::from_secs(30),
        "the generator's Ready condition",
        || async {
            let status = generators.get("least").await.ok()?.status?;
            status
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
                .then_some(())
        },
    )
    .await?;
    let events: Api<Event> = Api::namespaced(cp.client(), &ns);
    wait_for(
        Duration::from_secs(30),
        "the operator's Generated Event",
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| e.reason.as_deref() == Some("Generated"))
                .then_some(())
        },
    )
    .await?;
    generators.delete("least", &DeleteParams::default()).await?;
    wait_for(
        Duration::from_secs(30),
        "cleanup to delete the ConfigMap and the generator",
        || async {
            let cm_gone = configmaps.get_opt(&name).await.ok()?.is_none();
            let generator_gone = generators.get_opt("least").await.ok()?.is_none();
            (cm_gone && generator_gone).then_some(())
        },
    )
    .await?;
    token.cancel();
    tokio::time::timeout(Duration::from_secs(30), run).await???;
    // Cleanup removes the finalizer only after deleting the ConfigMap and publishing its Event,
    // so the generator's disappearance proves the delete path. A reconcile racing the object's
    // disappearance may log a 404; nothing may be forbidden, in reconciles or informers.
    let log = log.text();
    assert!(
        !log.contains("Forbidden") && !log.contains("forbidden"),
        "the operator was refused something with exactly the generated rules:\n{log}"
    );
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn without_the_generated_status_rule_the_reconcile_is_forbidden() -> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture();
    let cp = ControlPlane::shared().await?;
    let rules: Vec<PolicyRule> = ConfigMapGenerator::rbac_rules()
        .into_iter()
        .filter(|r| r.resources.as_deref() != Some(&["configmapgenerators/status".to_owned()][..]))
        .collect();
    assert_eq!(
        rules.len() + 1,
        ConfigMapGenerator::rbac_rules().len(),
        "one rule was removed"
    );
    let (ns, manager) = run_as(cp, "derive-norbac", rules).await?;
    let registry = manager.registry().clone();
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    generators
        .create(&PostParams::default(), &generator("short"))
        .await?;
    wait_for(
        Duration::from_secs(60),
        "a failed reconcile (403 on the status subresource)",
        || async { (reconcile_errors(&registry) >= 1.0).then_some(()) },
    )
    .await?;
    assert!(
        log.text()
            .contains("cannot patch resource \"configmapgenerators/status\""),
        "the failure must be the 403 on the status subresource:\n{}",
        log.text()
    );
    let status = generators.get("short").await?.status;
    assert!(
        status.is_none(),
        "the status must stay unwritten without its rule: {status:?}"
    );
    token.cancel();
    tokio::time::timeout(Duration::from_secs(30), run).await???;
    Ok(())
}
