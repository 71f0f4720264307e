//! Carries any error out of a reconcile without a hand-written error type.

use std::error::Error as StdError;
use std::fmt;

/// Any error, boxed: a reconciler's `type Error = kubeward::Error` lets `?` work on kube,
/// serde, I/O and kubeward errors, and on messages (`Err("no replicas".into())`).
///
/// Displays as the error it holds followed by its causes, `: `-joined, with the API server's
/// code, reason and message for an API error (`applying Deployment shop/web: 422 Invalid:
/// Deployment.apps "web" is invalid: spec.replicas: ...`), so that `{error}` in a log or an
/// Event says what went wrong without a match on `kube::Error::Api`, in the words the
/// framework's own logs use for the same failure. Since its text holds the causes, it reports no
/// `source()` of its own (a chain printer such as anyhow's would repeat them); [`Error::kube`]
/// and [`Error::downcast_ref`] reach inside. For an error type of your own, use [`Error::new`]
/// or add `impl From<MyError> for kubeward::Error`.
///
/// [`Error::kube`] finds the API server's answer in the chain, e.g. to tell a 409 Conflict
/// (retry now) from a 422 Invalid (no retry will help).
pub struct Error(Box<dyn StdError + Send + Sync + 'static>);

impl Error {
    /// Wraps `error`.
    pub fn new(error: impl StdError + Send + Sync + 'static) -> Self {
        Self(Box::new(error))
    }

    /// The [`kube::Error`] this error is or was caused by: the first in its source chain.
    #[must_use]
    pub fn kube(&self) -> Option<&kube::Error> {
        kube_cause(self.0.as_ref())
    }

    /// The error held, if it is an `E`.
    #[must_use]
    pub fn downcast_ref<E: StdError + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref()
    }

    /// The error held.
    #[must_use]
    pub fn into_inner(self) -> Box<dyn StdError + Send + Sync + 'static> {
        self.0
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&chain(self.0.as_ref()))
    }
}

/// Its causes are in its text (see [`Error`]); `next_cause` reaches inside for the crate.
impl StdError for Error {}

/// The cause after `link` in a chain: the error an [`Error`] holds, else `link`'s source.
pub(crate) fn next_cause<'a>(
    link: &'a (dyn StdError + 'static),
) -> Option<&'a (dyn StdError + 'static)> {
    match link.downcast_ref::<Error>() {
        Some(any) => Some(any.0.as_ref()),
        None => link.source(),
    }
}

/// `link` as an API error: a `kube::Error::Api`, a boxed one, or a bare `Status`.
pub(crate) fn as_status<'a>(link: &'a (dyn StdError + 'static)) -> Option<&'a kube::core::Status> {
    let kube_error = link
        .downcast_ref::<kube::Error>()
        .or_else(|| link.downcast_ref::<Box<kube::Error>>().map(AsRef::as_ref));
    match kube_error {
        Some(kube::Error::Api(status)) => Some(status),
        Some(_) => None,
        None => link.downcast_ref::<kube::core::Status>(),
    }
}

/// `error` and its causes on one line, `: `-joined: how every log line and Event of the crate
/// renders an error, so one failure reads the same from a reconcile, a reflector or the elector.
///
/// An API error contributes the API server's answer as `kubectl` shows it, its code, reason and
/// message (`403 Forbidden: leases is forbidden: ...`), in place of kube's dump of the whole
/// `Status`, and ends the chain (its source is the same `Status` again). A cause whose text is
/// already said is left out, and line breaks become spaces.
pub(crate) fn chain(error: &(dyn StdError + 'static)) -> String {
    let mut text = String::new();
    let mut next = Some(error);
    while let Some(link) = next {
        if link.is::<Error>() {
            next = next_cause(link);
            continue;
        }
        let status = as_status(link);
        let part = match status {
            Some(status) => answer(status, &text),
            None => link.to_string(),
        };
        if !part.is_empty() && !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        // The API server's answer is the end of the story; kube's `Status` source repeats it.
        next = if status.is_some() {
            None
        } else {
            next_cause(link)
        };
    }
    text.replace(['\r', '\n'], " ")
}

/// The API server's answer `status`: its code and reason, then its message unless that is
/// empty, the reason again, or already in `said`.
fn answer(status: &kube::core::Status, said: &str) -> String {
    let mut head = String::new();
    if status.code != 0 {
        head = status.code.to_string();
    }
    if !status.reason.is_empty() {
        if !head.is_empty() {
            head.push(' ');
        }
        head.push_str(&status.reason);
    }
    let message = status.message.as_str();
    if message.is_empty() || message == status.reason || said.contains(message) {
        head
    } else if head.is_empty() {
        message.to_owned()
    } else {
        format!("{head}: {message}")
    }
}

/// The first [`kube::Error`] in the source chain of `error`, itself included (also when boxed,
/// as the kit's errors hold it): for the worker to classify any reconciler's error.
pub(crate) fn kube_cause<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a kube::Error> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(kube) = error.downcast_ref::<kube::Error>() {
            return Some(kube);
        }
        if let Some(boxed) = error.downcast_ref::<Box<kube::Error>>() {
            return Some(boxed);
        }
        next = next_cause(error);
    }
    None
}

/// `From` for the errors a reconcile meets: `Error` itself is a `std::error::Error` (the
/// reconciler trait needs that), so a blanket `From<E: Error>` would overlap with `From<Self>`.
macro_rules! from_errors {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for Error {
            fn from(error: $error) -> Self {
                Self::new(error)
            }
        }
    )*};
}

from_errors!(
    kube::Error,
    kube::core::Status,
    serde_json::Error,
    serde_norway::Error,
    std::io::Error,
    std::fmt::Error,
    crate::reconcile::Error,
    crate::cache::Error,
    crate::informer::Error,
);

impl From<Box<dyn StdError + Send + Sync + 'static>> for Error {
    fn from(error: Box<dyn StdError + Send + Sync + 'static>) -> Self {
        Self(error)
    }
}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Self(message.into())
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Self(message.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conflict() -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("the object has been modified", "Conflict")
                .with_code(409)
                .boxed(),
        )
    }

    fn reconcile(step: u8) -> Result<(), Error> {
        match step {
            0 => Err(conflict())?,
            1 => {
                serde_json::from_str::<u8>("not json")?;
                Ok(())
            }
            2 => Err(crate::reconcile::Error::Api {
                action: "applying ConfigMap a/b".into(),
                source: Box::new(conflict()),
            })?,
            _ => Err("no replicas".into()),
        }
    }

    #[test]
    fn question_mark_works_on_kube_serde_kit_and_message_errors() {
        for step in 0..4 {
            assert!(reconcile(step).is_err());
        }
    }

    #[test]
    fn its_text_says_what_was_done_and_the_api_servers_answer_once() {
        let invalid = kube::Error::Api(
            kube::core::Status::failure(
                "Deployment.apps \"web\" is invalid: spec.replicas: must be >= 0",
                "Invalid",
            )
            .with_code(422)
            .boxed(),
        );
        let error = Error::from(crate::reconcile::Error::Api {
            action: "applying Deployment shop/web".into(),
            source: Box::new(invalid),
        });
        assert_eq!(
            error.to_string(),
            "applying Deployment shop/web: 422 Invalid: Deployment.apps \"web\" is invalid: \
             spec.replicas: must be >= 0"
        );
        assert!(
            error.source().is_none(),
            "the causes are in the text, not repeated"
        );
        assert_eq!(
            error.kube().and_then(|e| match e {
                kube::Error::Api(s) => Some(s.code),
                _ => None,
            }),
            Some(422)
        );
        // Wrapped again, it reads the same.
        assert_eq!(
            Error::new(error).to_string().matches("is invalid").count(),
            1
        );
    }

    #[test]
    fn the_kube_error_is_found_directly_or_through_the_source_chain() {
        for step in [0, 2] {
            let error = reconcile(step).expect_err("the step fails");
            assert!(
                matches!(error.kube(), Some(kube::Error::Api(s)) if s.code == 409),
                "step {step}: {error:?}"
            );
        }
        let not_kube = reconcile(1).expect_err("the step fails");
        assert!(not_kube.kube().is_none());
    }

    #[test]
    fn it_displays_as_the_error_it_holds_with_its_causes() {
        let error = reconcile(2).expect_err("the step fails");
        assert_eq!(
            error.to_string(),
            "applying ConfigMap a/b: 409 Conflict: the object has been modified"
        );
        assert!(error.downcast_ref::<crate::reconcile::Error>().is_some());
    }

    #[test]
    fn a_cause_the_text_already_says_is_not_said_twice() {
        #[derive(Debug, thiserror::Error)]
        #[error("reading the config: {0}")]
        struct Quoting(#[source] std::io::Error);
        #[derive(Debug, thiserror::Error)]
        #[error("starting")]
        struct Outer(#[source] Quoting);
        let io = std::io::Error::other("permission denied");
        assert_eq!(
            chain(&Outer(Quoting(io))),
            "starting: reading the config: permission denied"
        );
    }

    #[test]
    fn an_api_answer_a_parent_already_quotes_adds_only_its_code_and_reason() {
        #[derive(Debug, thiserror::Error)]
        #[error("writing the lease: {0}")]
        struct Quoting(String, #[source] kube::Error);
        let forbidden = forbidden();
        let Some(status) = as_status(&forbidden).cloned() else {
            panic!("a 403 is an API error")
        };
        assert_eq!(
            chain(&Quoting(status.message, forbidden)),
            "writing the lease: leases is forbidden: User \"x\" cannot get leases: 403 Forbidden"
        );
    }

    #[test]
    fn an_api_answer_says_its_code_reason_and_message_once_on_one_line() {
        assert_eq!(
            chain(&forbidden()),
            "403 Forbidden: leases is forbidden: User \"x\" cannot get leases"
        );
        let bare = |message: &str, reason: &str, code: u16| {
            chain(&kube::Error::Api(
                kube::core::Status::failure(message, reason)
                    .with_code(code)
                    .boxed(),
            ))
        };
        assert_eq!(bare("", "NotFound", 404), "404 NotFound");
        assert_eq!(bare("Expired", "Expired", 410), "410 Expired");
        assert_eq!(bare("no such\nthing", "", 404), "404: no such thing");
        assert_eq!(bare("gone", "", 0), "gone");
    }

    fn forbidden() -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(
                "leases is forbidden: User \"x\" cannot get leases",
                "Forbidden",
            )
            .with_code(403)
            .boxed(),
        )
    }

    #[test]
    fn it_is_a_reconciler_error() {
        fn assert_reconciler_error<E: StdError + Send + Sync + 'static>() {}
        assert_reconciler_error::<Error>();
    }
}
