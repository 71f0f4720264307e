//! Says what a write of the reconcile kit did: created the object, updated it, or nothing.

use std::ops::Deref;
use std::sync::Arc;

/// What a write did, like controller-runtime's `OperationResult`: so that a reconcile can
/// record "Created" or "Scaled" without reading the cache first.
#[doc(alias = "OperationResult")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// The object did not exist; the write made it.
    Created,
    /// The object existed and the write changed it.
    Updated,
    /// Nothing changed: no request was sent, or the API server kept the object as it was.
    Unchanged,
}

/// An object as a write of the kit ([`apply`](crate::controller::Context::apply),
/// [`patch_status`](crate::controller::Context::patch_status)) left it, and what the write did.
/// Reads as the object.
#[derive(Debug)]
pub struct Written<T> {
    object: Arc<T>,
    operation: Operation,
    previous: Option<Arc<T>>,
}

impl<T> Written<T> {
    pub(crate) fn new(object: Arc<T>, operation: Operation) -> Self {
        Self {
            object,
            operation,
            previous: None,
        }
    }

    /// With `previous`, the object as it was before the write.
    pub(crate) fn with_previous(mut self, previous: Option<Arc<T>>) -> Self {
        self.previous = previous;
        self
    }

    /// What the write did.
    #[must_use]
    pub fn operation(&self) -> Operation {
        self.operation
    }

    /// Whether the write created or changed the object.
    #[must_use]
    pub fn changed(&self) -> bool {
        self.operation != Operation::Unchanged
    }

    /// The object as it was before an [`Operation::Updated`] write, e.g. to say "scaled from 2
    /// to 3 replicas" without a read: the controller's cached copy for
    /// [`apply`](crate::controller::Context::apply) (`None` for a kind the controller does not
    /// cache), the object given for [`patch_status`](crate::controller::Context::patch_status).
    /// `None` after [`Operation::Created`] and [`Operation::Unchanged`].
    #[must_use]
    pub fn previous(&self) -> Option<&Arc<T>> {
        self.previous.as_ref()
    }

    /// The object as the write left it (the API server's answer, or the cache's or caller's copy
    /// when nothing was sent).
    #[must_use]
    pub fn object(&self) -> &Arc<T> {
        &self.object
    }

    /// The object as the write left it.
    #[must_use]
    pub fn into_object(self) -> Arc<T> {
        self.object
    }
}

impl<T> Deref for Written<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.object
    }
}
