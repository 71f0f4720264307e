//! The changes an informer makes to objects before caching them, fixed when it starts.

use std::sync::{Arc, OnceLock};

use kube::Resource;
use parking_lot::Mutex;

use super::{Error, Result};

/// Changes an object before it is cached (e.g. drops fields nobody reads).
type Transform<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// What the reflector does to each object before caching it: strip `managedFields` (if
/// configured), then apply the transforms in the order they were added.
///
/// Transforms are added before the informer starts; [`freeze`](Self::freeze) fixes them, and an
/// add after that fails, so no object is cached by one set of transforms and read back (from a
/// compact store) by another.
pub(crate) struct Transforms<K> {
    strip_managed_fields: bool,
    adding: Mutex<Vec<Transform<K>>>,
    frozen: OnceLock<Vec<Transform<K>>>,
}

impl<K: Resource> Transforms<K> {
    pub(crate) fn new(strip_managed_fields: bool) -> Self {
        Self {
            strip_managed_fields,
            adding: Mutex::new(Vec::new()),
            frozen: OnceLock::new(),
        }
    }

    /// Adds a transform.
    ///
    /// # Errors
    /// [`Error::Started`] once the transforms are frozen.
    pub(crate) fn add(&self, transform: impl Fn(&mut K) + Send + Sync + 'static) -> Result<()> {
        let mut adding = self.adding.lock();
        // Checked under the lock `freeze` takes, so an add either lands before the freeze or
        // fails: none is lost.
        if self.frozen.get().is_some() {
            return Err(Error::Started);
        }
        adding.push(Arc::new(transform));
        Ok(())
    }

    /// Fixes the transforms; later adds fail. Freezing twice keeps the first.
    pub(crate) fn freeze(&self) {
        let mut adding = self.adding.lock();
        let _ = self.frozen.set(std::mem::take(&mut *adding));
    }

    /// Applies the stripping and the frozen transforms to `obj` (none before the freeze).
    pub(crate) fn apply(&self, obj: &mut K) {
        if self.strip_managed_fields {
            obj.meta_mut().managed_fields = None;
        }
        for transform in self.frozen.get().into_iter().flatten() {
            transform(obj);
        }
    }
}
