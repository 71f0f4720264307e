//! The converter: through the hub, by a declared pair, keeping metadata.

use serde_json::{Value, json};

use super::gizmo::{FINISH, converter, old_gizmo, other, v1, v1alpha1, v2};
use crate::conversion::{Converter, Error};

const V1: &str = "test.kubeward.dev/v1";
const V1ALPHA1: &str = "test.kubeward.dev/v1alpha1";
const V2: &str = "test.kubeward.dev/v2";

#[test]
fn a_spoke_converts_to_the_hub_with_its_metadata_as_it_was() -> Result<(), Error> {
    let old = old_gizmo("a", 7);
    assert_eq!(converter().crd_name(), "gizmos.test.kubeward.dev");
    let new = converter().convert(old.clone(), V1)?;
    assert_eq!(new["apiVersion"], V1);
    assert_eq!(new["kind"], "Gizmo");
    assert_eq!(
        new["spec"],
        json!({ "size": 7, "paint": { "colour": "red", "finish": "matte" } })
    );
    assert_eq!(new["status"], json!({ "ready": true }));
    let mut expected_metadata = old["metadata"].clone();
    expected_metadata["annotations"] = json!({ "note": "kept" });
    assert_eq!(
        new["metadata"], expected_metadata,
        "only the annotation the conversion moved into the spec is gone; unknown fields stay"
    );
    Ok(())
}

#[test]
fn spokes_convert_to_each_other_through_the_hub() -> Result<(), Error> {
    let v2 = converter().convert(old_gizmo("a", 7), V2)?;
    assert_eq!(v2["apiVersion"], V2);
    assert_eq!(
        v2["spec"],
        json!({ "sizeMm": 70, "paint": { "colour": "red", "finish": "matte" } })
    );
    let back = converter().convert(v2, V1ALPHA1)?;
    assert_eq!(back, old_gizmo("a", 7));
    Ok(())
}

#[test]
fn a_declared_pair_replaces_the_hub_for_its_direction_only() -> Result<(), Error> {
    #[allow(clippy::unnecessary_wraps, reason = "the signature `pair` takes")]
    fn straight(old: v1alpha1::Gizmo) -> Result<v2::Gizmo, std::convert::Infallible> {
        let paint = v1::Paint {
            colour: format!("straight {}", old.spec.colour),
            finish: None,
        };
        let spec = v2::GizmoSpec {
            size_mm: u64::from(old.spec.size),
            paint,
        };
        Ok(v2::Gizmo {
            metadata: old.metadata,
            spec,
            status: None,
        })
    }
    let converter = Converter::with_hub::<v1::Gizmo>()
        .spoke::<v1alpha1::Gizmo>()
        .spoke::<v2::Gizmo>()
        .pair(straight)
        .build();
    let new = converter.convert(old_gizmo("a", 7), V2)?;
    assert_eq!(new["spec"]["paint"]["colour"], "straight red");
    let back = converter.convert(new, V1ALPHA1)?;
    assert_eq!(
        back["spec"]["colour"], "straight red",
        "back through the hub"
    );
    Ok(())
}

#[test]
fn an_object_already_in_the_desired_version_comes_back_untouched() -> Result<(), Error> {
    let old = old_gizmo("a", 7);
    assert_eq!(converter().convert(old.clone(), V1ALPHA1)?, old);
    Ok(())
}

#[test]
fn a_failed_conversion_says_which_versions_and_why() {
    let hub = converter()
        .convert(old_gizmo("a", 7), V1)
        .map(|mut hub| {
            hub["spec"]["size"] = json!(70_000);
            hub
        })
        .expect("v1alpha1 converts to the hub");
    let error = converter()
        .convert(hub, V1ALPHA1)
        .expect_err("70000 does not fit 16 bits");
    assert!(matches!(error, Error::Convert { .. }), "{error:?}");
    assert_eq!(
        crate::conversion::error::chain(&error),
        "the conversion from test.kubeward.dev/v1 to test.kubeward.dev/v1alpha1 failed: \
         size 70000 does not fit v1alpha1's 16 bits"
    );
}

#[test]
fn objects_that_are_not_of_the_kind_or_not_objects_are_errors_not_panics() {
    let converter = converter();
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!(17), V1, "not an object"),
        (
            json!({ "kind": "Gizmo", "metadata": {} }),
            V1,
            "not an object",
        ),
        (
            json!({ "apiVersion": V1ALPHA1, "kind": "Gizmo", "metadata": "x" }),
            V1,
            "not an object",
        ),
        (
            json!({ "apiVersion": V1ALPHA1, "kind": "Widget", "metadata": {} }),
            V1,
            "Widget is not of the converter's kind test.kubeward.dev/Gizmo",
        ),
        (
            json!({ "apiVersion": "other.dev/v1alpha1", "kind": "Gizmo", "metadata": {} }),
            V1,
            "other.dev/v1alpha1 is not of the converter's kind",
        ),
        (old_gizmo("a", 1), "other.dev/v1", "other.dev/v1 is not"),
        (old_gizmo("a", 1), "v1", "v1 is not"),
        (
            old_gizmo("a", 1),
            "test.kubeward.dev/v3",
            "no conversion from test.kubeward.dev/v1alpha1 to test.kubeward.dev/v3",
        ),
        (
            json!({ "apiVersion": V1ALPHA1, "kind": "Gizmo", "metadata": {},
                    "spec": { "size": "big" } }),
            V1,
            "does not decode as test.kubeward.dev/v1alpha1",
        ),
    ];
    for (object, desired, expected) in cases {
        let outcome = converter.convert(object.clone(), desired);
        let message = outcome
            .as_ref()
            .map_err(|e| crate::conversion::error::chain(e))
            .expect_err("the object cannot be converted");
        assert!(
            message.contains(expected),
            "{object} to {desired}: {message:?} should contain {expected:?}"
        );
    }
}

#[test]
#[should_panic(
    expected = "test.kubeward.dev/v1alpha1 Widget is not a version of test.kubeward.dev/Gizmo"
)]
fn declaring_a_version_of_another_kind_panics_naming_it() {
    let _ = Converter::with_hub::<v1::Gizmo>().pair(
        |w: other::Widget| -> Result<v1::Gizmo, std::convert::Infallible> {
            Ok(v1::Gizmo::new(
                &w.metadata.name.unwrap_or_default(),
                v1::GizmoSpec {
                    size: 0,
                    paint: v1::Paint {
                        colour: String::new(),
                        finish: None,
                    },
                },
            ))
        },
    );
}

#[test]
fn the_hub_keeps_annotations_it_does_not_know() -> Result<(), Error> {
    let mut old = old_gizmo("a", 7);
    old["metadata"]["annotations"] = json!({ FINISH: "gloss" });
    let new = converter().convert(old, V1)?;
    assert_eq!(new["spec"]["paint"]["finish"], "gloss");
    assert!(
        new["metadata"].get("annotations").is_none(),
        "the conversion removed the only annotation: {new}"
    );
    Ok(())
}
