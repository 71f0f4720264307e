//! The RBAC rules `#[derive(Controller)]` generates, on a real cluster: each is necessary and
//! together they are sufficient.
//!
//! The example operator runs as a ServiceAccount bound to a ClusterRole holding the generated
//! rules, or all of them but one. Without a rule it fails with an error naming the missing
//! permission, wherever that error surfaces: a reconcile error, a cache that cannot list, an
//! Event that cannot be recorded.

use crate::fixtures::until_allowed;
use crate::fixtures::watching;
use std::time::Duration;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use kubeward::manager::Manager;
use kubeward::testing::{ControlPlane, install_definition};
use kubeward_examples::configmap_generator::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, Generator,
};
use kubeward_tests::metric_sum;

mod necessary;
mod owner_references;
mod sufficient;

/// The controller name declared in `#[controller(name = ...)]` of the example.
const CONTROLLER: &str = "configmap-generator";
/// How long the operator may take to react, or to fail.
const REACT: Duration = Duration::from_secs(60);

/// The generated rules without the one on `resource`; fails unless exactly one rule goes.
fn all_rules_but(resource: &str) -> anyhow::Result<Vec<PolicyRule>> {
    let all = ConfigMapGenerator::rbac_rules();
    let rest: Vec<PolicyRule> = all
        .iter()
        .filter(|r| r.resources.as_deref() != Some(&[resource.to_owned()][..]))
        .cloned()
        .collect();
    anyhow::ensure!(
        rest.len() + 1 == all.len(),
        "exactly one generated rule is on {resource}: {all:?}"
    );
    Ok(rest)
}

/// Creates a ServiceAccount in `ns` bound cluster-wide to a ClusterRole holding `rules`, and
/// waits until the authorizer applies the binding.
async fn bind_service_account(
    cp: &ControlPlane,
    ns: &str,
    name: &str,
    rules: Vec<PolicyRule>,
) -> anyhow::Result<Client> {
    let meta = |name: &str| ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    let post = PostParams::default();
    let account = ServiceAccount {
        metadata: meta(name),
        ..ServiceAccount::default()
    };
    Api::<ServiceAccount>::namespaced(cp.client(), ns)
        .create(&post, &account)
        .await?;
    let role_name = format!("{ns}-{name}");
    let role = ClusterRole {
        metadata: meta(&role_name),
        rules: Some(rules.clone()),
        ..ClusterRole::default()
    };
    Api::<ClusterRole>::all(cp.client())
        .create(&post, &role)
        .await?;
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
    Api::<ClusterRoleBinding>::all(cp.client())
        .create(&post, &binding)
        .await?;
    let client = cp.service_account_client(ns, name);
    until_allowed(&client, ns, &rules).await?;
    Ok(client)
}

/// A namespace and a manager with the derived controller, whose client is a ServiceAccount bound
/// to exactly `rules`.
async fn run_as(
    cp: &ControlPlane,
    prefix: &str,
    rules: Vec<PolicyRule>,
) -> anyhow::Result<(String, Manager)> {
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace(prefix).await?;
    let client = bind_service_account(cp, &ns, "operator", rules).await?;
    let manager = Manager::new(client, watching(ns.clone()))?;
    manager.add(ConfigMapGenerator::controller(Generator))?;
    Ok((ns, manager))
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

fn reconcile_errors(manager: &prometheus::Registry) -> f64 {
    metric_sum(
        manager,
        "controller_runtime_reconcile_errors_total",
        ("controller", CONTROLLER),
        |m| m.get_counter().get_value(),
    )
}
