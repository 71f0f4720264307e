//! Turns "not found" into `None`, for deletes and reads of objects that may be gone.

use super::Error;

/// Treats a 404 Not Found answer as `Ok(None)`, like controller-runtime's `client.IgnoreNotFound`.
///
/// ```no_run
/// # #[allow(dead_code)]
/// # async fn demo(configmaps: kube::Api<k8s_openapi::api::core::v1::ConfigMap>) -> Result<(), kube::Error> {
/// use kubeward::reconcile::IgnoreNotFound as _;
///
/// configmaps.delete("stale", &Default::default()).await.ignore_not_found()?;
/// # Ok(()) }
/// ```
pub trait IgnoreNotFound<T, E> {
    /// `Ok(Some(value))` on success, `Ok(None)` for a 404, the error otherwise.
    ///
    /// # Errors
    /// Any error but a 404.
    fn ignore_not_found(self) -> Result<Option<T>, E>;
}

impl<T> IgnoreNotFound<T, kube::Error> for Result<T, kube::Error> {
    fn ignore_not_found(self) -> Result<Option<T>, kube::Error> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(error) => Err(error),
        }
    }
}

impl<T> IgnoreNotFound<T, Error> for Result<T, Error> {
    fn ignore_not_found(self) -> Result<Option<T>, Error> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(code: u16) -> kube::Error {
        kube::Error::Api(kube::core::Status::failure("", "").with_code(code).boxed())
    }

    #[test]
    fn only_a_404_becomes_none() {
        assert!(matches!(
            Ok::<u8, kube::Error>(1).ignore_not_found(),
            Ok(Some(1))
        ));
        assert!(matches!(
            Err::<u8, _>(answer(404)).ignore_not_found(),
            Ok(None)
        ));
        assert!(Err::<u8, _>(answer(403)).ignore_not_found().is_err());
        let kit = Error::Api {
            action: "deleting".into(),
            source: Box::new(answer(404)),
        };
        assert!(matches!(Err::<u8, _>(kit).ignore_not_found(), Ok(None)));
    }
}
