//! Keeps the parts added to a Manager that later additions look up: its shard, its webhooks.
#![cfg_attr(
    not(any(feature = "sharding", feature = "webhooks")),
    allow(dead_code, reason = "only a shard and the webhooks keep parts")
)]

use std::any::{Any, TypeId};
use std::collections::HashMap;

use super::Manager;

/// One value per type, each kept by the module that owns the type.
#[derive(Default)]
pub(crate) struct Parts(HashMap<TypeId, Box<dyn Any + Send>>);

impl Manager {
    /// The part of type `T`, if one was kept.
    pub(crate) fn part<T: Clone + Send + 'static>(&self) -> Option<T> {
        let parts = self.parts.lock();
        let part = parts.0.get(&TypeId::of::<T>())?;
        part.downcast_ref::<T>().cloned()
    }

    /// The part of type `T`, made with `make` and kept if there was none; true when it is new.
    pub(crate) fn part_or_keep<T: Clone + Send + 'static>(
        &self,
        make: impl FnOnce() -> T,
    ) -> (T, bool) {
        let mut parts = self.parts.lock();
        let kept = parts.0.entry(TypeId::of::<T>());
        let new = matches!(kept, std::collections::hash_map::Entry::Vacant(_));
        let part = kept.or_insert_with(|| Box::new(make()));
        let Some(part) = part.downcast_ref::<T>() else {
            unreachable!("invariant: a part is kept under its own type's id");
        };
        (part.clone(), new)
    }
}
