//! Answers `AdmissionReview` bodies: decodes the typed request, asks the validator or defaulter,
//! and encodes its verdict (with the defaulter's JSON patch, base64 as the API wants it).

use base64::Engine as _;
use bytes::Bytes;
use http::{Response, StatusCode};
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use serde_json::Value;

use super::{Admissible, Defaulter, Validator, Verdict};

/// The status code in the `status` of a refused request (as controller-runtime sends).
const DENIED: u16 = 403;

/// The answer to a validating review in `body`.
pub(crate) async fn validate<K: Admissible, V: Validator<K>>(
    validator: &V,
    body: &[u8],
) -> Response<Bytes> {
    let request = match decode::<K>(body) {
        Ok(request) => request,
        Err(refusal) => return *refusal,
    };
    let verdict = match (&request.operation, &request.object, &request.old_object) {
        (Operation::Create, Some(object), _) => validator.validate_create(object, &request).await,
        (Operation::Update, Some(new), Some(old)) => {
            validator.validate_update(old, new, &request).await
        }
        (Operation::Delete, _, Some(old)) => validator.validate_delete(old, &request).await,
        (Operation::Connect, ..) => Verdict::allow(),
        (operation, ..) => Verdict::deny(format!(
            "the {operation:?} AdmissionReview lacks the object(s) it needs"
        )),
    };
    answer(&request, &verdict, None)
}

/// The answer to a mutating review in `body`.
pub(crate) async fn mutate<K: Admissible, D: Defaulter<K>>(
    defaulter: &D,
    body: &[u8],
) -> Response<Bytes> {
    let request = match decode::<K>(body) {
        Ok(request) => request,
        Err(refusal) => return *refusal,
    };
    let (Operation::Create | Operation::Update) = request.operation else {
        return answer(&request, &Verdict::allow(), None);
    };
    let Some(mut object) = request.object.clone() else {
        return answer(
            &request,
            &Verdict::deny("the AdmissionReview has no object to default"),
            None,
        );
    };
    let typed_before = serde_json::to_value(&object);
    let verdict = defaulter.default(&mut object, &request).await;
    if !verdict.is_allowed() {
        return answer(&request, &verdict, None);
    }
    let patch = typed_before
        .and_then(|before| Ok((before, serde_json::to_value(&object)?)))
        .map(|(before, after)| patch(raw_object(body).as_ref(), &before, &after));
    match patch {
        Ok(patch) => answer(&request, &verdict, Some(patch)),
        Err(e) => answer(
            &request,
            &Verdict::deny(format!("encoding the defaulted object: {e}")),
            None,
        ),
    }
}

/// The JSON patch from the object as it came (`raw`) to `after`, leaving alone the fields the
/// type does not know: those are in `raw` but not in `typed_before`, and are never removed.
fn patch(raw: Option<&Value>, typed_before: &Value, after: &Value) -> json_patch::Patch {
    let Some(raw) = raw else {
        return json_patch::diff(typed_before, after);
    };
    let json_patch::Patch(operations) = json_patch::diff(raw, after);
    json_patch::Patch(
        operations
            .into_iter()
            .filter(|operation| match operation {
                json_patch::PatchOperation::Remove(remove) => {
                    typed_before.pointer(remove.path.as_str()).is_some()
                }
                _ => true,
            })
            .collect(),
    )
}

/// The `request.object` of a review as it came, untyped.
fn raw_object(body: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Review {
        request: Request,
    }
    #[derive(serde::Deserialize)]
    struct Request {
        object: Value,
    }
    serde_json::from_slice::<Review>(body)
        .ok()
        .map(|review| review.request.object)
}

/// The typed request in `body`, or the answer to send instead: 200 with a refusal when the
/// request's uid can be read (so the API server reports the reason), 400 when it cannot.
fn decode<K: Admissible>(body: &[u8]) -> Result<AdmissionRequest<K>, Box<Response<Bytes>>> {
    let error = match serde_json::from_slice::<AdmissionReview<K>>(body) {
        Ok(review) => match review.try_into() {
            Ok(request) => return Ok(request),
            Err(_) => "the AdmissionReview has no request".to_owned(),
        },
        Err(e) => format!("cannot decode the AdmissionReview as {}: {e}", K::kind(&())),
    };
    let untyped: Option<Value> = serde_json::from_slice(body).ok();
    let request = untyped.as_ref().and_then(|review| review.get("request"));
    let uid = request
        .and_then(|request| request.get("uid"))
        .and_then(Value::as_str);
    let Some(uid) = uid else {
        return Err(Box::new(encode(
            StatusCode::BAD_REQUEST,
            &AdmissionResponse::invalid(&error).into_review(),
            None,
        )));
    };
    let api_version = untyped
        .as_ref()
        .and_then(|review| review.get("apiVersion"))
        .and_then(Value::as_str)
        .unwrap_or("admission.k8s.io/v1");
    let mut response = AdmissionResponse::invalid(&error);
    uid.clone_into(&mut response.uid);
    api_version.clone_into(&mut response.types.api_version);
    Err(Box::new(encode(
        StatusCode::OK,
        &response.into_review(),
        None,
    )))
}

/// The review answering `request` with `verdict` and, when it admits, `patch` (if not empty).
fn answer<K: Admissible>(
    request: &AdmissionRequest<K>,
    verdict: &Verdict,
    patch: Option<json_patch::Patch>,
) -> Response<Bytes> {
    let mut response = AdmissionResponse::from(request);
    if let Some(message) = verdict.denial() {
        response = response.deny(message);
        response.result.code = DENIED;
        "Forbidden".clone_into(&mut response.result.reason);
    }
    if !verdict.warnings().is_empty() {
        response.warnings = Some(verdict.warnings().to_vec());
    }
    let patch = patch.filter(|p| verdict.is_allowed() && !p.0.is_empty());
    encode(StatusCode::OK, &response.into_review(), patch)
}

/// `review` as a JSON response, with `patch` base64-encoded in `response.patch`.
///
/// Without a patch the review is written straight to bytes; only a patch goes through a JSON
/// tree, to put it where kube's type cannot (base64, with its `patchType`).
fn encode(
    status: StatusCode,
    review: &AdmissionReview<kube::core::DynamicObject>,
    patch: Option<json_patch::Patch>,
) -> Response<Bytes> {
    let encoded = match patch {
        None => serde_json::to_vec(review),
        Some(patch) => serde_json::to_value(review).and_then(|mut review| {
            if let Some(response) = review.get_mut("response") {
                let bytes = serde_json::to_vec(&patch)?;
                response["patch"] = base64::engine::general_purpose::STANDARD
                    .encode(bytes)
                    .into();
                response["patchType"] = "JSONPatch".into();
            }
            serde_json::to_vec(&review)
        }),
    };
    match encoded {
        Ok(body) => super::route::json(status, body),
        Err(e) => super::route::json(
            StatusCode::INTERNAL_SERVER_ERROR,
            serde_json::to_vec(
                &serde_json::json!({ "error": format!("encoding the AdmissionReview: {e}") }),
            )
            .unwrap_or_default(),
        ),
    }
}

#[cfg(test)]
#[path = "tests/review.rs"]
mod tests;
