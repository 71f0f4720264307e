//! Defines a path of the webhook server and the handler of the JSON bodies posted to it.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Response, StatusCode, header};

/// The handler of a route: the request body in, the whole response out.
pub(crate) type Handler = Arc<dyn Fn(Bytes) -> BoxFuture<'static, Response<Bytes>> + Send + Sync>;

/// A path the webhook server answers, with the handler of the JSON bodies posted to it; the
/// admission webhooks are routes, and so is a CRD's conversion webhook.
///
/// The server checks the method (POST), the `Content-Type` (`application/json`) and the body
/// size before the handler runs; the handler answers with a whole response.
#[derive(Clone)]
pub struct Route {
    pub(crate) path: String,
    pub(crate) handler: Handler,
    /// The CRDs whose conversion webhook this route serves.
    pub(crate) converts: Vec<String>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("path", &self.path)
            .field("converts", &self.converts)
            .finish_non_exhaustive()
    }
}

impl Route {
    /// Answers POSTs to `path` (starting with `/`) with `handler`.
    pub fn new<F, Fut>(path: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Bytes) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Bytes>> + Send + 'static,
    {
        Self {
            path: path.into(),
            handler: Arc::new(move |body| Box::pin(handler(body))),
            converts: Vec::new(),
        }
    }

    /// Marks this route as the conversion webhook of the CRD named `crd`
    /// (`widgets.example.com`), once per CRD it converts: with a self-signed certificate, the
    /// manager writes its CA bundle and address into that CRD's
    /// `spec.conversion.webhook.clientConfig`.
    #[must_use]
    pub fn converts(mut self, crd: impl Into<String>) -> Self {
        self.converts.push(crd.into());
        self
    }

    /// The path it answers.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// A response with `status` and the JSON `body`.
pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}
