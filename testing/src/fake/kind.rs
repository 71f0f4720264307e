//! Describes the kinds the fake API server serves.

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};

/// What the fake needs to know about a kind to serve it.
// The flags mirror independent properties of the real API, read one at a time.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Kind {
    /// The API group, empty for the core group.
    pub(crate) group: String,
    /// The served version.
    pub(crate) version: String,
    /// The kind, as in the objects' `kind` field.
    pub(crate) name: String,
    /// The plural name used in URLs.
    pub(crate) plural: String,
    /// Whether objects live in namespaces.
    pub(crate) namespaced: bool,
    /// Whether the kind has a `/status` subresource.
    pub(crate) status_subresource: bool,
    /// Whether the server maintains `metadata.generation`.
    pub(crate) generation: bool,
    /// Whether this is a custom resource: its updates need `metadata.resourceVersion`, and
    /// create drops its status (built-ins reset it to `{}`).
    pub(crate) custom: bool,
}

impl Kind {
    /// `group/version`, or `version` for the core group.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural` or `plural.group`, as the real server names a resource in error messages.
    pub(crate) fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The key objects of this kind are stored under.
    pub(crate) fn storage_key(&self) -> String {
        format!("{}/{}", self.group, self.plural)
    }
}

/// Built-in kinds (by group and plural) whose API has a `/status` subresource and maintains
/// `metadata.generation`; other built-ins have neither.
const BUILT_INS_WITH_STATUS: &[(&str, &str)] = &[
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("apps", "replicasets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
    ("", "replicationcontrollers"),
    ("", "services"),
    ("", "pods"),
    ("", "nodes"),
    ("", "namespaces"),
    ("", "persistentvolumes"),
    ("", "persistentvolumeclaims"),
    ("autoscaling", "horizontalpodautoscalers"),
    ("policy", "poddisruptionbudgets"),
    ("networking.k8s.io", "ingresses"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
];

/// Built-in kinds with a status subresource whose API does not maintain `metadata.generation`.
const BUILT_INS_WITHOUT_GENERATION: &[(&str, &str)] = &[
    ("", "services"),
    ("", "pods"),
    ("", "nodes"),
    ("", "namespaces"),
    ("", "persistentvolumes"),
    ("", "persistentvolumeclaims"),
];

impl Kind {
    /// Describes a built-in kind, looking up whether it has a status subresource.
    pub(crate) fn built_in(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
    ) -> Self {
        let status_subresource = BUILT_INS_WITH_STATUS.contains(&(group, plural));
        let generation =
            status_subresource && !BUILT_INS_WITHOUT_GENERATION.contains(&(group, plural));
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            name: kind.to_owned(),
            plural: plural.to_owned(),
            namespaced,
            status_subresource,
            generation,
            custom: false,
        }
    }
}

/// Whether a Rust resource type is namespaced; implemented for k8s-openapi's two scopes.
pub trait Scope: private::Sealed {
    /// True for namespaced kinds.
    const NAMESPACED: bool;
}

impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

mod private {
    pub trait Sealed {}
    impl Sealed for k8s_openapi::NamespaceResourceScope {}
    impl Sealed for k8s_openapi::ClusterResourceScope {}
}
