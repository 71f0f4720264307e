//! Says what a guarded endpoint answers a caller: go ahead, 401, 403 or 503.

use http::StatusCode;

/// Whether a caller may read a guarded path, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The token is valid and its user may `get` the path.
    Allowed,
    /// No bearer token, or one the API server does not accept: 401.
    Unauthenticated(String),
    /// A valid token whose user may not `get` the path: 403.
    Forbidden {
        /// The user the token belongs to.
        user: String,
        /// Why, as the authorizer said (may be empty).
        reason: String,
    },
    /// The API server could not be asked (down, or the operator may not ask): 503. Never
    /// remembered, so the next request asks again.
    Unavailable(String),
}

impl Decision {
    /// The HTTP status of the answer to a refused request; 200 when allowed.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::Allowed => StatusCode::OK,
            Self::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The one-line text body of the answer to a refused request.
    pub(crate) fn message(&self, path: &str) -> String {
        match self {
            Self::Allowed => "ok\n".to_owned(),
            Self::Unauthenticated(why) => format!("unauthorized: {why}\n"),
            Self::Forbidden { user, reason } if reason.is_empty() => {
                format!("forbidden: user \"{user}\" may not get {path}\n")
            }
            Self::Forbidden { user, reason } => {
                format!("forbidden: user \"{user}\" may not get {path}: {reason}\n")
            }
            Self::Unavailable(why) => {
                format!("cannot check access to {path} with the API server: {why}\n")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_has_its_status_and_names_what_is_missing() {
        let forbidden = Decision::Forbidden {
            user: "system:serviceaccount:ns:sa".into(),
            reason: String::new(),
        };
        assert_eq!(forbidden.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            forbidden.message("/metrics"),
            "forbidden: user \"system:serviceaccount:ns:sa\" may not get /metrics\n"
        );
        let missing = Decision::Unauthenticated("no bearer token".into());
        assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            missing.message("/metrics"),
            "unauthorized: no bearer token\n"
        );
        let down = Decision::Unavailable("TokenReview failed: connection refused".into());
        assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(down.message("/metrics").contains("connection refused"));
    }
}
