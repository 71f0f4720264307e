//! Dispatches HTTPS requests to routes after checking method, `Content-Type` and body size.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::request::Parts;
use http::{Method, Request, Response, StatusCode, Version, header};
use hyper::body::Body;
use tokio::time::Instant;

use super::Route;
use super::route::{Handler, json};
use crate::metrics::WebhookMetrics;
use crate::tls::{BodyError, Closed, Closes, DRAIN_LIMIT, Reply, read_limited};

/// The largest body the server reads: 3 MiB, the API server's own request limit, so that any
/// object the API server accepts fits in a review.
pub(crate) const BODY_LIMIT: usize = 3 * 1024 * 1024;

/// The routes of a webhook server, by path.
#[derive(Clone, Default)]
pub(crate) struct Router {
    routes: Arc<HashMap<String, Handler>>,
    limit: usize,
    read_timeout: Duration,
    closes: Closes,
    metrics: Option<WebhookMetrics>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("paths", &self.routes.keys().collect::<Vec<_>>())
            .field("limit", &self.limit)
            .field("read_timeout", &self.read_timeout)
            .field("closes", &self.closes)
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

impl Router {
    /// Answers `routes`, reading bodies up to `limit` bytes within `read_timeout`.
    pub(crate) fn new(routes: &[Route], limit: usize, read_timeout: Duration) -> Self {
        Self {
            read_timeout,
            closes: Closes::default(),
            metrics: None,
            routes: Arc::new(
                routes
                    .iter()
                    .map(|r| (r.path.clone(), Arc::clone(&r.handler)))
                    .collect(),
            ),
            limit,
        }
    }

    /// Counts requests, and the connections closed for a late body, in `metrics`.
    pub(crate) fn instrument(&mut self, metrics: WebhookMetrics) {
        for path in self.routes.keys() {
            metrics.serve(path);
        }
        self.closes = metrics.closes("webhook");
        self.metrics = Some(metrics);
    }

    /// The answer to `request`: 404 for an unknown path, 405 for a method other than POST, 415
    /// for a body that is not JSON, 413 for one over the limit, 408 for one that does not arrive
    /// within the read timeout, else the route's answer. An HTTP/1 connection is closed after a
    /// 408, and after a 413 whose body was not read to its end; over HTTP/2 a body a refusal
    /// left unread is read and discarded after the answer is sent (see [`Reply`]), so that no
    /// answer is lost to a stream reset.
    pub(crate) async fn answer<B>(&self, request: Request<B>) -> Response<Reply>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (head, mut body) = request.into_parts();
        let response = self.answer_head(&head, &mut body).await;
        if head.version < Version::HTTP_2 || body.is_end_stream() {
            response.map(Reply::new)
        } else {
            response.map(|answer| Reply::holding(answer, body))
        }
    }

    /// The answer to the request `head`, reading as much of its `body` as it needs.
    async fn answer_head<B>(&self, head: &Parts, body: &mut B) -> Response<Bytes>
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let path = head.uri.path();
        let Some(handler) = self.routes.get(path) else {
            return error(StatusCode::NOT_FOUND, &format!("no webhook at {path}"));
        };
        let Some(metrics) = &self.metrics else {
            return self.answer_route(handler, head, body).await;
        };
        let _in_flight = metrics.begin(path);
        let start = Instant::now();
        let response = self.answer_route(handler, head, body).await;
        metrics.answered(path, response.status(), start.elapsed());
        response
    }

    /// The answer of the route whose `handler` the request `head` is for.
    async fn answer_route<B>(
        &self,
        handler: &Handler,
        head: &Parts,
        body: &mut B,
    ) -> Response<Bytes>
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if head.method != Method::POST {
            let mut response = error(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("{} is not allowed; webhooks take POST", head.method),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
            return response;
        }
        let content_type = head.headers.get(header::CONTENT_TYPE);
        if !is_json(content_type) {
            let given = content_type.map_or("none".into(), |v| {
                String::from_utf8_lossy(v.as_bytes()).into_owned()
            });
            return error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("Content-Type {given} is not supported; send application/json"),
            );
        }
        // HTTP/2 needs no drain: the rest is read after the answer (see `answer`).
        let http1 = head.version < Version::HTTP_2;
        let drain = if http1 { DRAIN_LIMIT } else { 0 };
        let read = read_limited(body, self.limit, drain);
        match tokio::time::timeout(self.read_timeout, read).await {
            Ok(Ok(body)) => handler(body).await,
            Ok(Err(e @ BodyError::TooLarge { drained, .. })) => {
                let response = error(StatusCode::PAYLOAD_TOO_LARGE, &e.to_string());
                if drained {
                    response
                } else {
                    closing(response, http1)
                }
            }
            Ok(Err(BodyError::Read(source))) => error(
                StatusCode::BAD_REQUEST,
                &format!("reading the request body: {source}"),
            ),
            Err(_) => {
                self.closes.record(Closed::ReadTimeout);
                let message = format!(
                    "the request body did not arrive within {:?}",
                    self.read_timeout
                );
                closing(error(StatusCode::REQUEST_TIMEOUT, &message), http1)
            }
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

/// `response` with `Connection: close` on HTTP/1 (HTTP/2 ends only the stream).
fn closing(mut response: Response<Bytes>, http1: bool) -> Response<Bytes> {
    if http1 {
        response.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
    }
    response
}

/// A JSON error answer: `{"error": message}`.
fn error(status: StatusCode, message: &str) -> Response<Bytes> {
    let body = serde_json::to_vec(&serde_json::json!({ "error": message })).unwrap_or_default();
    json(status, body)
}
