//! RBAC for a namespace set: the example operator runs on the generated rules granted by a Role
//! in each watched namespace, with no ClusterRole, and is refused nothing.

use crate::fixtures::until_allowed;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, Client};
use kubeward::informer::CacheScope;
use kubeward::manager::{Config, Manager};
use kubeward::testing::{ControlPlane, install_definition, wait_for};
use kubeward_examples::by_hand::generated_name;
use kubeward_examples::configmap_generator::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, Generator,
};

use super::REACT;
use crate::fixtures::Log;

#[tokio::test(flavor = "current_thread")]
async fn the_operator_runs_on_roles_in_its_watched_namespaces_alone() -> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture("warn");
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let a = cp.create_namespace("scope-rbac-a").await?;
    let b = cp.create_namespace("scope-rbac-b").await?;
    let client = bind_in_namespaces(cp, &a, &[&a, &b], &ConfigMapGenerator::rbac_rules()).await?;
    // Only namespaced grants: the account cannot list ConfigMaps cluster-wide.
    let everywhere = Api::<ConfigMap>::all(client.clone())
        .list(&ListParams::default())
        .await;
    assert!(
        matches!(&everywhere, Err(kube::Error::Api(s)) if s.code == 403),
        "the ServiceAccount may read every namespace: {everywhere:?}"
    );

    let scope = CacheScope::default().namespaces([a.clone(), b.clone()]);
    let manager = Manager::new(client, Config::default().cache(scope))?;
    manager.add(ConfigMapGenerator::controller(Generator))?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    for ns in [&a, &b] {
        let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), ns);
        let mut generator = ConfigMapGenerator::new(
            "roles",
            ConfigMapGeneratorSpec {
                content: "namespaced".into(),
            },
        );
        generator.metadata = ObjectMeta {
            name: Some("roles".into()),
            ..ObjectMeta::default()
        };
        let created = generators
            .create(&PostParams::default(), &generator)
            .await?;
        let name = generated_name(&created);
        let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), ns);
        wait_for(
            REACT,
            &format!("the ConfigMap generated in {ns}"),
            || async { configmaps.get_opt(&name).await.ok().flatten() },
        )
        .await?;
        wait_for(REACT, &format!("the Ready condition in {ns}"), || async {
            let status = generators.get("roles").await.ok()?.status?;
            status.conditions.is_true("Ready").then_some(())
        })
        .await?;
    }
    token.cancel();
    tokio::time::timeout(REACT, run).await???;
    let log = log.text();
    assert!(
        !log.contains("Forbidden") && !log.contains("forbidden"),
        "the operator was refused something with Roles in its namespaces:\n{log}"
    );
    Ok(())
}

/// A ServiceAccount in `home` granted `rules` by a Role and a RoleBinding in each of
/// `namespaces`; returns its client once the authorizer applies every grant.
async fn bind_in_namespaces(
    cp: &ControlPlane,
    home: &str,
    namespaces: &[&str],
    rules: &[PolicyRule],
) -> anyhow::Result<Client> {
    let meta = |name: &str, ns: &str| ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(ns.to_owned()),
        ..ObjectMeta::default()
    };
    let post = PostParams::default();
    let account = ServiceAccount {
        metadata: meta("operator", home),
        ..ServiceAccount::default()
    };
    Api::<ServiceAccount>::namespaced(cp.client(), home)
        .create(&post, &account)
        .await?;
    for ns in namespaces {
        let role = Role {
            metadata: meta("operator", ns),
            rules: Some(rules.to_vec()),
        };
        Api::<Role>::namespaced(cp.client(), ns)
            .create(&post, &role)
            .await?;
        let binding = RoleBinding {
            metadata: meta("operator", ns),
            role_ref: RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "Role".into(),
                name: "operator".into(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: "operator".into(),
                namespace: Some(home.to_owned()),
                ..Subject::default()
            }]),
        };
        Api::<RoleBinding>::namespaced(cp.client(), ns)
            .create(&post, &binding)
            .await?;
    }
    let client = cp.service_account_client(home, "operator");
    for ns in namespaces {
        until_allowed(&client, ns, rules).await?;
    }
    Ok(client)
}
