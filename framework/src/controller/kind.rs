//! Describes the kind a controller reconciles: its API resource and scope, from its Rust type or
//! found at run time.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use kube::api::{ApiResource, DynamicObject, ObjectMeta};
use kube::discovery::Scope;

use super::{Cacheable, Watchable};
use crate::informer::{CacheScope, Factory, SharedInformer};

/// The kind a controller reconciles, as every request about its objects needs it: group,
/// version, kind and plural, and whether its objects live in namespaces. For a kind known at
/// compile time it comes from the type; for `DynamicObject` (or any `K` whose
/// `Resource::DynamicType` is not `()`) from the value the controller was given, e.g. by
/// discovery. Everything the controller derives from its kind (URLs, owner and object
/// references, the default name) reads it here, never `K::kind(&())`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Kind {
    resource: ApiResource,
    namespaced: bool,
}

impl Kind {
    /// The kind of the compiled type `K`.
    pub(crate) fn of<K: Watchable>() -> Self {
        Self {
            resource: ApiResource::erase::<K>(&()),
            namespaced: K::NAMESPACED,
        }
    }

    /// The kind of `K` described by `dyntype`, with `scope`.
    pub(crate) fn erase<K: Resource>(dyntype: &K::DynamicType, scope: &Scope) -> Self {
        Self {
            resource: ApiResource::erase::<K>(dyntype),
            namespaced: *scope == Scope::Namespaced,
        }
    }

    /// Its group, version, kind and plural.
    pub(crate) fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The kind's name, e.g. `ConfigMap`.
    pub(crate) fn name(&self) -> &str {
        &self.resource.kind
    }

    /// Whether its objects live in namespaces.
    pub(crate) fn namespaced(&self) -> bool {
        self.namespaced
    }

    /// The URL path of its objects in `namespace` (of all of them when `None`).
    pub(crate) fn url_path(&self, namespace: Option<&str>) -> String {
        DynamicObject::url_path(&self.resource, namespace)
    }

    /// What an informer of the kind lists in `scope`: its URL paths, and its group and kind (to
    /// find its selectors).
    pub(crate) fn watched<K: Cacheable>(
        &self,
        factory: &Factory,
        scope: &CacheScope,
    ) -> SharedInformer<K> {
        let sources = scope.sources_of(self.namespaced, |ns| self.url_path(ns));
        let kind = (self.resource.group.clone(), self.resource.kind.clone());
        factory.informer_of_kind(sources, kind, scope)
    }

    /// Whether the kind is a custom resource (its group has a dot and is not a Kubernetes one),
    /// whose status conditions are the controller's to write.
    pub(crate) fn is_custom(&self) -> bool {
        let group = &self.resource.group;
        group.contains('.') && !group.ends_with(".k8s.io")
    }

    /// A reference to the object with `meta`, for Events (as `Resource::object_ref`).
    pub(crate) fn object_ref(&self, meta: &ObjectMeta) -> ObjectReference {
        ObjectReference {
            api_version: Some(self.resource.api_version.clone()),
            kind: Some(self.resource.kind.clone()),
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
            ..ObjectReference::default()
        }
    }

    /// The controller owner reference to the object with `meta` (as
    /// `Resource::controller_owner_ref`); `None` without a name or uid.
    pub(crate) fn controller_owner_ref(&self, meta: &ObjectMeta) -> Option<OwnerReference> {
        Some(OwnerReference {
            api_version: self.resource.api_version.clone(),
            kind: self.resource.kind.clone(),
            name: meta.name.clone()?,
            uid: meta.uid.clone()?,
            controller: Some(true),
            ..OwnerReference::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::GroupVersionKind;

    use super::*;

    fn meta() -> ObjectMeta {
        ObjectMeta {
            name: Some("web".into()),
            namespace: Some("prod".into()),
            uid: Some("u-1".into()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn a_compiled_kind_gives_the_paths_and_references_its_type_gives() {
        let kind = Kind::of::<Deployment>();
        let deployment = Deployment {
            metadata: meta(),
            ..Deployment::default()
        };
        assert_eq!(
            kind.url_path(Some("prod")),
            Deployment::url_path(&(), Some("prod"))
        );
        assert_eq!(kind.object_ref(&meta()), deployment.object_ref(&()));
        assert_eq!(
            kind.controller_owner_ref(&meta()),
            deployment.controller_owner_ref(&())
        );
        assert_eq!(kind.name(), "Deployment");
        assert!(!kind.is_custom(), "apps is a built-in group");
    }

    /// What an informer of `kind` lists when the controller watches namespace `prod`.
    fn listed_in_prod(kind: &Kind) -> Vec<String> {
        CacheScope::default()
            .namespaces(["prod"])
            .sources_of(kind.namespaced(), |ns| kind.url_path(ns))
            .into_iter()
            .map(|(url, _)| url)
            .collect()
    }

    #[test]
    fn a_kind_found_at_run_time_lists_in_a_namespace_only_when_it_is_namespaced() {
        let widgets = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.com", "v1", "Widget"),
            "widgets",
        );
        let namespaced = Kind::erase::<DynamicObject>(&widgets, &Scope::Namespaced);
        assert_eq!(
            listed_in_prod(&namespaced),
            ["/apis/example.com/v1/namespaces/prod/widgets"]
        );
        assert!(namespaced.is_custom());
        let cluster = Kind::erase::<DynamicObject>(&widgets, &Scope::Cluster);
        assert_eq!(listed_in_prod(&cluster), ["/apis/example.com/v1/widgets"]);
        assert_eq!(
            listed_in_prod(&Kind::of::<Namespace>()),
            ["/api/v1/namespaces"],
            "a cluster-scoped compiled kind is listed everywhere"
        );
    }

    #[test]
    fn an_object_without_a_uid_has_no_owner_reference() {
        let kind = Kind::of::<Deployment>();
        let unsaved = ObjectMeta {
            uid: None,
            ..meta()
        };
        assert_eq!(kind.controller_owner_ref(&unsaved), None);
    }
}
