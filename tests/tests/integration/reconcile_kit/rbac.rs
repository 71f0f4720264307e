//! Bad input: applying a kind the operator's RBAC does not allow names the missing permission.

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::ListParams;

use super::*;

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..PolicyRule::default()
    }
}

/// ServiceAccount `name` in `ns`, bound to a Role with exactly `rules`.
async fn account(
    cp: &ControlPlane,
    ns: &str,
    name: &str,
    rules: Vec<PolicyRule>,
) -> anyhow::Result<()> {
    let meta = || ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    let post = PostParams::default();
    let accounts: Api<ServiceAccount> = Api::namespaced(cp.client(), ns);
    accounts
        .create(
            &post,
            &ServiceAccount {
                metadata: meta(),
                ..ServiceAccount::default()
            },
        )
        .await?;
    let role_api: Api<Role> = Api::namespaced(cp.client(), ns);
    role_api
        .create(
            &post,
            &Role {
                metadata: meta(),
                rules: Some(rules),
            },
        )
        .await?;
    let bindings: Api<RoleBinding> = Api::namespaced(cp.client(), ns);
    let binding = RoleBinding {
        metadata: meta(),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: name.to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: name.to_owned(),
            namespace: Some(ns.to_owned()),
            ..Subject::default()
        }]),
    };
    bindings.create(&post, &binding).await?;
    Ok(())
}

#[tokio::test]
async fn applying_a_kind_rbac_does_not_allow_names_the_verb_resource_group_and_namespace()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let (ns, bundles) = namespace(cp, "kit-rbac").await?;
    // Everything but `patch` on ConfigMaps.
    let rules = vec![
        rule("kit.kubeward.dev", &["bundles"], &["get", "list", "watch"]),
        rule("kit.kubeward.dev", &["bundles/status"], &["patch"]),
        rule("", &["configmaps"], &["get", "list", "watch", "delete"]),
        rule("events.k8s.io", &["events"], &["create", "patch"]),
    ];
    account(cp, &ns, "limited", rules).await?;
    let client = cp.service_account_client(&ns, "limited");
    let as_limited: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    // The authorizer learns of new bindings from its informers: wait until this one applies.
    wait_for(
        REACT,
        "the ServiceAccount's binding to take effect",
        || async { as_limited.list(&ListParams::default()).await.ok().map(drop) },
    )
    .await?;

    let running = Running::start(client, &ns);
    bundles
        .create(&PostParams::default(), &bundle("web", &["one"]))
        .await?;
    let message = wait_for(REACT, "a reconcile error", || async {
        running.kit.errors.lock().first().cloned()
    })
    .await?;
    let missing = format!(
        "the controller may not patch configmaps in API group \"\" in namespace \"{ns}\"; \
         its RBAC role needs verb \"patch\" on resource \"configmaps\" of group \"\": "
    );
    assert!(
        message.starts_with(&missing) && message.contains("configmaps \"one\" is forbidden"),
        "the missing permission, then the API server's answer: {message}"
    );
    running.stop().await
}
