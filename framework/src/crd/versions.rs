//! Puts several versions of a kind in one CustomResourceDefinition, converted by a webhook.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig,
    WebhookConversion,
};

/// The path at which an operator serves conversions, and where its CRDs' webhook points.
pub const CONVERSION_PATH: &str = "/convert";

/// The CustomResourceDefinition of a kind in several versions, each described by kube's
/// `CustomResource` derive: `storage`'s versions, stored, with every version of `others`
/// added (served, deprecated or not as each says), and a conversion webhook at
/// [`webhook_service`]. `#[derive(Controller)]` with `#[controller(versions(...))]` makes its
/// kind's definition with it.
///
/// # Panics
///
/// When the definitions are not of one group, kind and scope, or name a version twice: a
/// mistake in the declaration, found when the operator starts.
#[must_use]
pub fn with_versions(
    storage: CustomResourceDefinition,
    others: impl IntoIterator<Item = CustomResourceDefinition>,
) -> CustomResourceDefinition {
    let mut merged = storage;
    for version in &mut merged.spec.versions {
        version.storage = true;
    }
    for other in others {
        let spec = &merged.spec;
        assert!(
            other.spec.group == spec.group
                && other.spec.names.kind == spec.names.kind
                && other.spec.scope == spec.scope,
            "{}/{} ({}) is not a version of {}/{} ({}): a CRD holds the versions of one kind",
            other.spec.group,
            other.spec.names.kind,
            other.spec.scope,
            spec.group,
            spec.names.kind,
            spec.scope,
        );
        for mut version in other.spec.versions {
            assert!(
                merged.spec.versions.iter().all(|v| v.name != version.name),
                "version {} of {} is declared twice",
                version.name,
                merged.spec.names.kind,
            );
            version.storage = false;
            merged.spec.versions.push(version);
        }
    }
    convert_with_webhook(merged, webhook_service())
}

/// `crd` stored in `version`, one of its versions, instead of the one stored so far: during a
/// migration, a new version is served for a release before it becomes the storage version.
///
/// # Panics
///
/// When `crd` has no version `version`: a mistake in the declaration, found when the operator
/// starts.
#[must_use]
pub fn stored_in(mut crd: CustomResourceDefinition, version: &str) -> CustomResourceDefinition {
    assert!(
        crd.spec.versions.iter().any(|v| v.name == version),
        "the storage version {version} is not a version of {}",
        crd.spec.names.kind,
    );
    for v in &mut crd.spec.versions {
        v.storage = v.name == version;
    }
    crd
}

/// `crd` converted by the webhook at `client` (`spec.conversion.strategy: Webhook`, reviews of
/// version `v1`): to point a CRD at a URL with a CA bundle, as tests and self-signed operators
/// do, or at a Service of another name.
#[must_use]
pub fn convert_with_webhook(
    mut crd: CustomResourceDefinition,
    client: WebhookClientConfig,
) -> CustomResourceDefinition {
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".to_owned(),
        webhook: Some(WebhookConversion {
            client_config: Some(client),
            conversion_review_versions: vec!["v1".to_owned()],
        }),
    });
    crd
}

/// The webhook the generated CRDs name, as kubebuilder's scaffold does: the Service
/// `webhook-service` in the namespace `system`, port 443, path [`CONVERSION_PATH`]. The chart
/// (or kustomize) sets the release's Service name and namespace, and cert-manager or the
/// operator the CA bundle.
#[must_use]
pub fn webhook_service() -> WebhookClientConfig {
    WebhookClientConfig {
        service: Some(ServiceReference {
            name: "webhook-service".to_owned(),
            namespace: "system".to_owned(),
            path: Some(CONVERSION_PATH.to_owned()),
            port: Some(443),
        }),
        ..WebhookClientConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use kube::{CustomResource, CustomResourceExt as _};
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    use super::*;

    mod v1alpha1 {
        use super::*;

        #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
        #[kube(group = "test.kubeward.dev", version = "v1alpha1", kind = "Gizmo")]
        #[kube(namespaced, deprecated = "use v1")]
        pub(super) struct GizmoSpec {
            size: u16,
        }
    }

    mod v1 {
        use super::*;

        #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
        #[kube(
            group = "test.kubeward.dev",
            version = "v1",
            kind = "Gizmo",
            namespaced
        )]
        pub(super) struct GizmoSpec {
            size: u32,
        }
    }

    mod cluster {
        use super::*;

        #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
        #[kube(group = "test.kubeward.dev", version = "v2", kind = "Gizmo")]
        pub(super) struct GizmoSpec {
            size: u32,
        }
    }

    #[test]
    fn all_versions_are_served_the_first_is_stored_and_a_webhook_converts() {
        let crd = with_versions(v1::Gizmo::crd(), [v1alpha1::Gizmo::crd()]);
        let versions: Vec<_> = crd
            .spec
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.served, v.storage, v.deprecated))
            .collect();
        assert_eq!(
            versions,
            [
                ("v1", true, true, None),
                ("v1alpha1", true, false, Some(true))
            ]
        );
        let yaml = serde_norway::to_string(&crd.spec.conversion).expect("the stanza encodes");
        assert_eq!(
            yaml,
            "strategy: Webhook\n\
             webhook:\n  \
               clientConfig:\n    \
                 service:\n      \
                   name: webhook-service\n      \
                   namespace: system\n      \
                   path: /convert\n      \
                   port: 443\n  \
               conversionReviewVersions:\n  - v1\n"
        );
        assert_eq!(crd.metadata, v1::Gizmo::crd().metadata);
        assert_eq!(crd.spec.names, v1::Gizmo::crd().spec.names);
    }

    #[test]
    fn a_url_with_a_ca_bundle_replaces_the_service() {
        let client = WebhookClientConfig {
            url: Some("https://127.0.0.1:9443/convert".to_owned()),
            ca_bundle: Some(k8s_openapi::ByteString(b"PEM".to_vec())),
            service: None,
        };
        let crd = with_versions(v1::Gizmo::crd(), [v1alpha1::Gizmo::crd()]);
        let crd = convert_with_webhook(crd, client.clone());
        let webhook = crd.spec.conversion.and_then(|c| c.webhook);
        assert_eq!(webhook.and_then(|w| w.client_config), Some(client));
    }

    #[test]
    #[should_panic(
        expected = "test.kubeward.dev/Gizmo (Cluster) is not a version of test.kubeward.dev/Gizmo (Namespaced)"
    )]
    fn versions_of_another_scope_are_refused() {
        let _ = with_versions(v1::Gizmo::crd(), [cluster::Gizmo::crd()]);
    }

    #[test]
    fn another_version_can_be_the_storage_version() {
        let crd = stored_in(
            with_versions(v1::Gizmo::crd(), [v1alpha1::Gizmo::crd()]),
            "v1alpha1",
        );
        let stored: Vec<_> = crd
            .spec
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.storage))
            .collect();
        assert_eq!(stored, [("v1", false), ("v1alpha1", true)]);
    }

    #[test]
    #[should_panic(expected = "the storage version v2 is not a version of Gizmo")]
    fn a_storage_version_that_is_not_declared_is_refused() {
        let _ = stored_in(v1::Gizmo::crd(), "v2");
    }

    #[test]
    #[should_panic(expected = "version v1 of Gizmo is declared twice")]
    fn a_version_declared_twice_is_refused() {
        let _ = with_versions(v1::Gizmo::crd(), [v1::Gizmo::crd()]);
    }
}
