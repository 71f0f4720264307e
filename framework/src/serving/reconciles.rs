//! Answers `/debug/reconciles/NAMESPACE/NAME` (or `/debug/reconciles/NAME` for a cluster-scoped
//! object) with what the controllers' flight recorders hold for that object, as JSON.
//!
//! `?kind=KIND` keeps only the controllers of that kind. An object no controller recorded is a
//! 404 whose JSON lists no controller, so a client tells "never seen" from a wrong address.

use http::StatusCode;
use serde::Serialize;

use crate::cache::ObjectKey;
use crate::controller::{History, Reconciles};

/// Where the flight recorders are served.
pub(crate) const PATH: &str = "/debug/reconciles/";

/// The answer's body.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    namespace: Option<&'a str>,
    name: &'a str,
    controllers: Vec<History>,
}

/// The answer for `object` (`NAMESPACE/NAME` or `NAME`), with the request's `query`.
pub(super) fn answer(
    reconciles: &Reconciles,
    object: &str,
    query: Option<&str>,
) -> (StatusCode, &'static str, Vec<u8>) {
    let parts: Vec<&str> = object.split('/').filter(|p| !p.is_empty()).collect();
    let key = match parts.as_slice() {
        [name] => ObjectKey::new(None, name),
        [namespace, name] => ObjectKey::new(Some(namespace), name),
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                "text/plain; charset=utf-8",
                format!("expected {PATH}NAMESPACE/NAME or {PATH}NAME\n").into_bytes(),
            );
        }
    };
    let kind = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("kind="));
    let controllers = reconciles.of(kind, &key);
    let status = if controllers.is_empty() {
        StatusCode::NOT_FOUND
    } else {
        StatusCode::OK
    };
    let body = Body {
        namespace: key.namespace(),
        name: key.name(),
        controllers,
    };
    match serde_json::to_vec_pretty(&body) {
        Ok(json) => (status, "application/json", json),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain; charset=utf-8",
            format!("encoding the history: {e}\n").into_bytes(),
        ),
    }
}
