//! Set-ups that many tests share.

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::PostParams;
use kube::{Api, Client};
use kubeward::informer::CacheScope;
use kubeward::manager::Config;
use kubeward::testing::wait_for;

/// A manager's configuration that watches (caches and reconciles) only the test's namespace.
pub(crate) fn watching(namespace: impl Into<String>) -> Config {
    Config::default().cache(CacheScope::default().namespaces([namespace.into()]))
}

/// Waits until `client` may do each of `rules` in `ns`. The API server's RBAC authorizer learns
/// of new bindings from its own informers: after this, a refusal can only come from a rule left
/// out.
pub(crate) async fn until_allowed(
    client: &Client,
    ns: &str,
    rules: &[PolicyRule],
) -> anyhow::Result<()> {
    for rule in rules {
        wait_for(
            Duration::from_secs(30),
            &format!("{rule:?} allowed in {ns}"),
            || async { allowed(client, ns, rule).await.then_some(()) },
        )
        .await?;
    }
    Ok(())
}

/// Whether `client` may do the first verb of `rule` on its first group and resource in `ns`.
async fn allowed(client: &Client, ns: &str, rule: &PolicyRule) -> bool {
    let first = |v: &Option<Vec<String>>| v.as_ref().and_then(|v| v.first().cloned());
    let resource = first(&rule.resources).unwrap_or_default();
    let (resource, subresource) = match resource.split_once('/') {
        Some((resource, sub)) => (resource.to_owned(), Some(sub.to_owned())),
        None => (resource, None),
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(ns.to_owned()),
                group: first(&rule.api_groups),
                resource: Some(resource),
                subresource,
                verb: rule.verbs.first().cloned(),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await;
    answer.is_ok_and(|r| r.status.is_some_and(|s| s.allowed))
}
