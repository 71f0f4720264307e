//! Reviews are decoded, answered and encoded as the API server expects; bad input is refused.

use base64::Engine as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::admission::AdmissionRequest;
use serde_json::{Value, json};

use super::{mutate, validate};
use crate::webhook::{Defaulter, Validator, Verdict};

/// Refuses a ConfigMap with a `forbidden` key; warns about updates; tells dry runs apart.
struct NoForbiddenKey;

impl Validator<ConfigMap> for NoForbiddenKey {
    async fn validate_create(
        &self,
        cm: &ConfigMap,
        request: &AdmissionRequest<ConfigMap>,
    ) -> Verdict {
        if cm
            .data
            .as_ref()
            .is_some_and(|d| d.contains_key("forbidden"))
        {
            return Verdict::deny("the key `forbidden` is not allowed");
        }
        if request.dry_run {
            return Verdict::allow().warn("dry run seen");
        }
        Verdict::allow()
    }

    async fn validate_update(
        &self,
        old: &ConfigMap,
        new: &ConfigMap,
        _: &AdmissionRequest<ConfigMap>,
    ) -> Verdict {
        Verdict::allow().warn(format!(
            "{} keys to {}",
            old.data.as_ref().map_or(0, std::collections::BTreeMap::len),
            new.data.as_ref().map_or(0, std::collections::BTreeMap::len)
        ))
    }
}

/// Refuses to delete a ConfigMap labelled `keep`.
struct KeepLabelled;

impl Validator<ConfigMap> for KeepLabelled {
    async fn validate_delete(&self, cm: &ConfigMap, _: &AdmissionRequest<ConfigMap>) -> Verdict {
        if cm
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("keep"))
        {
            Verdict::deny("labelled keep")
        } else {
            Verdict::allow()
        }
    }
}

/// Sets `data.size` to `small` when missing.
struct DefaultSize;

impl Defaulter<ConfigMap> for DefaultSize {
    async fn default(&self, cm: &mut ConfigMap, _: &AdmissionRequest<ConfigMap>) -> Verdict {
        cm.data
            .get_or_insert_with(Default::default)
            .entry("size".into())
            .or_insert_with(|| "small".into());
        Verdict::allow()
    }
}

// The JSON helpers take values so that calls read as the review they build.
#[allow(clippy::needless_pass_by_value)]
fn review(operation: &str, object: Value, old: Value, dry_run: bool) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": "cm", "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "admin"},
            "object": object, "oldObject": old, "dryRun": dry_run,
        }
    }))
    .unwrap()
}

#[allow(clippy::needless_pass_by_value)]
fn config_map(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": data})
}

fn body(response: &http::Response<bytes::Bytes>) -> Value {
    serde_json::from_slice(response.body()).unwrap()
}

#[tokio::test]
async fn a_denial_carries_the_validators_message_and_the_request_uid() {
    let answer = validate::<ConfigMap, _>(
        &NoForbiddenKey,
        &review(
            "CREATE",
            config_map(json!({"forbidden": "x"})),
            Value::Null,
            false,
        ),
    )
    .await;
    assert_eq!(answer.status(), 200);
    let review = body(&answer);
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    assert_eq!(
        review["response"]["uid"],
        "705ab4f5-6393-11e8-b7cc-42010a800002"
    );
    assert_eq!(review["response"]["allowed"], false);
    assert_eq!(
        review["response"]["status"]["message"],
        "the key `forbidden` is not allowed"
    );
    assert_eq!(review["response"]["status"]["code"], 403);
}

#[tokio::test]
async fn updates_get_the_old_object_and_warnings_reach_the_client() {
    let answer = validate::<ConfigMap, _>(
        &NoForbiddenKey,
        &review(
            "UPDATE",
            config_map(json!({"a": "1", "b": "2"})),
            config_map(json!({"a": "1"})),
            false,
        ),
    )
    .await;
    let review = body(&answer);
    assert_eq!(review["response"]["allowed"], true);
    assert_eq!(review["response"]["warnings"], json!(["1 keys to 2"]));
}

#[tokio::test]
async fn dry_run_is_passed_to_the_validator() {
    let answer = validate::<ConfigMap, _>(
        &NoForbiddenKey,
        &review("CREATE", config_map(json!({})), Value::Null, true),
    )
    .await;
    assert_eq!(
        body(&answer)["response"]["warnings"],
        json!(["dry run seen"])
    );
}

#[tokio::test]
async fn a_defaulters_change_is_a_base64_json_patch_that_leaves_unknown_fields_alone() {
    let mut object = config_map(json!({"colour": "blue"}));
    object["notAConfigMapField"] = json!({"kept": true});
    let answer = mutate::<ConfigMap, _>(
        &DefaultSize,
        &review("CREATE", object.clone(), Value::Null, false),
    )
    .await;
    let review = body(&answer);
    assert_eq!(review["response"]["allowed"], true);
    assert_eq!(review["response"]["patchType"], "JSONPatch");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(review["response"]["patch"].as_str().unwrap())
        .unwrap();
    let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
    json_patch::patch(&mut object, &patch).unwrap();
    assert_eq!(object["data"], json!({"colour": "blue", "size": "small"}));
    assert_eq!(
        object["notAConfigMapField"],
        json!({"kept": true}),
        "{patch:?}"
    );
}

#[tokio::test]
async fn an_object_already_defaulted_gets_no_patch() {
    let answer = mutate::<ConfigMap, _>(
        &DefaultSize,
        &review(
            "CREATE",
            config_map(json!({"size": "big"})),
            Value::Null,
            false,
        ),
    )
    .await;
    let review = body(&answer);
    assert_eq!(review["response"]["allowed"], true);
    assert!(review["response"].get("patch").is_none(), "{review}");
}

#[tokio::test]
async fn an_object_that_does_not_decode_as_the_kind_is_refused_with_the_reason_under_its_uid() {
    let answer = validate::<ConfigMap, _>(
        &NoForbiddenKey,
        &review(
            "CREATE",
            config_map(json!(["not", "a", "map"])),
            Value::Null,
            false,
        ),
    )
    .await;
    assert_eq!(answer.status(), 200);
    let review = body(&answer);
    assert_eq!(
        review["response"]["uid"],
        "705ab4f5-6393-11e8-b7cc-42010a800002"
    );
    assert_eq!(review["response"]["allowed"], false);
    let message = review["response"]["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("cannot decode the AdmissionReview as ConfigMap"),
        "{message}"
    );
}

#[tokio::test]
async fn a_body_without_a_readable_uid_is_a_bad_request() {
    for garbage in [
        &b"{not json"[..],
        b"{}",
        b"[1,2]",
        br#"{"request": {"uid": 7}}"#,
    ] {
        let answer = validate::<ConfigMap, _>(&NoForbiddenKey, garbage).await;
        assert_eq!(answer.status(), 400, "{}", String::from_utf8_lossy(garbage));
        let review = body(&answer);
        assert_eq!(review["response"]["allowed"], false);
        assert!(
            !review["response"]["status"]["message"]
                .as_str()
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn deletes_and_connects_are_admitted_by_a_defaulter_without_a_patch() {
    let answer = mutate::<ConfigMap, _>(
        &DefaultSize,
        &review("DELETE", Value::Null, config_map(json!({})), false),
    )
    .await;
    let review = body(&answer);
    assert_eq!(review["response"]["allowed"], true);
    assert!(review["response"].get("patch").is_none());
}

#[tokio::test]
async fn a_delete_is_validated_on_the_old_object() {
    let mut kept = config_map(json!({}));
    kept["metadata"]["labels"] = json!({"keep": "yes"});
    let answer =
        validate::<ConfigMap, _>(&KeepLabelled, &review("DELETE", Value::Null, kept, false)).await;
    assert_eq!(
        body(&answer)["response"]["status"]["message"],
        "labelled keep"
    );
    let answer = validate::<ConfigMap, _>(
        &KeepLabelled,
        &review("DELETE", Value::Null, config_map(json!({})), false),
    )
    .await;
    assert_eq!(body(&answer)["response"]["allowed"], true);
}

#[tokio::test]
async fn an_update_without_its_old_object_is_refused_not_a_panic() {
    let answer = validate::<ConfigMap, _>(
        &NoForbiddenKey,
        &review("UPDATE", config_map(json!({})), Value::Null, false),
    )
    .await;
    let review = body(&answer);
    assert_eq!(review["response"]["allowed"], false);
    assert!(
        review["response"]["status"]["message"]
            .as_str()
            .unwrap()
            .contains("lacks the object")
    );
}

mod patch_property {
    //! The defaulter's patch, applied to the object as it came, gives the defaulted object and
    //! keeps every field the type does not know.

    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::super::patch;

    fn data() -> impl Strategy<Value = BTreeMap<String, String>> {
        prop::collection::btree_map("[a-z]{1,4}", "[a-z0-9]{0,6}", 0..6)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn the_patch_turns_the_raw_object_into_the_defaulted_one_keeping_unknown_fields(
            before in data(),
            after in data(),
            unknown in prop::collection::btree_map("x[a-z]{1,4}", "[a-z]{0,4}", 0..3),
            labels in prop::option::of(prop::collection::btree_map("[a-z]{1,3}", "[a-z]{1,3}", 0..3)),
        ) {
            let mut cm = k8s_openapi::api::core::v1::ConfigMap::default();
            cm.metadata.name = Some("cm".into());
            cm.metadata.labels = labels;
            cm.data = Some(before);
            let typed_before = serde_json::to_value(&cm).unwrap();
            let mut raw = typed_before.clone();
            for (key, value) in &unknown {
                raw[key] = value.clone().into();
            }
            cm.data = Some(after);
            cm.metadata.labels = None;
            let typed_after = serde_json::to_value(&cm).unwrap();

            let patch = patch(Some(&raw), &typed_before, &typed_after);
            let mut patched = raw.clone();
            json_patch::patch(&mut patched, &patch).unwrap();
            let mut expected = typed_after;
            for (key, value) in &unknown {
                expected[key] = value.clone().into();
            }
            prop_assert_eq!(patched, expected);
        }
    }
}
