//! The guard's decisions against a scripted API server that answers `TokenReviews` and
//! `SubjectAccessReviews` and counts them.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};

use super::*;

/// Tokens it knows (token → username) and users who may get `/metrics`.
#[derive(Clone, Default)]
struct ScriptedApi {
    tokens: HashMap<&'static str, &'static str>,
    readers: Vec<&'static str>,
    requests: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
}

impl ScriptedApi {
    fn new() -> Self {
        Self {
            tokens: HashMap::from([("reader-token", "reader"), ("stranger-token", "stranger")]),
            readers: vec!["reader"],
            ..Self::default()
        }
    }

    fn guard(&self) -> Guard {
        Guard::new(Client::new(self.clone(), "default"), "/metrics")
    }

    fn answer(&self, path: &str, review: &Value) -> (StatusCode, Value) {
        match path {
            "/apis/authentication.k8s.io/v1/tokenreviews" => {
                let token = review["spec"]["token"].as_str().unwrap_or_default();
                let status = match self.tokens.get(token) {
                    Some(user) => json!({
                        "authenticated": true,
                        "user": { "username": user, "groups": ["system:authenticated"] },
                    }),
                    None => json!({ "authenticated": false, "error": "invalid bearer token" }),
                };
                (StatusCode::CREATED, with_status(review, status))
            }
            "/apis/authorization.k8s.io/v1/subjectaccessreviews" => {
                let spec = &review["spec"];
                let user = spec["user"].as_str().unwrap_or_default();
                let asks_metrics = spec["nonResourceAttributes"]
                    == json!({ "path": "/metrics", "verb": "get" })
                    && spec["groups"] == json!(["system:authenticated"]);
                let allowed = asks_metrics && self.readers.contains(&user);
                let status = if allowed {
                    json!({ "allowed": true })
                } else {
                    json!({ "allowed": false, "reason": "no RBAC policy matched" })
                };
                (StatusCode::CREATED, with_status(review, status))
            }
            _ => (
                StatusCode::NOT_FOUND,
                json!({ "kind": "Status", "code": 404 }),
            ),
        }
    }
}

fn with_status(review: &Value, status: Value) -> Value {
    let mut answer = review.clone();
    answer["status"] = status;
    answer
}

impl tower_service::Service<Request<kube::client::Body>> for ScriptedApi {
    type Response = Response<kube::client::Body>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<kube::client::Body>) -> Self::Future {
        let api = self.clone();
        Box::pin(async move {
            api.requests.fetch_add(1, Ordering::SeqCst);
            if api.down.load(Ordering::SeqCst) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    "connection refused",
                ));
            }
            let path = request.uri().path().to_owned();
            let body = request
                .into_body()
                .collect()
                .await
                .map_err(std::io::Error::other)?
                .to_bytes();
            let review: Value = serde_json::from_slice(&body).map_err(std::io::Error::other)?;
            let (status, answer) = api.answer(&path, &review);
            let mut response =
                Response::new(kube::client::Body::from(answer.to_string().into_bytes()));
            *response.status_mut() = status;
            Ok(response)
        })
    }
}

fn bearing(value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(value).expect("a valid header value"),
    );
    headers
}

#[tokio::test]
async fn a_reader_is_allowed_a_stranger_forbidden_and_a_bad_token_unauthenticated() {
    let api = ScriptedApi::new();
    let guard = api.guard();
    assert_eq!(
        guard.check(&bearing("Bearer reader-token")).await,
        Decision::Allowed
    );
    assert_eq!(
        guard.check(&bearing("Bearer stranger-token")).await,
        Decision::Forbidden {
            user: "stranger".into(),
            reason: "no RBAC policy matched".into()
        }
    );
    let forged = guard.check(&bearing("Bearer forged")).await;
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);
    assert!(
        forged.message("/metrics").contains("invalid bearer token"),
        "{forged:?}"
    );
}

#[tokio::test]
async fn requests_without_a_bearer_token_are_refused_without_asking_the_api_server() {
    let api = ScriptedApi::new();
    let guard = api.guard();
    for headers in [
        HeaderMap::new(),
        bearing("Basic dXNlcjpwYXNz"),
        bearing("Bearer "),
        bearing("reader-token"),
    ] {
        let decision = guard.check(&headers).await;
        assert_eq!(decision.status(), StatusCode::UNAUTHORIZED, "{headers:?}");
    }
    assert_eq!(api.requests.load(Ordering::SeqCst), 0);
    // The scheme is case-insensitive, as RFC 7235 says.
    assert_eq!(
        guard.check(&bearing("bearer reader-token")).await,
        Decision::Allowed
    );
}

#[tokio::test(start_paused = true)]
async fn decisions_are_remembered_briefly_allowed_ones_longer() {
    let api = ScriptedApi::new();
    let guard = api.guard();
    let asked = || api.requests.load(Ordering::SeqCst);
    assert_eq!(
        guard.check(&bearing("Bearer reader-token")).await,
        Decision::Allowed
    );
    assert_eq!(
        guard
            .check(&bearing("Bearer stranger-token"))
            .await
            .status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(asked(), 4, "a TokenReview and a SubjectAccessReview each");

    tokio::time::advance(REFUSED_FOR.saturating_sub(Duration::from_millis(1))).await;
    guard.check(&bearing("Bearer reader-token")).await;
    guard.check(&bearing("Bearer stranger-token")).await;
    assert_eq!(asked(), 4, "both still remembered");

    tokio::time::advance(Duration::from_millis(1)).await;
    guard.check(&bearing("Bearer stranger-token")).await;
    assert_eq!(asked(), 6, "the refusal expired and was asked again");
    guard.check(&bearing("Bearer reader-token")).await;
    assert_eq!(asked(), 6, "the allowance is still remembered");

    tokio::time::advance(ALLOWED_FOR).await;
    guard.check(&bearing("Bearer reader-token")).await;
    assert_eq!(asked(), 8, "the allowance expired and was asked again");
}

#[tokio::test]
async fn an_api_server_that_cannot_be_asked_gives_503_and_is_asked_again_next_time() {
    let api = ScriptedApi::new();
    let guard = api.guard();
    api.down.store(true, Ordering::SeqCst);
    let decision = guard.check(&bearing("Bearer reader-token")).await;
    assert_eq!(decision.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        decision.message("/metrics").contains("TokenReview"),
        "{decision:?}"
    );
    api.down.store(false, Ordering::SeqCst);
    assert_eq!(
        guard.check(&bearing("Bearer reader-token")).await,
        Decision::Allowed
    );
}
