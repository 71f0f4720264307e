//! Builds the key an object is hashed by: its own, or its controller owner's.

use kube::Resource;
use kube::core::ObjectMeta;

/// The ring key of an object of kind `K` named `name` in `namespace`:
/// `group/Kind/namespace/name` (empty namespace for a cluster-scoped object), as
/// kubernetes-controller-sharding builds it. It holds no uid nor generated name, so the
/// sharder's webhook can compute it before the object exists.
#[must_use]
pub fn object_key<K: Resource<DynamicType = ()>>(namespace: Option<&str>, name: &str) -> String {
    let (group, kind) = (K::group(&()), K::kind(&()));
    format!("{group}/{kind}/{}/{name}", namespace.unwrap_or_default())
}

/// The ring key of an object owned by a controller: its controller owner's key, so that it goes
/// to the shard its owner goes to. `None` without a controller owner reference.
#[must_use]
pub fn controller_key(meta: &ObjectMeta) -> Option<String> {
    let owner = meta
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))?;
    // `group/version`, or `version` alone for the core group.
    let group = owner.api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    Some(format!("{group}/{}/{namespace}/{}", owner.kind, owner.name))
}

/// How an object's ring key is found from its metadata (`None`: it is not sharded).
#[cfg(feature = "sharding")]
pub(crate) type KeyOf = fn(&ObjectMeta) -> Option<String>;

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn owned_by(api_version: &str, kind: &str, controller: Option<bool>) -> ObjectMeta {
        ObjectMeta {
            name: Some("web-abc12".into()),
            namespace: Some("shop".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: api_version.into(),
                kind: kind.into(),
                name: "web".into(),
                uid: "u".into(),
                controller,
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn an_owned_object_hashes_as_its_controller_owner() {
        let owner = object_key::<Deployment>(Some("shop"), "web");
        assert_eq!(owner, "apps/Deployment/shop/web");
        let of_pod = controller_key(&owned_by("apps/v1", "Deployment", Some(true)));
        assert_eq!(of_pod.as_deref(), Some(owner.as_str()));
    }

    #[test]
    fn the_core_group_is_empty_and_an_owner_that_is_not_the_controller_gives_no_key() {
        assert_eq!(object_key::<ConfigMap>(Some("a"), "b"), "/ConfigMap/a/b");
        assert_eq!(
            controller_key(&owned_by("v1", "ConfigMap", Some(true))).as_deref(),
            Some("/ConfigMap/shop/web")
        );
        assert_eq!(controller_key(&owned_by("v1", "ConfigMap", None)), None);
    }
}
