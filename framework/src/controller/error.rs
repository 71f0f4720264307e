//! Tells a controller's errors apart: what failed, and what the API server said about it.

use std::time::Duration;

use kube::core::Status;

use super::ErrorAction;
use crate::error::as_status;

/// Why a reconcile of one object failed: the reconciler's own error `E`, or a step the
/// controller takes around it. [`Reconciler::error_policy`](super::Reconciler::error_policy)
/// receives it, so a policy can match on the step without downcasting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error<E: std::error::Error + 'static> {
    /// [`Reconciler::reconcile`](super::Reconciler::reconcile) failed.
    #[error("reconcile failed")]
    Reconcile(#[source] E),
    /// [`Cleanup::cleanup`](super::Cleanup::cleanup) failed; the finalizer stays.
    #[error("cleanup failed")]
    Cleanup(#[source] E),
    /// Adding the controller's finalizer before the first reconcile failed.
    #[error("adding the finalizer {finalizer}")]
    AddFinalizer {
        /// The finalizer.
        finalizer: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Removing the controller's finalizer after a successful cleanup failed.
    #[error("removing the finalizer {finalizer}")]
    RemoveFinalizer {
        /// The finalizer.
        finalizer: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The reconcile ran longer than [`Controller::reconcile_timeout`](super::Controller::reconcile_timeout).
    #[error("reconcile timed out after {0:?}")]
    Timeout(Duration),
}

impl<E: std::error::Error + 'static> Error<E> {
    /// The first Kubernetes API error (`kube::Error::Api`, or its `Status`) in this error's
    /// source chain, however deeply the reconciler wrapped it.
    #[must_use]
    pub fn api_status(&self) -> Option<&Status> {
        api_status(self)
    }

    /// The HTTP status code of [`Self::api_status`], e.g. `422` for an invalid object.
    #[must_use]
    pub fn status_code(&self) -> Option<u16> {
        self.api_status().map(|s| s.code)
    }

    /// What the default [`error_policy`](super::Reconciler::error_policy) does: the API server
    /// refusing the request itself (400 Bad Request, 403 Forbidden, 413 Request Entity Too Large,
    /// 422 Invalid) is [`ErrorAction::Terminal`], since sending it again cannot succeed until the
    /// object changes; everything else is [`ErrorAction::Retry`].
    pub fn default_action(&self) -> ErrorAction {
        match self.status_code() {
            Some(code) if is_terminal(code) => ErrorAction::Terminal,
            _ => ErrorAction::Retry,
        }
    }

    /// The step that failed, for logs.
    pub(crate) fn step(&self) -> &'static str {
        match self {
            Self::Reconcile(_) => "reconcile",
            Self::Cleanup(_) => "cleanup",
            Self::AddFinalizer { .. } => "add_finalizer",
            Self::RemoveFinalizer { .. } => "remove_finalizer",
            Self::Timeout(_) => "timeout",
        }
    }
}

/// Codes the default policy does not retry.
fn is_terminal(code: u16) -> bool {
    matches!(code, 400 | 403 | 413 | 422)
}

/// The first Kubernetes API error in `error`'s source chain (itself included).
pub(crate) fn api_status<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Status> {
    let mut next = Some(error);
    while let Some(link) = next {
        if let Some(status) = as_status(link) {
            return Some(status);
        }
        next = crate::error::next_cause(link);
    }
    None
}

/// Whether `error` is a 409 Conflict: the object changed since it was read, so the right move is
/// to read it again, not to report a failure. `AlreadyExists` (also 409) is a real error.
pub(crate) fn is_conflict(error: &(dyn std::error::Error + 'static)) -> bool {
    api_status(error).is_some_and(|s| s.code == 409 && s.reason != "AlreadyExists")
}

/// `text` cut to at most `limit` bytes on a character boundary, marked with `…` when cut.
pub(crate) fn truncate(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let marker = '…';
    let mut end = limit.saturating_sub(marker.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{marker}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum Inner {
        #[error("applying the ConfigMap")]
        Apply(#[source] kube::Error),
        #[error("not an API problem")]
        Plain,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("step two")]
    struct Outer(#[source] Inner);

    fn api(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Box::new(
            Status::failure(&format!("the server says {reason}"), reason).with_code(code),
        ))
    }

    fn reconcile(code: u16, reason: &str) -> Error<kube::Error> {
        Error::Reconcile(api(code, reason))
    }

    #[test]
    fn invalid_bad_request_and_forbidden_are_terminal_by_default() {
        for (code, reason) in [(422, "Invalid"), (400, "BadRequest"), (403, "Forbidden")] {
            let error = reconcile(code, reason);
            assert_eq!(error.status_code(), Some(code));
            assert_eq!(error.default_action(), ErrorAction::Terminal, "{code}");
            assert!(!is_conflict(&error), "{code} is no conflict");
        }
    }

    #[test]
    fn not_found_and_server_errors_are_retried_by_default() {
        for (code, reason) in [(404, "NotFound"), (500, "InternalError")] {
            let error = reconcile(code, reason);
            assert_eq!(error.status_code(), Some(code));
            assert_eq!(error.default_action(), ErrorAction::Retry, "{code}");
        }
    }

    #[test]
    fn a_conflict_is_recognised_but_already_exists_is_not() {
        assert!(is_conflict(&reconcile(409, "Conflict")));
        assert!(!is_conflict(&reconcile(409, "AlreadyExists")));
    }

    #[test]
    fn an_error_without_a_kube_error_has_no_status_and_is_retried() {
        let error: Error<Inner> = Error::Reconcile(Inner::Plain);
        assert_eq!(error.status_code(), None);
        assert_eq!(error.default_action(), ErrorAction::Retry);
        assert!(!is_conflict(&error));
        let timeout: Error<Inner> = Error::Timeout(Duration::from_secs(1));
        assert_eq!(timeout.default_action(), ErrorAction::Retry);
    }

    #[test]
    fn a_kube_error_wrapped_two_levels_deep_is_found() {
        let error = Error::Reconcile(Outer(Inner::Apply(api(422, "Invalid"))));
        assert_eq!(error.status_code(), Some(422));
        assert_eq!(
            error.api_status().map(|s| s.reason.as_str()),
            Some("Invalid")
        );
        assert_eq!(error.default_action(), ErrorAction::Terminal);
        let conflict = Error::Reconcile(Outer(Inner::Apply(api(409, "Conflict"))));
        assert!(is_conflict(&conflict));
    }

    #[test]
    fn a_boxed_kube_error_and_a_finalizer_write_are_classified_too() {
        #[derive(Debug, thiserror::Error)]
        #[error("boxed")]
        struct Boxed(#[source] Box<kube::Error>);
        let boxed: Error<Boxed> = Error::Reconcile(Boxed(Box::new(api(403, "Forbidden"))));
        assert_eq!(boxed.status_code(), Some(403));
        let finalizer: Error<Inner> = Error::AddFinalizer {
            finalizer: "x/y".into(),
            source: api(409, "Conflict"),
        };
        assert!(is_conflict(&finalizer));
    }

    #[test]
    fn its_text_joins_the_chain_with_the_api_servers_answer() {
        let error = Error::Reconcile(Outer(Inner::Apply(api(422, "Invalid"))));
        assert_eq!(
            crate::error::chain(&error),
            "reconcile failed: step two: applying the ConfigMap: 422 Invalid: the server says \
             Invalid"
        );
    }

    #[test]
    fn truncating_keeps_whole_characters_within_the_limit() {
        assert_eq!(truncate("short", 10), "short");
        let long = "é".repeat(600); // 1200 bytes
        let cut = truncate(&long, 1024);
        assert!(cut.len() <= 1024, "{}", cut.len());
        assert!(cut.ends_with('…'));
    }
}
