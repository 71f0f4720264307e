//! A handle on a handler added to an informer: how far behind it is, and the key to remove it.

use std::fmt;
use std::sync::Arc;

use kube::Resource;

use super::fan_out::FanOut;
use super::listener::Listener;

/// A handler added to an informer; tells how far behind it is.
pub struct Registration<K> {
    listener: Arc<Listener<K>>,
    fan_out: Arc<FanOut<K>>,
}

impl<K> Registration<K> {
    pub(crate) fn new(listener: Arc<Listener<K>>, fan_out: Arc<FanOut<K>>) -> Self {
        Self { listener, fan_out }
    }

    pub(crate) fn listener(&self) -> &Arc<Listener<K>> {
        &self.listener
    }
}

impl<K: Resource> Registration<K> {
    /// How many objects have a change this handler has not been handed yet (at most the number
    /// of cached objects plus those deleted since, however slow the handler is).
    #[must_use]
    pub fn pending(&self) -> usize {
        self.fan_out.pending(&self.listener)
    }
}

impl<K> fmt::Debug for Registration<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("resync", &self.listener.resync_period())
            .finish_non_exhaustive()
    }
}
