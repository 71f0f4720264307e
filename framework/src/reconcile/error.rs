//! Says what went wrong in a reconcile-kit call, naming the missing permission on a 403.

use kube::Resource;
use kube::api::ApiResource;

/// An error of the reconcile kit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API server refused the request for lack of permission (403): the controller's RBAC
    /// needs `verb` on `resource` of `group`.
    #[error(
        "the controller may not {verb} {resource} in API group {group:?} {scope}; \
         its RBAC role needs verb {verb:?} on resource {resource:?} of group {group:?}",
        scope = namespace.as_deref().map_or_else(|| "cluster-wide".to_owned(), |ns| format!("in namespace {ns:?}"))
    )]
    Forbidden {
        /// The refused verb, e.g. `patch`.
        verb: &'static str,
        /// The resource in the plural, e.g. `configmaps` or `widgets/status`.
        resource: String,
        /// The API group, empty for the core group.
        group: String,
        /// The namespace, `None` for a cluster-scoped resource.
        namespace: Option<String>,
        /// The API server's answer.
        #[source]
        source: Box<kube::Error>,
    },
    /// Another request failed.
    #[error("{action}")]
    Api {
        /// What was being done, e.g. `applying ConfigMap ns/name`.
        action: String,
        /// The API server's answer, or the transport error.
        #[source]
        source: Box<kube::Error>,
    },
    /// An object could not be turned into JSON.
    #[error("encoding {what} as JSON")]
    Json {
        /// What was being encoded.
        what: String,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// An object to apply or an owner lacks what the call needs (a name, a namespace, a uid).
    #[error("{kind} {name:?} has no {missing}")]
    Incomplete {
        /// The kind of the object.
        kind: String,
        /// Its name (empty when that is what is missing).
        name: String,
        /// What is missing: `metadata.name`, `metadata.namespace` or `metadata.uid`.
        missing: &'static str,
    },
    /// The controller has no cache of this kind to find owned objects in.
    #[error(
        "the controller keeps no cache of {kind}; declare that it owns them (`owns::<{kind}>()` \
         or `#[controller(owns({kind}))]`)"
    )]
    NotCached {
        /// The kind.
        kind: String,
    },
}

impl Error {
    /// The error of a request doing `verb` on `C` objects in `namespace`; a 403 becomes
    /// [`Error::Forbidden`].
    pub(super) fn request<C: Resource<DynamicType = ()>>(
        verb: &'static str,
        subresource: Option<&str>,
        namespace: Option<&str>,
        name: &str,
        source: kube::Error,
    ) -> Self {
        let of = ApiResource::erase::<C>(&());
        Self::request_on(&of, verb, subresource, namespace, name, source)
    }

    /// As [`Self::request`], on objects of the API resource `of`.
    pub(super) fn request_on(
        of: &ApiResource,
        verb: &'static str,
        subresource: Option<&str>,
        namespace: Option<&str>,
        name: &str,
        source: kube::Error,
    ) -> Self {
        let mut resource = of.plural.clone();
        if let Some(sub) = subresource {
            resource = format!("{resource}/{sub}");
        }
        if matches!(&source, kube::Error::Api(status) if status.code == 403) {
            return Self::Forbidden {
                verb,
                resource,
                group: of.group.clone(),
                namespace: namespace.map(str::to_owned),
                source: Box::new(source),
            };
        }
        let kind = &of.kind;
        let target = match namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_owned(),
        };
        let doing = match (verb, subresource) {
            ("patch", Some(sub)) => format!("patching the {sub} of"),
            ("patch", None) => "applying".to_owned(),
            ("delete", _) => "deleting".to_owned(),
            (other, _) => format!("{other}ing"),
        };
        Self::Api {
            action: format!("{doing} {kind} {target}"),
            source: Box::new(source),
        }
    }

    /// The API server's answer, when the error comes from one.
    #[must_use]
    pub fn kube(&self) -> Option<&kube::Error> {
        match self {
            Self::Forbidden { source, .. } | Self::Api { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Whether the API server answered 404 Not Found.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        matches!(self.kube(), Some(kube::Error::Api(status)) if status.code == 404)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Namespace;

    fn answer(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("no", "Forbidden")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn a_403_names_the_verb_resource_group_and_namespace() {
        let error = Error::request::<Deployment>("patch", None, Some("prod"), "web", answer(403));
        assert!(matches!(error, Error::Forbidden { .. }), "{error:?}");
        assert_eq!(
            error.to_string(),
            "the controller may not patch deployments in API group \"apps\" in namespace \"prod\"; \
             its RBAC role needs verb \"patch\" on resource \"deployments\" of group \"apps\""
        );
    }

    #[test]
    fn a_403_on_a_cluster_scoped_status_names_the_subresource() {
        let error = Error::request::<Namespace>("patch", Some("status"), None, "a", answer(403));
        assert!(
            error.to_string().starts_with(
                "the controller may not patch namespaces/status in API group \"\" cluster-wide"
            ),
            "{error}"
        );
    }

    #[test]
    fn other_answers_say_what_was_being_done_and_keep_the_cause() {
        let error = Error::request::<Deployment>("delete", None, Some("prod"), "web", answer(404));
        assert_eq!(error.to_string(), "deleting Deployment prod/web");
        assert!(error.is_not_found());
        assert!(std::error::Error::source(&error).is_some());
    }
}
