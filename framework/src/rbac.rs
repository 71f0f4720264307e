//! Builds least-privilege RBAC rules for controllers and renders them as YAML.
//!
//! `#[derive(Controller)]` generates `Kind::rbac_rules()` with [`Rules`]; [`merge`] joins the rules
//! of several controllers and [`cluster_role_yaml`] / [`rules_yaml`] write them for a chart;
//! [`roles_yaml`] grants them in each namespace of a namespace set instead.

use std::collections::BTreeMap;

pub use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::Resource;

use crate::informer::Watchable;

/// Verbs in the order Kubernetes documentation lists them; rules keep this order.
const VERB_ORDER: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// Verbs on the reconciled kind: read it, and patch/update it (finalizers, annotations).
pub const RECONCILED_VERBS: &[&str] = &["get", "list", "watch", "patch", "update"];
/// Verbs on the status subresource.
pub const STATUS_VERBS: &[&str] = &["get", "patch", "update"];
/// Verbs on the finalizers subresource: where the API server enforces owner-reference permissions
/// (the `OwnerReferencesPermissionEnforcement` admission plugin), setting `blockOwnerDeletion` on
/// an owned object's reference to its owner needs them.
pub const FINALIZERS_VERBS: &[&str] = &["update"];
/// Verbs on owned kinds: read, and create/change/delete them.
pub const OWNED_VERBS: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];
/// Verbs on watched kinds: read only.
pub const WATCHED_VERBS: &[&str] = &["get", "list", "watch"];
/// Verbs on Events.
pub const EVENT_VERBS: &[&str] = &["create", "patch"];

/// Collects RBAC rules, merging the verbs of rules on the same API groups and resources.
///
/// ```
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// use kubeward::rbac::Rules;
///
/// let rules = Rules::new().owned::<ConfigMap>().watched::<Secret>().events().build();
/// assert_eq!(rules[0].resources.as_deref(), Some(&["configmaps".to_owned()][..]));
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Rules {
    rules: Vec<PolicyRule>,
}

impl Rules {
    /// No rules yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows `verbs` on `resources` of `groups`; verbs join an earlier rule on the same groups
    /// and resources.
    pub fn rule(mut self, groups: &[&str], resources: &[&str], verbs: &[&str]) -> Self {
        let groups: Vec<String> = groups.iter().map(|&g| g.to_owned()).collect();
        let resources: Vec<String> = resources.iter().map(|&r| r.to_owned()).collect();
        let verbs = verbs.iter().map(|&v| v.to_owned());
        let same = self.rules.iter_mut().find(|r| {
            r.api_groups.as_ref() == Some(&groups) && r.resources.as_ref() == Some(&resources)
        });
        match same {
            Some(rule) => rule.verbs = sorted_verbs(rule.verbs.drain(..).chain(verbs)),
            None => self.rules.push(PolicyRule {
                api_groups: Some(groups),
                resources: Some(resources),
                verbs: sorted_verbs(verbs),
                ..PolicyRule::default()
            }),
        }
        self
    }

    /// The rules of a controller's own kind `K`, plus its status subresource when `status`, and
    /// its finalizers subresource when `finalizer`: the derive sets it when the controller
    /// declares a finalizer or owns objects (whose owner references block the owner's deletion).
    pub fn reconciled<K: Resource<DynamicType = ()>>(self, status: bool, finalizer: bool) -> Self {
        let (group, plural) = (K::group(&()), K::plural(&()));
        let mut rules = self.rule(&[&group], &[&plural], RECONCILED_VERBS);
        if status {
            rules = rules.rule(&[&group], &[&format!("{plural}/status")], STATUS_VERBS);
        }
        if finalizer {
            rules = rules.rule(
                &[&group],
                &[&format!("{plural}/finalizers")],
                FINALIZERS_VERBS,
            );
        }
        rules
    }

    /// The rule for a kind the controller owns (creates, changes and deletes).
    pub fn owned<K: Watchable>(self) -> Self {
        self.rule(&[&K::group(&())], &[&K::plural(&())], OWNED_VERBS)
    }

    /// The rule for a kind the controller only watches.
    pub fn watched<K: Watchable>(self) -> Self {
        self.rule(&[&K::group(&())], &[&K::plural(&())], WATCHED_VERBS)
    }

    /// The rule for publishing Events through either Events API.
    pub fn events(self) -> Self {
        self.rule(&["", "events.k8s.io"], &["events"], EVENT_VERBS)
    }

    /// The rules.
    #[must_use]
    pub fn build(self) -> Vec<PolicyRule> {
        self.rules
    }
}

/// Joins the rules of several controllers, merging rules on the same groups and resources.
#[must_use]
pub fn merge(rules: impl IntoIterator<Item = PolicyRule>) -> Vec<PolicyRule> {
    rules
        .into_iter()
        .fold(Rules::new(), |acc, rule| {
            let strs = |v: &Option<Vec<String>>| v.clone().unwrap_or_default();
            let (groups, resources) = (strs(&rule.api_groups), strs(&rule.resources));
            let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
            let resources: Vec<&str> = resources.iter().map(String::as_str).collect();
            let verbs: Vec<&str> = rule.verbs.iter().map(String::as_str).collect();
            acc.rule(&groups, &resources, &verbs)
        })
        .build()
}

/// The `rules:` document a chart reads (e.g. `files/rbac-rules.yaml`), under a header comment.
///
/// # Errors
/// The rules could not be serialized (not expected for [`PolicyRule`]).
pub fn rules_yaml(header: &str, rules: &[PolicyRule]) -> Result<String, serde_norway::Error> {
    let body = serde_norway::to_string(&BTreeMap::from([("rules", rules)]))?;
    Ok(format!("{}{body}", comment(header)))
}

/// A ClusterRole named `name` holding `rules`, as YAML.
///
/// # Errors
/// The role could not be serialized (not expected for [`PolicyRule`]).
pub fn cluster_role_yaml(name: &str, rules: &[PolicyRule]) -> Result<String, serde_norway::Error> {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let role = ClusterRole {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..kube::api::ObjectMeta::default()
        },
        rules: Some(rules.to_vec()),
        ..ClusterRole::default()
    };
    typed_yaml(&role, "ClusterRole")
}

/// A Role named `name` in each of `namespaces` holding `rules`, as YAML documents: the grant of
/// an operator that watches only those namespaces (see
/// [`CacheScope`](crate::informer::CacheScope)), with no ClusterRole. Rules on cluster-scoped
/// kinds have no effect in a Role; those still need a ClusterRole.
///
/// # Errors
/// A role could not be serialized (not expected for [`PolicyRule`]).
pub fn roles_yaml<'a>(
    name: &str,
    namespaces: impl IntoIterator<Item = &'a str>,
    rules: &[PolicyRule],
) -> Result<String, serde_norway::Error> {
    let documents = namespaces
        .into_iter()
        .map(|namespace| {
            let role = k8s_openapi::api::rbac::v1::Role {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.to_owned()),
                    namespace: Some(namespace.to_owned()),
                    ..kube::api::ObjectMeta::default()
                },
                rules: Some(rules.to_vec()),
            };
            typed_yaml(&role, "Role")
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(documents.join("---\n"))
}

/// `object` as YAML with its `apiVersion` and `kind` (k8s-openapi leaves them to serializers
/// that know the type).
fn typed_yaml(object: &impl serde::Serialize, kind: &str) -> Result<String, serde_norway::Error> {
    let mut value = serde_norway::to_value(object)?;
    if let serde_norway::Value::Mapping(map) = &mut value {
        map.insert("apiVersion".into(), "rbac.authorization.k8s.io/v1".into());
        map.insert("kind".into(), kind.into());
    }
    serde_norway::to_string(&value)
}

/// `text` as YAML comment lines.
pub(crate) fn comment(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                "#\n".to_owned()
            } else {
                format!("# {l}\n")
            }
        })
        .collect()
}

fn sorted_verbs(verbs: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut verbs: Vec<String> = verbs.into_iter().collect();
    let rank = |v: &String| {
        VERB_ORDER
            .iter()
            .position(|o| o == v)
            .unwrap_or(VERB_ORDER.len())
    };
    verbs.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    verbs.dedup();
    verbs
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    #[test]
    fn rules_on_the_same_resource_merge_their_verbs_in_kubernetes_order() {
        let rules = Rules::new()
            .watched::<ConfigMap>()
            .owned::<ConfigMap>()
            .build();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].verbs, OWNED_VERBS);
        assert_eq!(rules[0].api_groups.as_deref(), Some(&[String::new()][..]));
    }

    #[test]
    fn the_reconciled_kind_gets_subresources_only_when_declared() {
        let plain = Rules::new().reconciled::<Deployment>(false, false).build();
        assert_eq!(plain.len(), 1);
        let full = Rules::new().reconciled::<Deployment>(true, true).build();
        let resources: Vec<_> = full
            .iter()
            .flat_map(|r| r.resources.clone().unwrap_or_default())
            .collect();
        assert_eq!(
            resources,
            [
                "deployments",
                "deployments/status",
                "deployments/finalizers"
            ]
        );
        assert_eq!(
            full[0].api_groups.as_deref(),
            Some(&["apps".to_owned()][..])
        );
    }

    #[test]
    fn merging_two_controllers_keeps_one_rule_per_resource() {
        let a = Rules::new().watched::<ConfigMap>().events().build();
        let b = Rules::new().owned::<ConfigMap>().events().build();
        let merged = merge(a.into_iter().chain(b));
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].verbs, OWNED_VERBS);
    }

    #[test]
    fn a_cluster_role_renders_with_its_kind_and_rules() -> Result<(), serde_norway::Error> {
        let yaml = cluster_role_yaml("gen", &Rules::new().events().build())?;
        let value: serde_norway::Value = serde_norway::from_str(&yaml)?;
        assert_eq!(value["kind"], "ClusterRole");
        assert_eq!(value["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(value["metadata"]["name"], "gen");
        assert_eq!(value["rules"][0]["verbs"][1], "patch");
        let file = rules_yaml("generated", &Rules::new().events().build())?;
        assert!(file.starts_with("# generated\nrules:\n"), "{file}");
        Ok(())
    }

    #[test]
    fn roles_render_one_per_namespace_with_the_same_rules() -> Result<(), serde_norway::Error> {
        let owned = Rules::new().owned::<ConfigMap>().build();
        let yaml = roles_yaml("gen", ["team-a", "team-b"], &owned)?;
        let roles: Vec<serde_norway::Value> = yaml
            .split("---\n")
            .map(serde_norway::from_str)
            .collect::<Result<_, _>>()?;
        assert_eq!(roles.len(), 2);
        for (role, namespace) in roles.iter().zip(["team-a", "team-b"]) {
            assert_eq!(role["kind"], "Role");
            assert_eq!(role["apiVersion"], "rbac.authorization.k8s.io/v1");
            assert_eq!(role["metadata"]["namespace"], namespace);
            assert_eq!(role["rules"][0]["resources"][0], "configmaps");
        }
        Ok(())
    }
}
