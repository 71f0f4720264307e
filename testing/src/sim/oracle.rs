//! Checks that no two reconciles of one key run at once, across every replica of a run.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::World;

/// Counts the reconciles running per key and records a violation in its [`World`] when a
/// second one of a key begins before the first ended; cheap to clone, clones share the count
/// (give one to every replica's reconciler).
#[derive(Clone, Debug)]
pub struct Reconciles {
    world: World,
    running: Arc<Mutex<BTreeMap<String, u32>>>,
}

/// A reconcile in progress, from [`Reconciles::enter`]; it ends when dropped.
#[derive(Debug)]
#[must_use = "the reconcile ends when this is dropped"]
pub struct Reconciling {
    running: Arc<Mutex<BTreeMap<String, u32>>>,
    key: String,
}

impl Reconciles {
    pub(crate) fn new(world: World) -> Self {
        Self {
            world,
            running: Arc::default(),
        }
    }

    /// Marks a reconcile of `key` begun (call it first thing in `reconcile`, keep the guard
    /// until it returns).
    pub fn enter(&self, key: impl Into<String>) -> Reconciling {
        let key = key.into();
        let already = {
            let mut running = self.running.lock();
            let count = running.entry(key.clone()).or_default();
            *count += 1;
            *count - 1
        };
        if already > 0 {
            self.world.violation(format!(
                "two reconciles of {key} at once ({already} already running)"
            ));
        }
        Reconciling {
            running: Arc::clone(&self.running),
            key,
        }
    }
}

impl Drop for Reconciling {
    fn drop(&mut self) {
        let mut running = self.running.lock();
        if let Some(count) = running.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                running.remove(&self.key);
            }
        }
    }
}
