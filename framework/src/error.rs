//! Carries any error out of a reconcile without a hand-written error type.

use std::error::Error as StdError;
use std::fmt;

/// Any error, boxed: a reconciler's `type Error = kubeward::Error` lets `?` work on kube,
/// serde, I/O and kubeward errors, and on messages (`Err("no replicas".into())`).
///
/// Displays as the error it holds, whose sources are its sources. For an error type of your
/// own, use [`Error::new`] or add `impl From<MyError> for kubeward::Error`.
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
        fmt::Display::fmt(&self.0, f)
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.0.source()
    }
}

/// `error` and its sources, joined by `: `: a log line's or a user's whole story, where each
/// error's own message leaves its cause to its source.
pub(crate) fn chain(error: &dyn StdError) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
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
        next = error.source();
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
    fn it_displays_as_the_error_it_holds() {
        let error = reconcile(2).expect_err("the step fails");
        assert_eq!(error.to_string(), "applying ConfigMap a/b");
        assert!(error.source().is_some());
        assert!(error.downcast_ref::<crate::reconcile::Error>().is_some());
    }

    #[test]
    fn it_is_a_reconciler_error() {
        fn assert_reconciler_error<E: StdError + Send + Sync + 'static>() {}
        assert_reconciler_error::<Error>();
    }
}
