//! Builds the `metav1.Status` bodies the fake answers errors with.

use http::StatusCode;
use serde_json::{Value, json};

use super::kind::Kind;

/// A failed request, answered as a `metav1.Status` with the given HTTP code.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Failure {
    pub(crate) code: StatusCode,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
    pub(crate) details: Option<Value>,
}

impl Failure {
    /// A failure with no details.
    pub(crate) fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// The reason the real server gives for an HTTP code.
    pub(crate) fn reason_for(code: StatusCode) -> &'static str {
        match code.as_u16() {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Expired",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        }
    }

    fn with_details(mut self, kind: &Kind, name: &str) -> Self {
        let mut details = json!({ "name": name, "kind": kind.plural });
        if !kind.group.is_empty() {
            details["group"] = json!(kind.group);
        }
        self.details = Some(details);
        self
    }

    /// 404: the named object does not exist.
    pub(crate) fn not_found(kind: &Kind, name: &str) -> Self {
        let message = format!("{} \"{name}\" not found", kind.qualified_plural());
        Self::new(StatusCode::NOT_FOUND, "NotFound", message).with_details(kind, name)
    }

    /// 404: the URL names no served resource.
    pub(crate) fn no_such_resource() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 409: create of a name that is taken.
    pub(crate) fn already_exists(kind: &Kind, name: &str) -> Self {
        let message = format!("{} \"{name}\" already exists", kind.qualified_plural());
        Self::new(StatusCode::CONFLICT, "AlreadyExists", message).with_details(kind, name)
    }

    /// 409: a resourceVersion or uid precondition failed.
    pub(crate) fn conflict(kind: &Kind, name: &str, why: &str) -> Self {
        let message = format!(
            "Operation cannot be fulfilled on {} \"{name}\": {why}",
            kind.qualified_plural()
        );
        Self::new(StatusCode::CONFLICT, "Conflict", message).with_details(kind, name)
    }

    /// 422: a field of the object is invalid.
    pub(crate) fn invalid(kind: &Kind, name: &str, field: &str, value: &str, why: &str) -> Self {
        let message = format!(
            "{} \"{name}\" is invalid: {field}: Invalid value: \"{value}\": {why}",
            kind.name
        );
        let mut failure = Self::new(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", message)
            .with_details(kind, name);
        if let Some(details) = &mut failure.details {
            details["kind"] = json!(kind.name);
            details["causes"] = json!([{
                "reason": "FieldValueInvalid",
                "message": format!("Invalid value: \"{value}\": {why}"),
                "field": field,
            }]);
        }
        failure
    }

    /// 400: the request itself is malformed.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    /// 410: a watch or continue token refers to history the fake no longer has.
    pub(crate) fn gone(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, "Expired", message)
    }

    /// 405: the verb is not supported on this URL.
    pub(crate) fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// The `metav1.Status` object.
    pub(crate) fn to_json(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code.as_u16(),
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_names_the_resource_like_the_real_server() {
        let kind = Kind::built_in("", "v1", "ConfigMap", "configmaps", true);
        let status = Failure::conflict(&kind, "a", "the object has been modified").to_json();
        assert_eq!(status["code"], 409);
        assert_eq!(status["reason"], "Conflict");
        assert_eq!(
            status["message"],
            "Operation cannot be fulfilled on configmaps \"a\": the object has been modified"
        );
        assert_eq!(status["details"]["kind"], "configmaps");
    }
}
