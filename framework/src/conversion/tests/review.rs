//! The review: every object converted in order, or one failure naming the object.

use kube::core::conversion::ConversionReview;
use kube::core::response::StatusSummary;
use serde_json::{Value, json};

use super::gizmo::{converter, old_gizmo};
use crate::conversion::review::review_any;
use crate::conversion::{Converter, answer_body};

/// A review as the API server sends it.
fn review(desired: &str, objects: &[Value]) -> ConversionReview {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": { "uid": "705ab4f5", "desiredAPIVersion": desired, "objects": objects },
    }))
    .expect("a well-formed ConversionReview")
}

fn answer(converters: &[Converter], review: ConversionReview) -> Value {
    serde_json::to_value(review_any(converters, review)).expect("a review encodes")
}

#[test]
fn a_review_converts_every_object_in_order_and_answers_its_uid() {
    let mut v2 = old_gizmo("b", 2);
    v2["apiVersion"] = json!("test.kubeward.dev/v2");
    v2["spec"] = json!({ "sizeMm": 20, "paint": { "colour": "blue" } });
    let objects = [old_gizmo("a", 1), v2, old_gizmo("c", 3)];
    let answer = answer(&[converter()], review("test.kubeward.dev/v1", &objects));
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(answer["kind"], "ConversionReview");
    let response = &answer["response"];
    assert_eq!(response["uid"], "705ab4f5");
    assert_eq!(response["result"]["status"], "Success");
    let converted = response["convertedObjects"]
        .as_array()
        .expect("converted objects");
    let names: Vec<_> = converted.iter().map(|o| &o["metadata"]["name"]).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(
        converted
            .iter()
            .all(|o| o["apiVersion"] == "test.kubeward.dev/v1")
    );
    assert_eq!(converted[1]["spec"]["size"], 2);
}

#[test]
fn a_review_fails_as_a_whole_naming_the_object_that_failed_and_why() {
    let mut hub = old_gizmo("big", 1);
    hub["apiVersion"] = json!("test.kubeward.dev/v1");
    hub["spec"] = json!({ "size": 70_000, "paint": { "colour": "red" } });
    let objects = [old_gizmo("a", 1), hub, old_gizmo("c", 3)];
    let answer = answer(
        &[converter()],
        review("test.kubeward.dev/v1alpha1", &objects),
    );
    let response = &answer["response"];
    assert_eq!(response["uid"], "705ab4f5");
    assert_eq!(response["result"]["status"], "Failure");
    assert_eq!(response["result"]["reason"], "ConversionFailed");
    assert_eq!(
        response["result"]["message"],
        "object 2 of 3 (default/big, test.kubeward.dev/v1): the conversion from \
         test.kubeward.dev/v1 to test.kubeward.dev/v1alpha1 failed: size 70000 does not fit \
         v1alpha1's 16 bits"
    );
    assert_eq!(response["convertedObjects"], json!([]));
}

#[test]
fn a_review_without_a_request_is_answered_with_a_failure() {
    let review: ConversionReview = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
    }))
    .expect("a review without request still decodes");
    let answer = review_any(&[converter()], review);
    let response = answer.response.expect("a response");
    assert_eq!(response.result.status, Some(StatusSummary::Failure));
    assert_eq!(
        response.result.message,
        "the ConversionReview has no request"
    );
    assert_eq!(response.uid, "");
}

#[test]
fn with_several_converters_the_review_picks_the_objects_kind_or_says_there_is_none() {
    let widgets = Converter::with_hub::<super::gizmo::other::Widget>().build();
    let both = [widgets.clone(), converter()];
    let converted = answer(&both, review("test.kubeward.dev/v1", &[old_gizmo("a", 1)]));
    assert_eq!(converted["response"]["result"]["status"], "Success");
    let missing = answer(
        &[widgets.clone(), widgets],
        review("test.kubeward.dev/v1", &[old_gizmo("a", 1)]),
    );
    assert_eq!(
        missing["response"]["result"]["message"],
        "object 1 of 1 (default/a, test.kubeward.dev/v1alpha1): no conversion is declared for \
         kind \"Gizmo\" of group \"test.kubeward.dev\""
    );
}

#[test]
fn an_empty_review_succeeds_with_no_objects() {
    let answer = answer(&[converter()], review("test.kubeward.dev/v1", &[]));
    assert_eq!(answer["response"]["result"]["status"], "Success");
    assert_eq!(answer["response"]["convertedObjects"], json!([]));
}

#[test]
fn an_object_without_name_or_version_is_described_as_such() {
    let answer = answer(
        &[converter()],
        review("test.kubeward.dev/v1", &[json!({ "kind": "Gizmo" })]),
    );
    assert_eq!(
        answer["response"]["result"]["message"],
        "object 1 of 1 (without a name, without an apiVersion): not an object with apiVersion, \
         kind and metadata"
    );
}

#[test]
fn bodies_that_are_not_reviews_get_400_with_a_failed_review_saying_why() {
    let converters = [converter()];
    let cases: [(&[u8], &str); 5] = [
        (b"", "the body is not a ConversionReview: EOF while parsing"),
        (b"{not json", "the body is not a ConversionReview: key must be a string"),
        (b"[1, 2]", "the body is not a ConversionReview: invalid type: sequence"),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#,
            "the ConversionReview has no request",
        ),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"1"}}"#,
            "the body is not a ConversionReview: missing field `desiredAPIVersion`",
        ),
    ];
    for (body, expected) in cases {
        let (status, answer) = answer_body(&converters, body);
        assert_eq!(status, http::StatusCode::BAD_REQUEST, "{expected}");
        let answer: Value = serde_json::from_slice(&answer).expect("the answer is JSON");
        assert_eq!(answer["kind"], "ConversionReview");
        assert_eq!(answer["response"]["result"]["status"], "Failure");
        let message = answer["response"]["result"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            message.starts_with(expected),
            "{message:?} for {expected:?}"
        );
    }
}

#[test]
fn a_review_body_gets_200_with_the_converted_objects() {
    let body = serde_json::to_vec(&review("test.kubeward.dev/v1", &[old_gizmo("a", 1)]))
        .expect("a review encodes");
    let (status, answer) = answer_body(&[converter()], &body);
    assert_eq!(status, http::StatusCode::OK);
    let answer: Value = serde_json::from_slice(&answer).expect("the answer is JSON");
    assert_eq!(answer["response"]["uid"], "705ab4f5");
    assert_eq!(
        answer["response"]["convertedObjects"][0]["apiVersion"],
        "test.kubeward.dev/v1"
    );
}
