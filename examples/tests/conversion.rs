//! The example CRD's conversion: `v1alpha1` ↔ `v1` loses nothing, property-tested over every
//! field, and the CRD carries both versions with the webhook.

use kubeward::crd::Definition as _;
use kubeward_examples::configmap_generator::ConfigMapGenerator;
use proptest::prelude::*;
use serde_json::{Value, json};

const V1: &str = "demo.kubeward.dev/v1";
const V1ALPHA1: &str = "demo.kubeward.dev/v1alpha1";

/// A generator in `api_version` with every field the API server may send: metadata with
/// labels, annotations, finalizers and fields kubeward does not know, and a status.
fn generator(api_version: &'static str) -> impl Strategy<Value = Value> {
    (
        "[a-z][a-z0-9-]{0,30}",
        proptest::collection::btree_map("[a-z./]{1,12}", "[ -~]{0,16}", 0..4),
        "\\PC{0,64}",
        proptest::option::of((any::<i64>(), any::<bool>(), "[A-Za-z]{0,12}")),
        any::<u32>(),
    )
        .prop_map(move |(name, labels, text, status, version)| {
            let field = if api_version == V1 { "content" } else { "data" };
            let mut object = json!({
                "apiVersion": api_version,
                "kind": "ConfigMapGenerator",
                "metadata": {
                    "name": name, "namespace": "default", "uid": format!("{version:08x}"),
                    "resourceVersion": version.to_string(), "generation": 2,
                    "labels": labels.clone(), "annotations": labels,
                    "finalizers": ["demo.kubeward.dev/cleanup"],
                    "managedFields": [{ "manager": "test", "operation": "Update" }],
                    "someFutureField": version,
                },
                "spec": { field: text },
            });
            if let Some((generation, ready, reason)) = status {
                object["status"] = json!({
                    "observedGeneration": generation,
                    "conditions": [{
                        "type": "Ready", "status": if ready { "True" } else { "False" },
                        "reason": reason, "message": "m", "observedGeneration": generation,
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }],
                });
            }
            object
        })
}

proptest! {
    #[test]
    fn v1alpha1_to_v1_and_back_loses_nothing(old in generator(V1ALPHA1)) {
        let converter = ConfigMapGenerator::converter();
        let new = converter.convert(old.clone(), V1).map_err(|e| e.to_string());
        prop_assert!(new.is_ok(), "{new:?}");
        let new = new.unwrap_or_default();
        prop_assert_eq!(&new["spec"]["content"], &old["spec"]["data"]);
        prop_assert_eq!(&new["metadata"], &old["metadata"]);
        prop_assert_eq!(&new["status"], &old["status"]);
        let back = converter.convert(new, V1ALPHA1).map_err(|e| e.to_string());
        prop_assert_eq!(back, Ok(old));
    }

    #[test]
    fn v1_to_v1alpha1_and_back_loses_nothing(new in generator(V1)) {
        let converter = ConfigMapGenerator::converter();
        let old = converter.convert(new.clone(), V1ALPHA1).map_err(|e| e.to_string());
        prop_assert!(old.is_ok(), "{old:?}");
        let back = converter.convert(old.unwrap_or_default(), V1).map_err(|e| e.to_string());
        prop_assert_eq!(back, Ok(new));
    }
}

#[test]
fn the_crd_serves_both_versions_stores_v1_and_converts_by_webhook() {
    let crd = ConfigMapGenerator::definition();
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
    let conversion = crd.spec.conversion.expect("a conversion stanza");
    assert_eq!(conversion.strategy, "Webhook");
    let webhook = conversion.webhook.expect("a webhook");
    assert_eq!(webhook.conversion_review_versions, ["v1"]);
    let service = webhook
        .client_config
        .and_then(|c| c.service)
        .expect("a Service");
    assert_eq!(service.path.as_deref(), Some("/convert"));
}
