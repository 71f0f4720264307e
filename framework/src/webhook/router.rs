//! Dispatches HTTPS requests to routes after checking method, `Content-Type` and body size.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;

use super::Route;
use super::route::{Handler, json};
use crate::tls::{BodyError, read_limited};

/// The largest body the server reads: 3 MiB, the API server's own request limit, so that any
/// object the API server accepts fits in a review.
pub(crate) const BODY_LIMIT: usize = 3 * 1024 * 1024;

/// The routes of a webhook server, by path.
#[derive(Clone, Default)]
pub(crate) struct Router {
    routes: Arc<HashMap<String, Handler>>,
    limit: usize,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("paths", &self.routes.keys().collect::<Vec<_>>())
            .field("limit", &self.limit)
            .finish()
    }
}

impl Router {
    /// Answers `routes`, reading bodies up to `limit` bytes.
    pub(crate) fn new(routes: &[Route], limit: usize) -> Self {
        Self {
            routes: Arc::new(
                routes
                    .iter()
                    .map(|r| (r.path.clone(), Arc::clone(&r.handler)))
                    .collect(),
            ),
            limit,
        }
    }

    /// The answer to `request`: 404 for an unknown path, 405 for a method other than POST, 415
    /// for a body that is not JSON, 413 for one over the limit, else the route's answer.
    pub(crate) async fn answer(&self, request: Request<Incoming>) -> Response<Bytes> {
        let Some(handler) = self.routes.get(request.uri().path()) else {
            return error(
                StatusCode::NOT_FOUND,
                &format!("no webhook at {}", request.uri().path()),
            );
        };
        if request.method() != Method::POST {
            let mut response = error(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("{} is not allowed; webhooks take POST", request.method()),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
            return response;
        }
        if !is_json(request.headers().get(header::CONTENT_TYPE)) {
            let given = request
                .headers()
                .get(header::CONTENT_TYPE)
                .map_or("none".into(), |v| {
                    String::from_utf8_lossy(v.as_bytes()).into_owned()
                });
            return error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("Content-Type {given} is not supported; send application/json"),
            );
        }
        match read_limited(request.into_body(), self.limit).await {
            Ok(body) => handler(body).await,
            Err(e @ BodyError::TooLarge { .. }) => {
                error(StatusCode::PAYLOAD_TOO_LARGE, &e.to_string())
            }
            Err(BodyError::Read(source)) => error(
                StatusCode::BAD_REQUEST,
                &format!("reading the request body: {source}"),
            ),
        }
    }
}

/// Whether a `Content-Type` is JSON (`application/json`, with parameters or not).
fn is_json(content_type: Option<&header::HeaderValue>) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// A JSON error answer: `{"error": message}`.
fn error(status: StatusCode, message: &str) -> Response<Bytes> {
    let body = serde_json::to_vec(&serde_json::json!({ "error": message })).unwrap_or_default();
    json(status, body)
}
