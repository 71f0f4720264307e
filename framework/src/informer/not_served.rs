//! Says what a 404 on an informer's list or watch means: the API server does not serve the kind.

use std::time::Duration;

/// How often an informer whose resource is not served lists again: often enough that a CRD
/// installed after the operator started is noticed within moments, seldom enough to cost
/// the server nothing (one 404).
pub(super) const CHECK_EVERY: Duration = Duration::from_secs(2);

/// How to fix a list or watch the API server answered 404 Not Found: the kind's resource is not
/// served, most often a custom resource whose CRD is not installed (yet, or any more). A list of
/// a served kind in a namespace that does not exist is empty, not 404, so no other cause is
/// likely; `None` for any other error.
pub(super) fn hint(error: &kube::Error) -> Option<&'static str> {
    match error {
        kube::Error::Api(status) if status.code == 404 => Some(
            "the API server does not serve this resource; for a custom resource, install its \
             CRD (`OPERATOR crd | kubectl apply --server-side -f -`, or the chart)",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::hint;

    fn api(code: u16, reason: &str) -> kube::Error {
        let mut status =
            Status::failure("the server could not find the requested resource", reason);
        status.code = code;
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn a_404_says_to_install_the_crd_and_other_errors_say_nothing() {
        let line = hint(&api(404, "NotFound")).expect("a 404 has a hint");
        assert!(line.contains("install its CRD"), "{line}");
        assert!(hint(&api(403, "Forbidden")).is_none());
        assert!(hint(&api(500, "InternalError")).is_none());
    }
}
