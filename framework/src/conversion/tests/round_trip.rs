//! Property: spoke → hub → spoke and hub → spoke → hub lose nothing, metadata included.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::gizmo::{FINISH, converter};

const V1: &str = "test.kubeward.dev/v1";
const V1ALPHA1: &str = "test.kubeward.dev/v1alpha1";
const V2: &str = "test.kubeward.dev/v2";

fn metadata() -> impl Strategy<Value = Value> {
    (
        "[a-z][a-z0-9-]{0,20}",
        proptest::collection::btree_map("[a-z]{1,8}", "[ -~]{0,12}", 0..3),
        proptest::option::of("[a-z]{1,8}"),
        any::<u32>(),
    )
        .prop_map(|(name, mut annotations, finish, version)| {
            annotations.remove(FINISH);
            let mut metadata = json!({
                "name": name, "namespace": "default", "uid": format!("{version:x}"),
                "resourceVersion": version.to_string(), "unknownField": [version],
            });
            if !annotations.is_empty() {
                metadata["annotations"] = json!(annotations);
            }
            (metadata, finish)
        })
        .prop_map(|(metadata, finish)| json!({ "metadata": metadata, "finish": finish }))
}

fn status() -> impl Strategy<Value = Option<Value>> {
    proptest::option::of(any::<bool>().prop_map(|ready| json!({ "ready": ready })))
}

/// A hub gizmo whose size fits `v1alpha1`.
fn hub_gizmo() -> impl Strategy<Value = Value> {
    (metadata(), any::<u16>(), "[ -~]{0,16}", status()).prop_map(|(m, size, colour, status)| {
        let mut paint = json!({ "colour": colour });
        if let Some(finish) = m["finish"].as_str() {
            paint["finish"] = json!(finish);
        }
        let mut gizmo = json!({
            "apiVersion": V1, "kind": "Gizmo", "metadata": m["metadata"],
            "spec": { "size": size, "paint": paint },
        });
        if let Some(status) = status {
            gizmo["status"] = status;
        }
        gizmo
    })
}

proptest! {
    #[test]
    fn hub_to_any_spoke_and_back_loses_nothing(hub in hub_gizmo()) {
        let converter = converter();
        for spoke in [V1ALPHA1, V2] {
            let there = converter.convert(hub.clone(), spoke).map_err(|e| e.to_string());
            prop_assert!(there.is_ok(), "{spoke}: {there:?}");
            let there = there.unwrap_or_default();
            prop_assert_eq!(&there["apiVersion"], spoke);
            let back = converter.convert(there, V1).map_err(|e| e.to_string());
            prop_assert_eq!(back, Ok(hub.clone()));
        }
    }

    #[test]
    fn spoke_to_hub_and_back_loses_nothing(hub in hub_gizmo()) {
        let converter = converter();
        for spoke in [V1ALPHA1, V2] {
            let old = converter.convert(hub.clone(), spoke).map_err(|e| e.to_string());
            prop_assert!(old.is_ok(), "{spoke}: {old:?}");
            let old = old.unwrap_or_default();
            let there = converter.convert(old.clone(), V1).map_err(|e| e.to_string());
            let back = there.and_then(|hub| converter.convert(hub, spoke).map_err(|e| e.to_string()));
            prop_assert_eq!(back, Ok(old));
        }
    }
}
