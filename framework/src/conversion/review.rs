//! Answers the API server's `ConversionReview`: every object converted, or a failure that says
//! which object and why.

#[cfg(feature = "webhooks")]
use http::StatusCode;
use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::Value;

use super::Converter;
use super::error::chain;

/// The `reason` of a failed review.
const REASON: &str = "ConversionFailed";

impl Converter {
    /// Answers `review`: converts every object of its request to the desired version, in order,
    /// or fails the whole request with a message naming the first object that could not be
    /// converted (its position, namespace/name and version) and why. A review without a request
    /// gets a failure too; nothing panics on input.
    #[must_use]
    pub fn review(&self, review: ConversionReview) -> ConversionReview {
        review_any(std::slice::from_ref(self), review)
    }
}

/// Answers `review` with whichever of `converters` converts the kind of its objects.
pub(super) fn review_any(converters: &[Converter], review: ConversionReview) -> ConversionReview {
    let Ok(mut request) = ConversionRequest::from_review(review) else {
        return invalid("the ConversionReview has no request");
    };
    let objects = std::mem::take(&mut request.objects);
    let desired = request.desired_api_version.clone();
    let response = ConversionResponse::for_request(request);
    match convert_all(converters, objects, &desired) {
        Ok(converted) => response.success(converted),
        Err(message) => response.failure(Status::failure(&message, REASON)),
    }
    .into_review()
}

/// The HTTP answer to a `ConversionReview` posted as `body`: `200 OK` with the review's answer
/// (converted objects, or a failure naming the object), or `400 Bad Request` with a failed
/// review saying why when the body is not a review with a request.
#[cfg(feature = "webhooks")]
pub(crate) fn answer_body(converters: &[Converter], body: &[u8]) -> (StatusCode, Vec<u8>) {
    let (status, review) = match serde_json::from_slice::<ConversionReview>(body) {
        Ok(review) if review.request.is_none() => (
            StatusCode::BAD_REQUEST,
            invalid("the ConversionReview has no request"),
        ),
        Ok(review) => (StatusCode::OK, review_any(converters, review)),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            invalid(&format!("the body is not a ConversionReview: {e}")),
        ),
    };
    // A review of strings and JSON values always encodes; the fallback keeps that a non-panic.
    let body = serde_json::to_vec(&review).unwrap_or_else(|e| {
        format!(r#"{{"error":"encoding the ConversionReview: {e}"}}"#).into_bytes()
    });
    (status, body)
}

/// A failed review for a request that could not be read at all.
fn invalid(message: &str) -> ConversionReview {
    ConversionResponse::invalid(Status::failure(message, REASON)).into_review()
}

fn convert_all(
    converters: &[Converter],
    objects: Vec<Value>,
    desired: &str,
) -> Result<Vec<Value>, String> {
    let count = objects.len();
    objects
        .into_iter()
        .enumerate()
        .map(|(index, object)| {
            let about = describe(&object, index, count);
            let converter = converter_for(converters, &object, desired)
                .map_err(|why| format!("{about}: {why}"))?;
            converter
                .convert(object, desired)
                .map_err(|e| format!("{about}: {}", chain(&e)))
        })
        .collect()
}

/// The converter of the object's kind and the desired group.
fn converter_for<'a>(
    converters: &'a [Converter],
    object: &Value,
    desired: &str,
) -> Result<&'a Converter, String> {
    let group = desired.split_once('/').map_or("", |(group, _)| group);
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    match converters {
        [only] => Ok(only),
        _ => converters
            .iter()
            .find(|c| c.group() == group && c.kind() == kind)
            .ok_or_else(|| {
                format!("no conversion is declared for kind {kind:?} of group {group:?}")
            }),
    }
}

/// "object 2 of 3 (default/name, group/v1alpha1)", as far as the object says.
fn describe(object: &Value, index: usize, count: usize) -> String {
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
    let metadata = object.get("metadata");
    let name = text(metadata.and_then(|m| m.get("name")));
    let namespace = text(metadata.and_then(|m| m.get("namespace")));
    let api_version = text(object.get("apiVersion"));
    let name = match (namespace, name) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name,
        (_, None) => "without a name".to_owned(),
    };
    let api_version = api_version.unwrap_or_else(|| "without an apiVersion".to_owned());
    format!("object {} of {count} ({name}, {api_version})", index + 1)
}
