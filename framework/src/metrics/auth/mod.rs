//! Lets only callers the API server vouches for read `/metrics`, as kubebuilder's secure metrics.
//!
//! Each request's bearer token is checked with a `TokenReview` (authentication.k8s.io/v1), and
//! the user it names with a `SubjectAccessReview` (authorization.k8s.io/v1) for the
//! non-resource URL `/metrics`, verb `get`: the `metrics-reader` ClusterRole grants exactly that.
//! Without a valid token the answer is 401, without the permission 403, and 503 when the API
//! server cannot be asked. Decisions are remembered per token (by its SHA-256) for 10 s when
//! allowed and 2 s when refused, for at most 1024 tokens, so a Prometheus scraping every few
//! seconds costs two API requests per 10 s. The operator's ServiceAccount needs `create` on
//! `tokenreviews` and `subjectaccessreviews`. The manager serves it over HTTPS.

mod cache;
mod decision;
mod guard;

pub(crate) use self::decision::Decision;
pub(crate) use self::guard::Guard;
