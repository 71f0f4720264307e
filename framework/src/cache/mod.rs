//! Caches Kubernetes objects in memory, keyed by namespace/name, with named indexes.
//!
//! Inside, dependencies point one way: `store` (the [`Store`] and its [`Writer`]) uses `fence`
//! (what a read waits for the store to have seen), `resource_version`, `index`,
//! `slot` and, for a compact store, `compact` (the codec and its `hot` set of decoded objects),
//! all of which know nothing of the store; every map keyed by [`ObjectKey`] uses the hash the key
//! keeps (`key`).

mod change;
mod compact;
mod error;
mod fence;
mod hot;
mod index;
mod key;
mod resource_version;
mod slot;
mod store;

#[cfg(test)]
mod tests;

pub use change::{Change, Deleted};
pub(crate) use compact::Decode;
pub use error::{Error, Result};
pub(crate) use fence::{Fence, Waited};
pub use index::{IndexFn, NAMESPACE_INDEX};
pub use key::ObjectKey;
pub(crate) use resource_version::NewestPerNamespace;
#[cfg(any(test, feature = "testing"))]
pub(crate) use store::compact_store;
pub(crate) use store::compact_store_with;
pub use store::{Relist, Store, Writer, store};
