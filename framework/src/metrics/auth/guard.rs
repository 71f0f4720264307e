//! Checks a request's bearer token with a `TokenReview` and its user's access with a
//! `SubjectAccessReview`, remembering the decision briefly.

use std::sync::Arc;

use http::{HeaderMap, header};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use parking_lot::Mutex;
use tokio::time::{Duration, Instant};

use super::cache::{Decisions, digest};
use super::decision::Decision;

/// How long an allowed decision is remembered.
const ALLOWED_FOR: Duration = Duration::from_secs(10);
/// How long a refused decision (401, 403) is remembered: a token just granted access waits at
/// most this long.
const REFUSED_FOR: Duration = Duration::from_secs(2);
/// How many tokens' decisions are remembered at most.
const CAPACITY: usize = 1024;

/// Lets a request read one path only if its bearer token is valid (`TokenReview`) and its user may
/// `get` the path (`SubjectAccessReview`, non-resource URL), as controller-runtime's
/// `filters.WithAuthenticationAndAuthorization`. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Guard {
    client: Client,
    path: &'static str,
    decisions: Arc<Mutex<Decisions>>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Guard {
    /// A guard of `path` that asks the API server through `client`.
    pub(crate) fn new(client: Client, path: &'static str) -> Self {
        Self {
            client,
            path,
            decisions: Arc::new(Mutex::new(Decisions::new(
                ALLOWED_FOR,
                REFUSED_FOR,
                CAPACITY,
            ))),
        }
    }

    /// The guarded path.
    pub(crate) fn path(&self) -> &'static str {
        self.path
    }

    /// Whether the request with `headers` may read the path.
    pub(crate) async fn check(&self, headers: &HeaderMap) -> Decision {
        let token = match bearer(headers) {
            Ok(token) => token,
            Err(why) => return Decision::Unauthenticated(why.to_owned()),
        };
        let key = digest(token);
        if let Some(decision) = self.decisions.lock().get(&key, Instant::now()) {
            return decision;
        }
        let decision = match self.authenticate(token).await {
            Ok(user) => self.authorize(user).await,
            Err(refused) => refused,
        };
        match &decision {
            Decision::Allowed => {}
            Decision::Unavailable(why) => {
                tracing::warn!(path = self.path, %why, "cannot check a metrics request");
            }
            refused => tracing::debug!(path = self.path, ?refused, "refused a metrics request"),
        }
        self.decisions
            .lock()
            .insert(key, decision.clone(), Instant::now());
        decision
    }

    /// The user `token` belongs to, or the refusal.
    async fn authenticate(&self, token: &str) -> Result<UserInfo, Decision> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_owned(),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| Decision::Unavailable(format!("creating a TokenReview: {e}")))?;
        let status = reviewed.status.unwrap_or_default();
        match (status.authenticated, status.user) {
            (Some(true), Some(user)) if user.username.is_some() => Ok(user),
            _ => Err(Decision::Unauthenticated(status.error.map_or_else(
                || "the token is not valid".to_owned(),
                |e| format!("the token is not valid: {e}"),
            ))),
        }
    }

    /// Whether `user` may `get` the path.
    async fn authorize(&self, user: UserInfo) -> Decision {
        let username = user.username.clone().unwrap_or_default();
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(self.path.to_owned()),
                    verb: Some("get".to_owned()),
                }),
                resource_attributes: None,
            },
            ..SubjectAccessReview::default()
        };
        let reviewed = match Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
        {
            Ok(reviewed) => reviewed,
            Err(e) => return Decision::Unavailable(format!("creating a SubjectAccessReview: {e}")),
        };
        match reviewed.status {
            Some(status) if status.allowed => Decision::Allowed,
            status => {
                let status = status.unwrap_or_default();
                let reason = [status.reason, status.evaluation_error]
                    .into_iter()
                    .flatten()
                    .filter(|r| !r.is_empty())
                    .collect::<Vec<_>>()
                    .join("; ");
                Decision::Forbidden {
                    user: username,
                    reason,
                }
            }
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header, or why there is none.
fn bearer(headers: &HeaderMap) -> Result<&str, &'static str> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or("no bearer token (send `Authorization: Bearer <token>`)")?;
    let value = value
        .to_str()
        .map_err(|_| "the Authorization header is not ASCII")?;
    let (scheme, token) = value
        .split_once(' ')
        .ok_or("the Authorization header is not `Bearer <token>`")?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err("the Authorization header is not `Bearer <token>`");
    }
    Ok(token)
}

#[cfg(test)]
#[path = "tests/guard.rs"]
mod tests;
